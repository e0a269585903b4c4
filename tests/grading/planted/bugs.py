"""Planted learner bugs: small, realistic mistakes in one exercise each, as edits of ``solutions/<file>``.

Each entry is a :class:`Bug`: the exercise file, the exercise whose points it
must cost, the exact text of the solution to replace (it must occur exactly
once, so a spec goes stale loudly when the solutions change), the buggy
replacement, and what the mistake is. ``tests/test_grading_planted.py`` builds
each buggy file and grades that one exercise.
"""

from __future__ import annotations

from typing import NamedTuple


class Bug(NamedTuple):
    id: str
    file: str
    exercise: str
    original: str
    replacement: str
    description: str


_RECURSIVE_TOPOLOGICAL_ORDER = '''    order: list[Value] = []
    visited: set[Value] = set()

    def visit(node: Value) -> None:
        if node not in visited:
            visited.add(node)
            for child in node._children:
                visit(child)
            order.append(node)

    visit(root)
    return order
'''

_ITERATIVE_TOPOLOGICAL_ORDER = '''    order: list[Value] = []
    visited: set[Value] = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        for child in node._children:
            if child not in visited:
                stack.append((child, False))
    return order
'''

BUGS: list[Bug] = [
    # ------------------------------------------------------------------ 01 scalar autograd
    Bug("mul_local_grads_swapped", "01_scalar_autograd.py", "1.1",
        '(self, other), (other.data, self.data), "*")', '(self, other), (self.data, other.data), "*")',
        "d(a*b)/da given as a instead of b (local derivatives swapped)"),
    Bug("pow_derivative_n_a_n", "01_scalar_autograd.py", "1.2",
        "(n * a ** (n - 1.0),)", "(n * a ** n,)",
        "d(a**n)/da written n * a**n instead of n * a**(n-1)"),
    Bug("pow_value_exponent_missing_log", "01_scalar_autograd.py", "1.2",
        "out * math.log(a)), \"**\")", "out), \"**\")",
        "d(a**b)/db with a Value exponent forgets the factor log(a)"),
    Bug("tanh_derivative_1_minus_t", "01_scalar_autograd.py", "1.3",
        "(1.0 - t * t,)", "(1.0 - t,)",
        "tanh derivative 1 - t instead of 1 - t**2"),
    Bug("topological_order_recursive", "01_scalar_autograd.py", "1.4",
        _ITERATIVE_TOPOLOGICAL_ORDER, _RECURSIVE_TOPOLOGICAL_ORDER,
        "recursive depth-first search: a long chain hits the recursion limit"),
    Bug("topological_order_lists_reused_node_twice", "01_scalar_autograd.py", "1.4",
        "        if node in visited:\n            continue\n        visited.add(node)\n        stack.append((node, True))\n        for child in node._children:",
        "        visited.add(node)\n        stack.append((node, True))\n        for child in node._children:",
        "a node pushed twice before it is visited (x * x) is listed twice"),
    Bug("backward_assigns_instead_of_accumulating", "01_scalar_autograd.py", "1.5",
        "child.grad += local * g", "child.grad = local * g",
        "a node used twice keeps only the last gradient (= instead of +=)"),
    Bug("backward_keeps_stale_nonleaf_grads", "01_scalar_autograd.py", "1.5",
        "        for node in order:\n            if node._children:\n                node.grad = 0.0\n", "",
        "intermediate nodes are not reset, so a second backward adds to stale gradients"),
    Bug("backward_visits_leaves_first", "01_scalar_autograd.py", "1.5",
        "for node in reversed(order):", "for node in order:",
        "the chain rule is applied from the leaves towards the output"),
    # ------------------------------------------------------------------ 02 neural nets from scalars
    Bug("neuron_forgets_bias", "02_neural_nets_from_scalars.py", "2.1",
        "z = dot(self.w, x) + self.b", "z = dot(self.w, x)",
        "the neuron's bias is never added"),
    Bug("neuron_linear_ignored", "02_neural_nets_from_scalars.py", "2.1",
        '        if self.activation == "linear":\n            return z\n        return getattr(z, self.activation)()',
        "        return z.relu()",
        "every neuron applies relu, whatever its activation"),
    Bug("layer_parameters_nested", "02_neural_nets_from_scalars.py", "2.2",
        "return [p for n in self.neurons for p in n.parameters()]", "return [n.parameters() for n in self.neurons]",
        "Layer.parameters() returns a list of lists instead of one flat list"),
    Bug("mlp_parameters_first_layer_only", "02_neural_nets_from_scalars.py", "2.2",
        "return [p for layer in self.layers for p in layer.parameters()]", "return self.layers[0].parameters()",
        "MLP.parameters() returns only the first layer's parameters"),
    Bug("hinge_without_max", "02_neural_nets_from_scalars.py", "2.3",
        "(1.0 - y * s).relu()", "(1.0 - y * s)",
        "hinge loss without the max(0, .): confident right answers give negative loss"),
    Bug("hinge_sum_instead_of_mean", "02_neural_nets_from_scalars.py", "2.3",
        "return vsum(losses) * (1.0 / len(losses))", "return vsum(losses)",
        "hinge loss summed over the batch instead of averaged"),
    Bug("sgd_step_ascends", "02_neural_nets_from_scalars.py", "2.4",
        "p.data -= lr * p.grad", "p.data += lr * p.grad",
        "gradient descent step with the wrong sign"),
    # ------------------------------------------------------------------ 03 tensors
    Bug("strides_column_major", "03_tensors.py", "3.1",
        "    return tuple(reversed(strides))\n", "    return tuple(strides)\n",
        "strides come out column-major (first dimension has stride 1)"),
    Bug("strides_shifted_by_one", "03_tensors.py", "3.1",
        "        strides.append(step)\n        step *= size\n", "        step *= size\n        strides.append(step)\n",
        "each stride takes the product including its own size (off by one dimension)"),
    Bug("index_ignores_offset", "03_tensors.py", "3.1",
        "    position = offset\n", "    position = 0\n",
        "the storage offset is ignored (a slice reads from the start of storage)"),
    Bug("index_strides_reversed", "03_tensors.py", "3.1",
        "for i, stride in zip(index, strides):", "for i, stride in zip(index, reversed(strides)):",
        "strides paired with the index in the wrong order"),
    Bug("broadcast_aligns_left", "03_tensors.py", "3.2",
        "(1,) * (ndim - len(s)) + tuple(s)", "tuple(s) + (1,) * (ndim - len(s))",
        "shapes aligned on the left (missing dimensions appended, not prepended)"),
    Bug("broadcast_equal_sizes_clash", "03_tensors.py", "3.2",
        "if shape[dim] == 1 or shape[dim] == size:", "if shape[dim] == 1:",
        "two equal sizes in a column are taken for a mismatch"),
    Bug("permute_keeps_strides", "03_tensors.py", "3.3",
        "tuple(strides[d] for d in dims)", "tuple(strides)",
        "permute reorders the shape but not the strides (swapped strides)"),
    Bug("permute_negative_dims_rejected", "03_tensors.py", "3.3",
        "dims = tuple(d % ndim if -ndim <= d < ndim else d for d in dims)", "dims = tuple(dims)",
        "negative dims are not counted from the end"),
    Bug("expand_grown_dim_keeps_stride", "03_tensors.py", "3.3",
        "            new_strides.append(0)\n", "            new_strides.append(stride)\n",
        "a size-1 dimension that grows keeps its stride instead of 0 (stride 0 mishandled)"),
    Bug("expand_new_dims_stride_one", "03_tensors.py", "3.3",
        "    new_strides = [0] * extra\n", "    new_strides = [1] * extra\n",
        "new leading dimensions of expand step through memory instead of repeating"),
    Bug("view_never_copies", "03_tensors.py", "3.4",
        "        if run_size % size:\n            return None  # this dimension would have to step across a jump in memory\n", "",
        "view never reports that a copy is needed"),
    Bug("view_merges_any_neighbours", "03_tensors.py", "3.4",
        "if runs and runs[-1][1] == size * stride:", "if runs:",
        "neighbouring dimensions are merged without checking that memory continues evenly"),
    Bug("view_stride_of_whole_run", "03_tensors.py", "3.4",
        "new_strides.append(inner * run_stride)", "new_strides.append(run_size * run_stride)",
        "a new dimension's stride counts the whole run instead of what lies inside it (off by one dimension)"),
    Bug("map_writes_out_contiguously", "03_tensors.py", "3.5",
        "out[index_to_position(out_index, out_layout.strides, out_layout.offset)] = fn(value)", "out[step] = fn(value)",
        "strided_map ignores the output layout and writes row-major from position 0"),
    Bug("map_forgets_source_offset", "03_tensors.py", "3.5",
        "source[index_to_position(source_index, source_layout.strides, source_layout.offset)]",
        "source[index_to_position(source_index, source_layout.strides)]",
        "strided_map forgets the source's storage offset"),
    Bug("map_forgets_out_offset", "03_tensors.py", "3.5",
        "out[index_to_position(out_index, out_layout.strides, out_layout.offset)]",
        "out[index_to_position(out_index, out_layout.strides)]",
        "strided_map writes from the start of out, ignoring the output's offset"),
    Bug("map_does_not_broadcast", "03_tensors.py", "3.5",
        "source_index = broadcast_index(out_index, out_layout.shape, source_layout.shape)", "source_index = out_index",
        "strided_map reads the source at the output index without broadcasting it"),
    # ------------------------------------------------------------------ 04 tensor autograd
    Bug("unbroadcast_without_keepdims", "04_tensor_autograd.py", "4.1",
        "return grad.sum(axis=axes, keepdims=True).reshape(shape)", "return grad.sum(axis=axes)",
        "unbroadcast drops the stretched size-1 dimensions instead of keeping them"),
    Bug("unbroadcast_wrong_axes", "04_tensor_autograd.py", "4.1",
        "extra + i for i, size in enumerate(shape)", "i for i, size in enumerate(shape)",
        "stretched dimensions counted from the left of grad, not after the prepended ones"),
    Bug("matmul_backward_without_transpose", "04_tensor_autograd.py", "4.2",
        "ga = product(grad, b.T) if need_a else None", "ga = product(grad, b) if need_a else None",
        "grad_a = grad @ b instead of grad @ b.T for matrices"),
    Bug("matmul_backward_batched_without_transpose", "04_tensor_autograd.py", "4.2",
        "product(a2.swapaxes(-1, -2), grad)", "product(a2.swapaxes(0, 1), grad)",
        "batched grad_b transposes the first two dimensions instead of the last two"),
    Bug("mean_backward_as_sum", "04_tensor_autograd.py", "4.3",
        "    grad = grad / n\n", "",
        "mean backward forgets to divide by the number of averaged elements"),
    Bug("log_softmax_backward_uses_log_probs", "04_tensor_autograd.py", "4.4",
        "grad - np.exp(output) * grad.sum", "grad - output * grad.sum",
        "log_softmax backward multiplies by log-probabilities instead of probabilities"),
    Bug("log_softmax_backward_last_axis", "04_tensor_autograd.py", "4.4",
        "grad.sum(axis=dim, keepdims=True)", "grad.sum(axis=-1, keepdims=True)",
        "log_softmax backward sums over the last dimension whatever dim is"),
    Bug("topological_order_lists_shared_node_twice", "04_tensor_autograd.py", "4.5",
        "        if node in visited:\n            continue\n        visited.add(node)\n        stack.append((node, True))\n        for parent in node._parents:",
        "        visited.add(node)\n        stack.append((node, True))\n        for parent in node._parents:",
        "a node reached twice before it is visited is listed twice"),
    # ------------------------------------------------------------------ 05 module, cross-entropy, optimizers, linear
    Bug("module_parameters_listed_twice", "05_module.py", "5.1",
        "if value is None or (remove_duplicate and id(value) in seen):", "if value is None:",
        "a parameter shared by two layers is listed (and stepped by the optimizer) twice"),
    Bug("module_children_parameters_missing", "05_module.py", "5.1",
        "modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]",
        "modules = [(prefix, self)]",
        "named_parameters lists only the module's own parameters, not its children's"),
    Bug("module_names_without_dotted_prefix", "05_module.py", "5.1",
        'yield (f"{module_prefix}.{name}" if module_prefix else name), value', "yield name, value",
        "parameter names lack the path of their module (weight instead of fc1.weight)"),
    Bug("module_reassignment_keeps_the_old_entry", "05_module.py", "5.1",
        "            self._forget(name)\n            self._parameters[name] = value",
        "            self._parameters[name] = value",
        "a name assigned a Parameter keeps what it held before (a plain attribute shadows it, a child stays registered)"),
    Bug("module_children_stored_as_plain_attributes", "05_module.py", "5.1",
        "            self._modules[name] = value", "            object.__setattr__(self, name, value)",
        "a sub-module becomes an ordinary attribute: its parameters are invisible"),
    Bug("module_named_modules_lists_shared_twice", "05_module.py", "5.1",
        "            if id(self) in memo:\n                return\n", "",
        "a module reachable along two paths is walked (and listed) twice"),
    Bug("module_child_names_without_dot", "05_module.py", "5.1",
        'yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)',
        "yield from child.named_modules(memo, prefix + name, remove_duplicate)",
        "nested module names are glued together without a dot (fc1weight)"),
    Bug("module_state_dict_child_prefix_without_dot", "05_module.py", "5.1",
        'child.state_dict(destination, prefix + name + ".", keep_vars)', "child.state_dict(destination, prefix + name, keep_vars)",
        "state_dict keys of children lack the dot (fc1weight)"),
    Bug("module_state_dict_returns_parameters", "05_module.py", "5.1",
        "destination[prefix + name] = p if keep_vars else p.detach()", "destination[prefix + name] = p",
        "state_dict hands out the live Parameters instead of detached tensors"),
    Bug("module_state_dict_drops_buffers", "05_module.py", "5.1",
        "            if b is not None and name not in self._non_persistent:\n                destination[prefix + name] = b if keep_vars else b.detach()\n",
        "",
        "state_dict forgets the buffers (BatchNorm's running statistics would not be saved)"),
    Bug("module_none_placeholder_not_routed", "05_module.py", "5.1",
        "        elif self._is_registered(name):\n            self._set_registered(name, value)\n        else:\n            object.__setattr__(self, name, value)",
        "        else:\n            object.__setattr__(self, name, value)",
        "a registered name set to None or to a plain tensor becomes an ordinary attribute and the old entry stays"),
    Bug("cross_entropy_without_max_shift", "05_cross_entropy.py", "5.2",
        "shifted = logits - logits.max(axis=1, keepdims=True)", "shifted = logits",
        "log-softmax without subtracting the row maximum: large logits overflow"),
    Bug("cross_entropy_logsumexp_wrong_axis", "05_cross_entropy.py", "5.2",
        "xp.exp(shifted).sum(axis=1, keepdims=True)", "xp.exp(shifted).sum(axis=0, keepdims=True)",
        "the softmax normaliser sums over the batch instead of the classes"),
    Bug("cross_entropy_logsumexp_without_keepdims", "05_cross_entropy.py", "5.2",
        "xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))", "xp.log(xp.exp(shifted).sum(axis=1))",
        "the per-row normaliser loses its dimension and broadcasts along the classes"),
    Bug("cross_entropy_backward_adds_one_hot", "05_cross_entropy.py", "5.2",
        "dlogits[rows, target] -= 1", "dlogits[rows, target] += 1",
        "the gradient is softmax + one_hot instead of softmax - one_hot"),
    Bug("adam_without_bias_correction", "05_optimizers.py", "5.3",
        "update *= lr / bias_correction1", "update *= lr",
        "Adam forgets the bias correction of the first moment"),
    Bug("adam_without_second_bias_correction", "05_optimizers.py", "5.3",
        "    denom /= math.sqrt(bias_correction2)\n", "",
        "Adam forgets the bias correction of the second moment"),
    Bug("adam_amsgrad_max_unused", "05_optimizers.py", "5.3",
        "        second_moment = max_exp_avg_sq\n", "        second_moment = exp_avg_sq\n",
        "AMSGrad keeps the running maximum but divides by the current average"),
    Bug("adam_second_moment_with_beta1", "05_optimizers.py", "5.3",
        "exp_avg_sq *= beta2", "exp_avg_sq *= beta1",
        "the squared-gradient average decays with beta1"),
    Bug("sgd_ignores_dampening", "05_optimizers.py", "5.4",
        "momentum_buffer += (1 - dampening) * d", "momentum_buffer += d",
        "SGD momentum ignores dampening"),
    Bug("sgd_dampens_first_step", "05_optimizers.py", "5.4",
        "momentum_buffer = d.copy()", "momentum_buffer = (1 - dampening) * d",
        "the first momentum buffer is dampened (PyTorch copies the gradient)"),
    Bug("sgd_nesterov_drops_gradient", "05_optimizers.py", "5.4",
        "d = d + momentum * momentum_buffer", "d = momentum * momentum_buffer",
        "Nesterov step without the gradient term"),
    Bug("sgd_weight_decay_wrong_sign", "05_optimizers.py", "5.4",
        "d = d + weight_decay * param", "d = d - weight_decay * param",
        "weight decay pushes the weights away from 0"),
    Bug("linear_forgets_bias", "05_linear.py", "5.5",
        "        if bias is not None:\n            out += bias\n", "",
        "the Linear node ignores its bias"),
    Bug("linear_without_transpose", "05_linear.py", "5.5",
        "out = product(x, weight.T)", "out = product(x, weight)",
        "x @ W instead of x @ W.T"),
    Bug("linear_dw_transposed", "05_linear.py", "5.5",
        "dw = product(rows.T, x.reshape(-1, x.shape[-1])) if need_w else None",
        "dw = product(x.reshape(-1, x.shape[-1]).T, rows) if need_w else None",
        "the weight's gradient in the transposed (in, out) layout"),
    Bug("linear_db_not_summed_over_the_batch", "05_linear.py", "5.5",
        "db = rows.sum(axis=0) if need_b else None", "db = rows.mean(axis=0) if need_b else None",
        "the bias gradient averaged over the batch instead of summed"),
    Bug("linear_db_sums_only_the_first_dimension", "05_linear.py", "5.5",
        "db = rows.sum(axis=0) if need_b else None", "db = grad.sum(axis=0) if need_b else None",
        "the bias gradient sums only the first batch dimension (wrong for inputs with several leading dimensions)"),
    Bug("linear_dw_only_first_batch_slice", "05_linear.py", "5.5",
        "dw = product(rows.T, x.reshape(-1, x.shape[-1])) if need_w else None",
        "dw = product(grad.reshape(-1, grad.shape[-1])[: x.shape[0]].T, x.reshape(-1, x.shape[-1])[: x.shape[0]]) if need_w else None",
        "the weight's gradient uses only the first x.shape[0] rows (batched leading dimensions dropped)"),
    Bug("linear_dx_with_transposed_weight", "05_linear.py", "5.5",
        "dx = product(grad, weight) if need_x else None", "dx = product(grad, weight.T) if need_x else None",
        "the input's gradient through W.T instead of W"),
    # ------------------------------------------------------------------ 06 conv, pooling, batchnorm
    Bug("im2col_ignores_stride", "06_conv.py", "6.1",
        "strides = (sN, sH * sh, sW * sw, sH * dh, sW * dw, sC)", "strides = (sN, sH, sW, sH * dh, sW * dw, sC)",
        "im2col steps one pixel between windows whatever the stride"),
    Bug("im2col_ignores_dilation", "06_conv.py", "6.1",
        "strides = (sN, sH * sh, sW * sw, sH * dh, sW * dw, sC)", "strides = (sN, sH * sh, sW * sw, sH, sW, sC)",
        "im2col reads adjacent pixels inside a window whatever the dilation"),
    Bug("col2im_overwrites_overlaps", "06_conv.py", "6.2",
        "dx[:, rows_read, cols_read, :] += patches", "dx[:, rows_read, cols_read, :] = patches",
        "col2im overwrites where windows overlap instead of adding"),
    Bug("col2im_ignores_stride", "06_conv.py", "6.2",
        "rows_read = slice(i * dh, i * dh + sh * (Ho - 1) + 1, sh)", "rows_read = slice(i * dh, i * dh + Ho)",
        "col2im adds the rows back one pixel apart whatever the stride"),
    Bug("maxpool_backward_to_every_element", "06_pooling.py", "6.3",
        "window += grad * (argmax == k)", "window += grad",
        "max-pool backward (overlapping windows) routes the gradient to every element of the window"),
    Bug("maxpool_backward_to_every_element_disjoint", "06_pooling.py", "6.3",
        "xp.multiply(grad, argmax == taps, out=", "xp.multiply(grad, taps >= 0, out=",
        "max-pool backward (disjoint windows) routes the gradient to every element of the window"),
    Bug("batchnorm_backward_missing_variance_term", "06_batchnorm.py", "6.4",
        "(M * dxhat - sum_dxhat - xhat * sum_dxhat_xhat)", "(M * dxhat - sum_dxhat)",
        "BatchNorm backward forgets that x moved the variance"),
    Bug("batchnorm_backward_missing_mean_term", "06_batchnorm.py", "6.4",
        "(M * dxhat - sum_dxhat - xhat * sum_dxhat_xhat)", "(M * dxhat - xhat * sum_dxhat_xhat)",
        "BatchNorm backward forgets that x moved the mean"),
    Bug("batchnorm_backward_counts_batch_only", "06_batchnorm.py", "6.4",
        "M = xhat.size // xhat.shape[1]", "M = xhat.shape[0]",
        "values per channel taken as the batch size N, forgetting the spatial positions"),
]
