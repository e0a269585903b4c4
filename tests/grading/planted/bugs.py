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
    Bug("im2col_tap_strides_swapped", "06_conv.py", "6.1",
        "strides = (sN, sH * sh, sW * sw, sH * dh, sW * dw, sC)", "strides = (sN, sH * sh, sW * sw, sW * dw, sH * dh, sC)",
        "im2col's tap row index steps along the image's columns and the tap column index along its rows"),
    Bug("im2col_counts_strides_in_elements", "06_conv.py", "6.1",
        "sN, sC, sH, sW = x.strides", "sN, sC, sH, sW = (s // x.itemsize for s in x.strides)",
        "im2col's strides in elements (as chapter 03 counts them) where as_strided wants bytes"),
    Bug("col2im_overwrites_overlaps", "06_conv.py", "6.2",
        "dx[:, rows_read, cols_read, :] += patches", "dx[:, rows_read, cols_read, :] = patches",
        "col2im overwrites where windows overlap instead of adding"),
    Bug("col2im_ignores_stride", "06_conv.py", "6.2",
        "rows_read = slice(i * dh, i * dh + sh * (Ho - 1) + 1, sh)", "rows_read = slice(i * dh, i * dh + Ho)",
        "col2im adds the rows back one pixel apart whatever the stride"),
    Bug("col2im_ignores_dilation", "06_conv.py", "6.2",
        "cols_read = slice(j * dw, j * dw + sw * (Wo - 1) + 1, sw)", "cols_read = slice(j, j + sw * (Wo - 1) + 1, sw)",
        "col2im starts each tap's columns at j instead of j * dilation"),
    Bug("conv_backward_bias_mean", "06_conv.py", "6.2",
        "db = g.sum(axis=0)", "db = g.mean(axis=0)",
        "the bias gradient averages over the output pixels instead of summing"),
    Bug("conv_backward_weight_taps_misordered", "06_conv.py", "6.2",
        "dw = (g.T @ cols).reshape(O, kh, kw, C).transpose(0, 3, 1, 2)", "dw = (g.T @ cols).reshape(O, C, kh, kw)",
        "the weight gradient reshaped as (O, C, kh, kw) although cols orders its taps (i, j, c)"),
    Bug("conv_backward_weight_matrix_misordered", "06_conv.py", "6.2",
        "dcols = g @ weight.transpose(0, 2, 3, 1).reshape(O, kh * kw * C)", "dcols = g @ weight.reshape(O, kh * kw * C)",
        "dcols uses the weight flattened as (c, i, j), not in cols' (i, j, c) order"),
    Bug("conv_backward_crops_the_wrong_side", "06_conv.py", "6.2",
        "dilation)[:, :, ph : ph + H, pw : pw + W]", "dilation)[:, :, :H, :W]",
        "the padding is cropped from the bottom and right only"),
    Bug("maxpool_backward_to_every_element", "06_pooling.py", "6.3",
        "window += grad * (argmax == k)", "window += grad",
        "max-pool backward routes the gradient to every element of the window"),
    Bug("maxpool_backward_overwrites_overlaps", "06_pooling.py", "6.3",
        "window += grad * (argmax == k)", "window[...] = grad * (argmax == k)",
        "max-pool backward overwrites a tap's gradient where windows overlap instead of adding"),
    Bug("maxpool_backward_tap_transposed", "06_pooling.py", "6.3",
        "window = window_tap(dx, k // kw, k % kw, stride, out_size)\n            window += grad * (argmax == k)",
        "window = window_tap(dx, k % kw, k // kw, stride, out_size)\n            window += grad * (argmax == k)",
        "tap k placed at (k % kw, k // kw): row and column of the tap swapped"),
    Bug("maxpool_backward_averages", "06_pooling.py", "6.3",
        "window += grad * (argmax == k)", "window += grad / (kh * kw)",
        "max-pool backward shares the gradient equally, as average pooling does"),
    Bug("batchnorm_backward_missing_variance_term", "06_batchnorm.py", "6.4",
        "(M * dxhat - sum_dxhat - xhat * sum_dxhat_xhat)", "(M * dxhat - sum_dxhat)",
        "BatchNorm backward forgets that x moved the variance"),
    Bug("batchnorm_backward_missing_mean_term", "06_batchnorm.py", "6.4",
        "(M * dxhat - sum_dxhat - xhat * sum_dxhat_xhat)", "(M * dxhat - xhat * sum_dxhat_xhat)",
        "BatchNorm backward forgets that x moved the mean"),
    Bug("batchnorm_backward_counts_batch_only", "06_batchnorm.py", "6.4",
        "M = xhat.size // xhat.shape[1]", "M = xhat.shape[0]",
        "values per channel taken as the batch size N, forgetting the spatial positions"),
    Bug("batchnorm_backward_unbiased_count", "06_batchnorm.py", "6.4",
        "dx = (inv_std.reshape(shape) / M) *", "dx = (inv_std.reshape(shape) / (M - 1)) *",
        "divides by M - 1, as for the unbiased (running) variance, where the batch statistics divide by M"),
    Bug("batchnorm_backward_forgets_keepdims", "06_batchnorm.py", "6.4",
        "sum_dxhat_xhat = (dxhat * xhat).sum(axis=axes, keepdims=True)", "sum_dxhat_xhat = (dxhat * xhat).sum(axis=axes)",
        "the per-channel sum loses its dimensions and broadcasts along the wrong axis"),
    Bug("batchnorm_backward_ignores_the_scale", "06_batchnorm.py", "6.4",
        "(M * dxhat - sum_dxhat - xhat * sum_dxhat_xhat)", "(M * grad - sum_dxhat - xhat * sum_dxhat_xhat)",
        "the scale gamma is left out of the first term (grad where dxhat = grad * gamma belongs)"),
]
