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
    Bug("mul_forgets_second_child", "01_scalar_autograd.py", "1.1",
        'Value(self.data * other.data, (self, other), (other.data, self.data), "*")',
        'Value(self.data * other.data, (self,), (other.data,), "*")',
        "the product records only its first factor, so no gradient reaches the second"),
    Bug("pow_derivative_n_a_n", "01_scalar_autograd.py", "1.1",
        "(n * a ** (n - 1.0),)", "(n * a ** n,)",
        "d(a**n)/da written n * a**n instead of n * a**(n-1)"),
    Bug("pow_value_exponent_missing_log", "01_scalar_autograd.py", "1.1",
        "out * math.log(a)), \"**\")", "out), \"**\")",
        "d(a**b)/db with a Value exponent forgets the factor log(a)"),
    Bug("pow_value_exponent_base_derivative_b_a_b", "01_scalar_autograd.py", "1.1",
        "(b * a ** (b - 1.0), ", "(b * a ** b, ",
        "d(a**b)/da with a Value exponent written b * a**b (the exponent not lowered)"),
    Bug("tanh_derivative_1_minus_t", "01_scalar_autograd.py", "1.1",
        "(1.0 - t * t,)", "(1.0 - t,)",
        "tanh derivative 1 - t instead of 1 - t**2"),
    Bug("tanh_derivative_from_the_input", "01_scalar_autograd.py", "1.1",
        "(1.0 - t * t,)", "(1.0 - self.data * self.data,)",
        "tanh derivative written with the input x instead of the output t = tanh x"),
    Bug("topological_order_recursive", "01_scalar_autograd.py", "1.2",
        _ITERATIVE_TOPOLOGICAL_ORDER, _RECURSIVE_TOPOLOGICAL_ORDER,
        "recursive depth-first search: a long chain hits the recursion limit"),
    Bug("topological_order_lists_reused_node_twice", "01_scalar_autograd.py", "1.2",
        "        if node in visited:\n            continue\n        visited.add(node)\n        stack.append((node, True))\n        for child in node._children:",
        "        visited.add(node)\n        stack.append((node, True))\n        for child in node._children:",
        "a node pushed twice before it is visited (x * x) is listed twice"),
    Bug("topological_order_parents_first", "01_scalar_autograd.py", "1.2",
        "            order.append(node)\n            continue", "            order.insert(0, node)\n            continue",
        "each finished node is put at the front: parents before children, the root first"),
    Bug("backward_assigns_instead_of_accumulating", "01_scalar_autograd.py", "1.3",
        "child.grad += local * g", "child.grad = local * g",
        "a node used twice keeps only the last gradient (= instead of +=)"),
    Bug("backward_keeps_stale_nonleaf_grads", "01_scalar_autograd.py", "1.3",
        "        for node in order:\n            if node._children:\n                node.grad = 0.0\n", "",
        "intermediate nodes are not reset, so a second backward adds to stale gradients"),
    Bug("backward_visits_leaves_first", "01_scalar_autograd.py", "1.3",
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
    Bug("neuron_parameters_missing_bias", "02_neural_nets_from_scalars.py", "2.1",
        "return self.w + [self.b]", "return self.w",
        "Neuron.parameters() leaves out the bias, so it is never trained"),
    Bug("layer_parameters_nested", "02_neural_nets_from_scalars.py", "2.1",
        "return [p for n in self.neurons for p in n.parameters()]", "return [n.parameters() for n in self.neurons]",
        "Layer.parameters() returns a list of lists instead of one flat list"),
    Bug("mlp_parameters_first_layer_only", "02_neural_nets_from_scalars.py", "2.1",
        "return [p for layer in self.layers for p in layer.parameters()]", "return self.layers[0].parameters()",
        "MLP.parameters() returns only the first layer's parameters"),
    Bug("mlp_call_always_returns_a_list", "02_neural_nets_from_scalars.py", "2.1",
        "return x[0] if len(x) == 1 else x", "return x",
        "an MLP with one output returns a list of one Value instead of the Value"),
    Bug("mlp_call_skips_the_last_layer", "02_neural_nets_from_scalars.py", "2.1",
        "for layer in self.layers:\n            x = layer(x)", "for layer in self.layers[:-1]:\n            x = layer(x)",
        "the forward pass stops before the output layer (off by one)"),
    Bug("hinge_without_max", "02_neural_nets_from_scalars.py", "2.2",
        "(1.0 - y * s).relu()", "(1.0 - y * s)",
        "hinge loss without the max(0, .): confident right answers give negative loss"),
    Bug("hinge_sum_instead_of_mean", "02_neural_nets_from_scalars.py", "2.2",
        "return vsum(losses) * (1.0 / len(losses))", "return vsum(losses)",
        "hinge loss summed over the batch instead of averaged"),
    Bug("sgd_step_ascends", "02_neural_nets_from_scalars.py", "2.3",
        "p.data -= lr * p.grad", "p.data += lr * p.grad",
        "gradient descent step with the wrong sign"),
    Bug("sgd_step_rebinds_the_name", "02_neural_nets_from_scalars.py", "2.3",
        "p.data -= lr * p.grad", "p = Value(p.data - lr * p.grad)",
        "the step makes a new Value instead of changing the parameter's data: nothing moves"),
    Bug("train_without_zero_grad", "02_neural_nets_from_scalars.py", "2.3",
        "        model.zero_grad()\n        loss.backward()\n", "        loss.backward()\n",
        "the training loop never zeroes the gradients: each step uses the sum of all earlier gradients"),
    Bug("train_zero_grad_after_backward", "02_neural_nets_from_scalars.py", "2.3",
        "        model.zero_grad()\n        loss.backward()\n", "        loss.backward()\n        model.zero_grad()\n",
        "gradients zeroed between backward and the step: the step has nothing to follow"),
    Bug("train_ignores_the_lr_schedule", "02_neural_nets_from_scalars.py", "2.3",
        "sgd_step(model.parameters(), step_lr)", "sgd_step(model.parameters(), lr)",
        "every step uses the starting learning rate instead of the scheduled one"),
    Bug("train_forgets_the_penalty", "02_neural_nets_from_scalars.py", "2.3",
        "loss = hinge_loss(scores, labels) + l2_penalty(model.parameters(), alpha)", "loss = hinge_loss(scores, labels)",
        "the L2 penalty is left out of the loss that is minimised"),
    Bug("train_sums_per_point_gradients", "02_neural_nets_from_scalars.py", "2.3",
        "        model.zero_grad()\n        loss.backward()\n",
        "        model.zero_grad()\n        for s, y in zip(scores, labels):\n            hinge_loss([s], [y]).backward()\n",
        "one backward per point: the gradients of the points are summed instead of averaged (and the penalty is lost)"),
    # ------------------------------------------------------------------ 03 tensors
    Bug("strides_column_major", "03_tensors.py", "3.1",
        "    return tuple(reversed(strides))\n", "    return tuple(strides)\n",
        "strides come out column-major (first dimension has stride 1)"),
    Bug("index_ignores_offset", "03_tensors.py", "3.2",
        "    position = offset\n", "    position = 0\n",
        "the storage offset is ignored (a slice reads from the start of storage)"),
    Bug("index_strides_reversed", "03_tensors.py", "3.2",
        "for i, stride in zip(index, strides):", "for i, stride in zip(index, reversed(strides)):",
        "strides paired with the index in the wrong order"),
    Bug("broadcast_aligns_left", "03_tensors.py", "3.3",
        "(1,) * (ndim - len(s)) + tuple(s)", "tuple(s) + (1,) * (ndim - len(s))",
        "shapes aligned on the left (missing dimensions appended, not prepended)"),
    Bug("permute_keeps_strides", "03_tensors.py", "3.4",
        "tuple(strides[d] for d in dims)", "tuple(strides)",
        "permute reorders the shape but not the strides"),
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
    # ------------------------------------------------------------------ 05 linear, cross-entropy, optimizers
    Bug("linear_forgets_bias", "05_linear.py", "5.1",
        "return affine(x, self.weight, self.bias)", "return affine(x, self.weight, None)",
        "Linear ignores its bias"),
    Bug("linear_without_transpose", "05_linear.py", "5.1",
        "return affine(x, self.weight, self.bias)", "return x @ self.weight + self.bias",
        "x @ W + b instead of x @ W.T + b"),
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
