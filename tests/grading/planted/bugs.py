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


# what lies between the end of CheckpointFunction.forward (10.1) and the first line of its backward
_REENTRANT_BACKWARD_HEAD = (
    "\n    def backward(ctx, grad):\n"
    "        \"\"\"``(None, d loss/d value, ...)``: one gradient (or None) per argument of ``forward``, from one recompute.\n\n"
    "        ``grad`` (d loss/d output) is an array; ``Tensor.backward`` takes a tensor on the output's device.\n"
    "        \"\"\"\n"
)

# plan_chain's dynamic program (10.4), all of it
_CHAIN_DP_BODY = '''    n = len(saved_bytes)
    saved_upto = [0, *itertools.accumulate(saved_bytes)]  # saved_upto[i] = saved bytes of layers 0 .. i-1
    flops_upto = [0, *itertools.accumulate(flops)]
    # best[i]: kept bytes K -> (cost, segments) of the cheapest plan of layers 0 .. i-1 keeping K bytes
    best: list[dict] = [{0: ((0, 0, 0), ())}] + [{} for _ in range(n)]
    for i in range(1, n + 1):
        for j in range(i):  # the plan's last segment is j .. i-1
            saved, recompute = saved_upto[i] - saved_upto[j], flops_upto[i] - flops_upto[j]
            for kept, ((cost_flops, count, peak), plan) in best[j].items():
                options = (  # (bytes kept after it, recomputed FLOPs, peak so far, checkpointed)
                    (kept + saved, cost_flops, max(peak, kept + saved), False),
                    (kept + input_bytes[j], cost_flops + recompute, max(peak, kept + input_bytes[j] + saved), True),
                )
                for new_kept, new_flops, new_peak, checkpointed in options:
                    cost = (new_flops, count + 1, new_peak)
                    if new_peak <= budget and (new_kept not in best[i] or cost < best[i][new_kept][0]):
                        best[i][new_kept] = (cost, plan + ((j, i - 1, checkpointed),))
        best[i] = _undominated(best[i])
    if not best[n]:
        return None
    kept, ((recompute, _, peak), segments) = min(best[n].items(), key=lambda item: item[1][0])
    return ChainPlan(segments, peak, recompute, kept)
'''

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

_TRANSPOSE_TILE_ACCESSES = """            tile[(ty + j) * PITCH + tx] = x[first_row + j, col]
    jit.syncthreads()
    # the same tile, seen from out: its rows are this block's columns of x, its columns the block's rows
    out_col = jit.blockIdx.y * TILE + tx
    first_out_row = jit.blockIdx.x * TILE + ty
    for j in range(np.uint32(0), np.uint32(TILE), np.uint32(BLOCK_ROWS)):
        if first_out_row + j < cols and out_col < rows:
            out[first_out_row + j, out_col] = tile[tx * PITCH + ty + j]
"""

_TRANSPOSE_SECOND_HALF = """    jit.syncthreads()
    # the same tile, seen from out: its rows are this block's columns of x, its columns the block's rows
    out_col = jit.blockIdx.y * TILE + tx
    first_out_row = jit.blockIdx.x * TILE + ty
    for j in range(np.uint32(0), np.uint32(TILE), np.uint32(BLOCK_ROWS)):
        if first_out_row + j < cols and out_col < rows:
            out[first_out_row + j, out_col] = tile[tx * PITCH + ty + j]
"""

_TRANSPOSE_WITHOUT_SHARED_MEMORY = """    jit.syncthreads()
    for j in range(np.uint32(0), np.uint32(TILE), np.uint32(BLOCK_ROWS)):
        if first_row + j < rows and col < cols:
            out[col, first_row + j] = x[first_row + j, col]
"""

_SCALED_ADD_GRID_STRIDE = """    i = jit.grid(1)
    stride = jit.gridsize(1)
    while i < n:
        out[i] = alpha * x[i] + y[i]
        i += stride
"""

_SCALED_ADD_IN_CHUNKS = """    threads = jit.gridsize(1)
    chunk = (n + threads - 1) // threads
    i = jit.grid(1) * chunk
    end = min(i + chunk, n)
    while i < end:
        out[i] = alpha * x[i] + y[i]
        i += 1
"""

_BLOCK_SUM_TREE = """    partial[tid] = total
    jit.syncthreads()
    step = np.uint32(BLOCK // 2)
    while step > 0:
        if tid < step:
            partial[tid] += partial[tid + step]
        jit.syncthreads()
        step = step // 2
"""

_BLOCK_SUM_SERIAL = """    partial[tid] = total
    jit.syncthreads()
    if tid == 0:
        for other in range(np.uint32(1), np.uint32(BLOCK)):
            partial[0] += partial[other]
    jit.syncthreads()
"""

_MATMUL_A_LOAD = """        if row < m and offset + tx < k:
            a_tile[ty * TILE + tx] = a[row, offset + tx]
        else:
            a_tile[ty * TILE + tx] = np.float32(0)
"""

_MATMUL_A_LOAD_DOWN_COLUMNS = """        a_row = jit.blockIdx.y * TILE + tx
        if a_row < m and offset + ty < k:
            a_tile[tx * TILE + ty] = a[a_row, offset + ty]
        else:
            a_tile[tx * TILE + ty] = np.float32(0)
"""

_SOFTMAX_MAX_LOOP = """    col = tid
    while col < cols:
        biggest = max(biggest, x[row, col])
        col += np.uint32(BLOCK)
"""

_SOFTMAX_MAX_LOOP_IN_CHUNKS = """    chunk = (cols + np.uint32(BLOCK) - 1) // np.uint32(BLOCK)
    col = tid * chunk
    while col < cols and col < (tid + 1) * chunk:
        biggest = max(biggest, x[row, col])
        col += np.uint32(1)
"""

_SOFTMAX_MAX_LOOP_WITH_A_BARRIER = """    col = tid
    while col < cols:
        biggest = max(biggest, x[row, col])
        jit.syncthreads()
        col += np.uint32(BLOCK)
"""

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
        "grad_a = unbroadcast(grad @ b2.swapaxes(-1, -2), a2.shape)", "grad_a = unbroadcast(grad @ b2, a2.shape)",
        "grad_a = grad @ b instead of grad times b transposed"),
    Bug("matmul_backward_batched_without_transpose", "04_tensor_autograd.py", "4.2",
        "a2.swapaxes(-1, -2) @ grad", "a2.swapaxes(0, 1) @ grad",
        "batched grad_b transposes the first two dimensions instead of the last two"),
    Bug("matmul_backward_batches_not_summed", "04_tensor_autograd.py", "4.2",
        "grad_b = unbroadcast(a2.swapaxes(-1, -2) @ grad, b2.shape).reshape(b.shape)",
        "grad_b = (a2.swapaxes(-1, -2) @ grad).reshape(b.shape)",
        "grad_b of a weight shared by a whole batch is not summed over the batch"),
    Bug("mean_backward_as_sum", "04_tensor_autograd.py", "4.3",
        "    grad = grad / n\n", "",
        "mean backward forgets to divide by the number of averaged elements"),
    # 4.4: LogSoftmax, a whole Function
    Bug("log_softmax_without_max_shift", "04_log_softmax.py", "4.4",
        "shifted = a - a.max(axis=dim, keepdims=True)", "shifted = a",
        "log_softmax forward without subtracting the maximum: large scores overflow"),
    Bug("log_softmax_shift_not_kept", "04_log_softmax.py", "4.4",
        "out = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))",
        "out = a - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))",
        "the maximum is subtracted inside the exp but not from the score outside it"),
    Bug("log_softmax_backward_uses_log_probs", "04_log_softmax.py", "4.4",
        "probabilities = np.exp(out)", "probabilities = out",
        "log_softmax backward multiplies by log-probabilities instead of probabilities"),
    Bug("log_softmax_backward_wrong_sign", "04_log_softmax.py", "4.4",
        "return grad - probabilities * grad.sum(", "return grad + probabilities * grad.sum(",
        "log_softmax backward adds the softmax term instead of subtracting it"),
    Bug("log_softmax_backward_last_axis", "04_log_softmax.py", "4.4",
        "grad.sum(axis=ctx.dim, keepdims=True)", "grad.sum(axis=-1, keepdims=True)",
        "log_softmax backward sums over the last dimension whatever dim is"),
    Bug("log_softmax_backward_for_the_wrong_input", "04_log_softmax.py", "4.4",
        "return grad - probabilities * grad.sum(axis=ctx.dim, keepdims=True), None",
        "return None, grad - probabilities * grad.sum(axis=ctx.dim, keepdims=True)",
        "backward returns the gradient in dim's place instead of the input's"),
    # 4.5: the backward driver
    Bug("backward_overwrites_instead_of_adding", "04_backward.py", "4.5",
        "grads[parent] = parent_grad if earlier is None else earlier + parent_grad",
        "grads[parent] = parent_grad",
        "a node used by several consumers keeps only the last gradient sent to it (no sum)"),
    Bug("backward_leaf_grad_replaced", "04_backward.py", "4.5",
        "            if receiver.grad is None:\n                store_grad(receiver, grad)\n            else:\n                add_grad(receiver, grad)\n",
        "            receiver.grad = None\n            store_grad(receiver, grad)\n",
        "a leaf's .grad is replaced by each backward call instead of accumulating"),
    Bug("backward_retain_graph_ignored", "04_backward.py", "4.5",
        "        if not retain_graph:\n            node._saved = None\n", "",
        "saved tensors are never freed: retain_graph is ignored and memory is held after backward"),
    Bug("backward_always_frees", "04_backward.py", "4.5",
        "        if not retain_graph:\n            node._saved = None\n", "        node._saved = None\n",
        "saved tensors are freed even with retain_graph=True"),
    Bug("backward_retain_grad_ignored", "04_backward.py", "4.5",
        "        elif node._retain is not None:\n            receiver = node._retain()  # a non-leaf that called retain_grad()\n", "",
        "a non-leaf that called retain_grad() gets no .grad"),
    Bug("backward_in_forward_order", "04_backward.py", "4.5",
        "for node in reversed(topological_order(root)):", "for node in topological_order(root):",
        "nodes visited in forward order: a node is visited before its consumers sent it anything"),
    Bug("backward_stops_at_first_leaf", "04_backward.py", "4.5",
        "        if type(node) is AccumulateGrad:\n            continue\n", "        if type(node) is AccumulateGrad:\n            break\n",
        "the pass stops at the first leaf it reaches instead of moving on"),
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
    # ------------------------------------------------------------------ 07 GPU kernels (on the simulator)
    Bug("grid_stride_bound_off_by_one", "07_elementwise.py", "7.1",
        "    while i < n:\n        out[i]", "    while i <= n:\n        out[i]",
        "the loop runs while i <= n: the last thread reads x[n], past the end (out of bounds)"),
    Bug("grid_stride_no_loop", "07_elementwise.py", "7.1",
        "    while i < n:\n        out[i] = alpha * x[i] + y[i]\n        i += stride\n",
        "    if i < n:\n        out[i] = alpha * x[i] + y[i]\n",
        "one element per thread and no grid-stride loop: a grid smaller than the array leaves elements unwritten"),
    Bug("grid_stride_steps_by_one", "07_elementwise.py", "7.1",
        "        i += stride\n", "        i += 1\n",
        "each thread steps to the next element instead of jumping a whole grid: threads redo each other's work"),
    Bug("grid_stride_steps_by_block", "07_elementwise.py", "7.1",
        "stride = jit.gridsize(1)", "stride = jit.blockDim.x",
        "the stride is one block, not the whole grid: with several blocks, elements are handled several times"),
    Bug("thread_index_forgets_the_block", "07_elementwise.py", "7.1",
        "i = jit.grid(1)\n    stride", "i = jit.threadIdx.x\n    stride",
        "the global index is threadIdx.x alone: every block handles the first elements"),
    Bug("block_sum_no_barrier_after_store", "07_block_reduce.py", "7.2",
        "    partial[tid] = total\n    jit.syncthreads()\n", "    partial[tid] = total\n",
        "no barrier between writing the partial sums and the first step of the tree (a shared-memory race)"),
    Bug("block_sum_no_barrier_in_the_tree", "07_block_reduce.py", "7.2",
        "            partial[tid] += partial[tid + step]\n        jit.syncthreads()\n",
        "            partial[tid] += partial[tid + step]\n",
        "no barrier between the steps of the tree: a thread reads a sum another is still writing (a race)"),
    Bug("block_sum_tree_bound_off_by_one", "07_block_reduce.py", "7.2",
        "if tid < step:", "if tid <= step:",
        "tid <= step: thread `step` adds partial[2 * step], past the end of the shared array at the first step"),
    Bug("block_sum_tree_assigns", "07_block_reduce.py", "7.2",
        "partial[tid] += partial[tid + step]", "partial[tid] = partial[tid + step]",
        "the tree copies the other half instead of adding it"),
    Bug("block_sum_tree_starts_at_the_block", "07_block_reduce.py", "7.2",
        "step = np.uint32(BLOCK // 2)", "step = np.uint32(BLOCK)",
        "the first step is the whole block: every thread reads past the end of the shared array"),
    Bug("matmul_no_barrier_before_the_next_phase", "07_matmul.py", "7.3",
        "            acc += a_tile[ty * TILE + j] * b_tile[j * TILE + tx]\n        jit.syncthreads()\n",
        "            acc += a_tile[ty * TILE + j] * b_tile[j * TILE + tx]\n",
        "no barrier after the multiply: the next phase overwrites tiles other threads are still reading (a race)"),
    Bug("matmul_no_barrier_after_loading", "07_matmul.py", "7.3",
        "            b_tile[ty * TILE + tx] = np.float32(0)\n        jit.syncthreads()\n",
        "            b_tile[ty * TILE + tx] = np.float32(0)\n",
        "no barrier after staging the tiles: threads read elements others have not written yet (a race)"),
    Bug("matmul_b_tile_transposed", "07_matmul.py", "7.3",
        "acc += a_tile[ty * TILE + j] * b_tile[j * TILE + tx]", "acc += a_tile[ty * TILE + j] * b_tile[tx * TILE + j]",
        "the b tile is read transposed (wrong tile index)"),
    Bug("matmul_a_load_without_bounds", "07_matmul.py", "7.3",
        "        if row < m and offset + tx < k:\n            a_tile[ty * TILE + tx] = a[row, offset + tx]\n        else:\n            a_tile[ty * TILE + tx] = np.float32(0)\n",
        "        a_tile[ty * TILE + tx] = a[row, offset + tx]\n",
        "the a tile is loaded without a bounds check: ragged edges read past the matrix (out of bounds)"),
    Bug("matmul_phase_offset_missing_tile", "07_matmul.py", "7.3",
        "offset = np.uint32(phase * TILE)", "offset = np.uint32(phase)",
        "the phase's offset along k forgets to multiply by TILE: tiles overlap"),
    Bug("matmul_drops_the_last_partial_phase", "07_matmul.py", "7.3",
        "for phase in range((k + TILE - 1) // TILE):", "for phase in range(k // TILE):",
        "k // TILE phases: the last, partial tile along k is never multiplied (or none at all when k < TILE)"),
    Bug("matmul_no_zero_padding_for_b", "07_matmul.py", "7.3",
        "        else:\n            b_tile[ty * TILE + tx] = np.float32(0)\n", "",
        "b's tile elements outside the matrix are left as they were instead of 0"),
    Bug("bias_relu_backward_masks_on_grad_out", "07_bias_relu.py", "7.4",
        "if out[row, col] > np.float32(0):", "if grad_out[row, col] > np.float32(0):",
        "the ReLU's mask is taken from grad_out instead of the saved output"),
    Bug("bias_relu_backward_row_step_one", "07_bias_relu.py", "7.4",
        "row += np.uint32(ROWS)", "row += np.uint32(1)",
        "each thread walks every row from its own on: rows are counted several times in the bias gradient"),
    Bug("bias_relu_backward_no_barrier_before_the_tree", "07_bias_relu.py", "7.4",
        "    partial[ty * COLS + tx] = total\n    jit.syncthreads()\n", "    partial[ty * COLS + tx] = total\n",
        "no barrier between storing the partial sums and adding them (a shared-memory race)"),
    Bug("bias_relu_backward_no_barrier_in_the_tree", "07_bias_relu.py", "7.4",
        "            partial[ty * COLS + tx] += partial[(ty + step) * COLS + tx]\n        jit.syncthreads()\n",
        "            partial[ty * COLS + tx] += partial[(ty + step) * COLS + tx]\n",
        "no barrier between the steps of the column sum (a shared-memory race)"),
    Bug("bias_relu_backward_bias_from_one_thread", "07_bias_relu.py", "7.4",
        "grad_bias[col] = partial[tx]", "grad_bias[col] = total",
        "the bias gradient is one thread's share of the column, not the whole column's sum"),
    Bug("bias_relu_backward_no_column_bound", "07_bias_relu.py", "7.4",
        "    if col < cols:\n        row = ty\n", "    if True:\n        row = ty\n",
        "no check that the thread's column exists: the last block reads past the matrix (out of bounds)"),
    Bug("bias_relu_backward_zeros_not_written", "07_bias_relu.py", "7.4",
        "            grad_x[row, col] = grad\n", "            if grad != 0:\n                grad_x[row, col] = grad\n",
        "grad_x is written only where the gradient is nonzero: the masked elements keep whatever was there"),
    Bug("grid_stride_uncoalesced_chunks", "07_elementwise.py", "7.1",
        _SCALED_ADD_GRID_STRIDE, _SCALED_ADD_IN_CHUNKS,
        "each thread takes a contiguous chunk of elements: right values, but a warp's 32 threads touch 32 chunks "
        "(uncoalesced: most bytes of every sector wasted)"),
    Bug("block_sum_serial_in_thread_zero", "07_block_reduce.py", "7.2",
        _BLOCK_SUM_TREE, _BLOCK_SUM_SERIAL,
        "thread 0 adds the 256 partial sums one after another: right total, but no tree (2 barriers, 255 serial steps)"),
    Bug("matmul_signed_phase_offset", "07_matmul.py", "7.3",
        "offset = np.uint32(phase * TILE)", "offset = phase * TILE",
        "the phase's offset is a signed int: fine on the simulator, but cupyx.jit cannot add it to unsigned threadIdx"),
    Bug("matmul_a_tile_loaded_down_columns", "07_matmul.py", "7.3",
        _MATMUL_A_LOAD, _MATMUL_A_LOAD_DOWN_COLUMNS,
        "each thread loads the transposed element of a's tile: right values, but a warp reads down columns of a "
        "(uncoalesced)"),
    # 7.5: the padded transpose
    Bug("transpose_tile_not_padded", "07_transpose.py", "7.5",
        _TRANSPOSE_TILE_ACCESSES, _TRANSPOSE_TILE_ACCESSES.replace("PITCH", "TILE"),
        "the tile's rows are 32 words apart: right values, but reading a column of the tile is a 32-way bank conflict"),
    Bug("transpose_no_barrier", "07_transpose.py", "7.5",
        "            tile[(ty + j) * PITCH + tx] = x[first_row + j, col]\n    jit.syncthreads()\n",
        "            tile[(ty + j) * PITCH + tx] = x[first_row + j, col]\n",
        "no barrier between filling the tile and reading it: threads read slots other warps have not written (a race)"),
    Bug("transpose_blocks_not_swapped", "07_transpose.py", "7.5",
        "    out_col = jit.blockIdx.y * TILE + tx\n    first_out_row = jit.blockIdx.x * TILE + ty\n",
        "    out_col = jit.blockIdx.x * TILE + tx\n    first_out_row = jit.blockIdx.y * TILE + ty\n",
        "the tile is transposed but written back at the block's own position, not the mirrored one"),
    Bug("transpose_writes_columns_directly", "07_transpose.py", "7.5",
        _TRANSPOSE_SECOND_HALF, _TRANSPOSE_WITHOUT_SHARED_MEMORY,
        "the naive transpose: each thread writes out[col, row] straight from x (a warp writes down a column of out: "
        "uncoalesced)"),
    Bug("transpose_out_bounds_swapped", "07_transpose.py", "7.5",
        "if first_out_row + j < cols and out_col < rows:", "if first_out_row + j < rows and out_col < cols:",
        "the bounds of out are taken from x's shape: ragged matrices are written past the edge or left unwritten"),
    Bug("transpose_tile_read_untransposed", "07_transpose.py", "7.5",
        "out[first_out_row + j, out_col] = tile[tx * PITCH + ty + j]",
        "out[first_out_row + j, out_col] = tile[(ty + j) * PITCH + tx]",
        "the tile is read by rows: each tile of out gets x's tile untransposed"),
    Bug("transpose_signed_loop", "07_transpose.py", "7.5",
        "    for j in range(np.uint32(0), np.uint32(TILE), np.uint32(BLOCK_ROWS)):\n        if first_row",
        "    for j in range(0, TILE, BLOCK_ROWS):\n        if first_row",
        "a signed loop index added to unsigned thread indices: runs on the simulator, cupyx.jit refuses it"),
    # 7.6: the warp-shuffle sum
    Bug("warp_sum_starts_at_eight", "07_warp_reduce.py", "7.6",
        "offset = np.uint32(16)  # a shuffle's offset is unsigned", "offset = np.uint32(8)",
        "the first shuffle step is 8, not 16: lanes 16-31 are never added into lane 0"),
    Bug("warp_sum_every_lane_writes", "07_warp_reduce.py", "7.6",
        "    if lane == 0:\n        warp_totals[warp] = total\n", "    warp_totals[warp] = total\n",
        "every lane writes its warp's slot, not only lane 0 (a race: 32 writers of one slot in one step)"),
    Bug("warp_sum_no_barrier", "07_warp_reduce.py", "7.6",
        "        warp_totals[warp] = total\n    jit.syncthreads()\n", "        warp_totals[warp] = total\n",
        "no barrier between the warps writing their totals and the first warp reading them (a race)"),
    Bug("warp_sum_reads_every_lane", "07_warp_reduce.py", "7.6",
        "        if lane < WARPS:\n            total = warp_totals[lane]\n", "        total = warp_totals[lane]\n",
        "the first warp reads warp_totals[lane] for all 32 lanes, past the 8 totals (out of bounds)"),
    Bug("warp_sum_every_lane_adds", "07_warp_reduce.py", "7.6",
        "        if lane == 0:\n            jit.atomic_add(out, 0, total)\n", "        jit.atomic_add(out, 0, total)\n",
        "every lane of the first warp adds its value to out[0], not only lane 0 with the block's total"),
    Bug("warp_sum_shuffles_up", "07_warp_reduce.py", "7.6",
        "        total += jit.shfl_down_sync(FULL_MASK, total, offset)\n        offset = offset // 2\n    if lane == 0:",
        "        total += jit.shfl_up_sync(FULL_MASK, total, offset)\n        offset = offset // 2\n    if lane == 0:",
        "shfl_up instead of shfl_down: the sum collects in lane 31, and lane 0 keeps only its own value"),
    Bug("warp_sum_second_level_keeps_stale_totals", "07_warp_reduce.py", "7.6",
        "    if warp == 0:\n        total = np.float32(0)\n", "    if warp == 0:\n",
        "lanes past the warp count keep their own partial sums instead of 0 in the second level"),
    # 7.7: the row-wise softmax
    Bug("softmax_sum_without_the_max", "07_softmax.py", "7.7",
        "total += jit.exp(x[row, col] - row_max)", "total += jit.exp(x[row, col])",
        "the sum of exponentials forgets to subtract the row's max (the numerator does): wrong, and overflows"),
    Bug("softmax_no_barrier_after_reading_the_max", "07_softmax.py", "7.7",
        "    jit.syncthreads()  # every thread has read slot 0 before the sum overwrites it\n", "",
        "no barrier between reading the max from slot 0 and thread 0 overwriting it with its sum (a race)"),
    Bug("softmax_one_block", "07_softmax.py", "7.7",
        "softmax_rows_kernel[rows, BLOCK](x, out, rows, cols)", "softmax_rows_kernel[1, BLOCK](x, out, rows, cols)",
        "the launch has one block, not one per row: only row 0 is computed"),
    Bug("softmax_max_in_chunks", "07_softmax.py", "7.7",
        _SOFTMAX_MAX_LOOP, _SOFTMAX_MAX_LOOP_IN_CHUNKS,
        "each thread takes a contiguous chunk of the row for the max: right values, uncoalesced reads"),
    Bug("softmax_max_tree_bound_off_by_one", "07_softmax.py", "7.7",
        "        if tid < step:\n            partial[tid] = max(", "        if tid <= step:\n            partial[tid] = max(",
        "tid <= step: at the first step thread `step` reads past the end of the shared array"),
    Bug("softmax_barrier_inside_the_if", "07_softmax.py", "7.7",
        "            partial[tid] += partial[tid + step]\n        jit.syncthreads()\n",
        "            partial[tid] += partial[tid + step]\n            jit.syncthreads()\n",
        "the barrier of the sum's tree is inside the if: only the active threads reach it (a divergent barrier)"),
    Bug("softmax_barrier_per_column_step", "07_softmax.py", "7.7",
        _SOFTMAX_MAX_LOOP, _SOFTMAX_MAX_LOOP_WITH_A_BARRIER,
        "a barrier inside the loop over the columns: one per pass of the row (or a divergent barrier on ragged rows)"),
    Bug("softmax_threads_not_warps", "07_softmax.py", "7.7",
        "BLOCK = 128  # threads per block", "BLOCK = 100  # threads per block",
        "a block of 100 threads: not a whole number of warps, and not a power of two for the trees"),
    # ------------------------------------------------------------------ 08 where memory goes
    Bug("storage_counts_every_view", "08_storage.py", "8.1",
        "        owners[id(owner)] = owner.nbytes\n", "        owners[id(tensor)] = owner.nbytes\n",
        "keyed by the tensor instead of its buffer: a view (or the same buffer under another name) is counted again"),
    Bug("storage_counts_only_the_view", "08_storage.py", "8.1",
        "        while base is not None:\n            if isinstance(base, np.ndarray):\n                owner = base\n"
        "            base = getattr(base, \"base\", None)\n", "",
        "never follows a view back to its owner: a slice counts only the elements it shows, and twice with its base"),
    Bug("storage_counts_elements", "08_storage.py", "8.1",
        "owners[id(owner)] = owner.nbytes", "owners[id(owner)] = owner.size",
        "counts elements, not bytes (forgot the element size)"),
    Bug("storage_sums_every_tensor", "08_storage.py", "8.1",
        "    return sum(owners.values())", "    return sum(_array_of(t).nbytes for t in tensors)",
        "adds up every view's own nbytes: views counted again, partial views not whole"),
    Bug("storage_stops_at_as_strided", "08_storage.py", "8.1",
        "        while base is not None:\n            if isinstance(base, np.ndarray):\n                owner = base\n"
        "            base = getattr(base, \"base\", None)\n",
        "        while isinstance(owner.base, np.ndarray):\n            owner = owner.base\n",
        "follows .base only while it is an ndarray: an as_strided or sliding-window view stops at itself and "
        "counts its own nbytes, once per view"),
    Bug("storage_keyed_by_size", "08_storage.py", "8.1",
        "owners[id(owner)] = owner.nbytes", "owners[owner.nbytes] = owner.nbytes",
        "owners keyed by their size: two distinct buffers of equal size count once"),
    Bug("step_bytes_forgets_bias", "08_step_arithmetic.py", "8.2",
        "parameters += n_in * n_out + n_out", "parameters += n_in * n_out",
        "the biases are left out of the parameters"),
    Bug("step_bytes_relu_after_the_last_layer", "08_step_arithmetic.py", "8.2",
        "hidden = sum(sizes[1:-1])", "hidden = sum(sizes[1:])",
        "counts a ReLU output after the last layer too (off by one)"),
    Bug("step_bytes_adam_one_copy", "08_step_arithmetic.py", "8.2",
        '"optimizer_state": STATE_COPIES[optimizer] * parameters * itemsize',
        '"optimizer_state": min(1, STATE_COPIES[optimizer]) * parameters * itemsize',
        "Adam's state counted as one copy of the parameters, not two moments"),
    Bug("step_bytes_activations_per_sample", "08_step_arithmetic.py", "8.2",
        '"activation": batch * hidden * itemsize', '"activation": hidden * itemsize',
        "the saved activations are counted for one sample, not the whole batch"),
    Bug("step_bytes_shared_buffer_twice", "08_step_arithmetic.py", "8.2",
        '"activation": batch * hidden * itemsize', '"activation": 2 * batch * hidden * itemsize',
        "a ReLU's output is counted again as the next Linear's input, though it is one buffer"),
    Bug("step_bytes_input_forgets_itemsize", "08_step_arithmetic.py", "8.2",
        '"input": batch * sizes[0] * itemsize', '"input": batch * sizes[0] * 4',
        "the input batch assumes 4-byte elements whatever the dtype"),
    Bug("split_remainder_not_in_the_pool", "08_allocator.py", "8.3",
        "        block.size = size\n        pool.add(remainder)\n", "        block.size = size\n",
        "the remainder is linked into the segment but never put in the pool: it can never be handed out"),
    Bug("split_forgets_the_back_link", "08_allocator.py", "8.3",
        "        if block.next is not None:\n            block.next.prev = remainder\n        block.next = remainder\n",
        "        block.next = remainder\n",
        "the block after the remainder still points back at the block: freeing it later merges the wrong block"),
    Bug("split_remainder_at_the_wrong_address", "08_allocator.py", "8.3",
        "remainder = Block(block.address + size, remainder_size", "remainder = Block(block.address + remainder_size, remainder_size",
        "the remainder starts remainder_size bytes in, not right after the handed-out part (the blocks overlap)"),
    Bug("split_keeps_the_block_whole", "08_allocator.py", "8.3",
        "        block.size = size\n        pool.add", "        pool.add",
        "the handed-out block keeps its old size: the block and its remainder overlap"),
    Bug("merge_forgets_the_address", "08_allocator.py", "8.4",
        "            block.address = neighbour.address\n", "",
        "merging with the block before keeps the freed block's address: the merged block starts too late"),
    Bug("merge_forgets_the_size", "08_allocator.py", "8.4",
        "        block.size += neighbour.size\n", "",
        "the merged block keeps its own size: the neighbour's bytes are lost from the segment"),
    Bug("merge_forgets_the_segment_start", "08_allocator.py", "8.4",
        "            if block.prev is None:\n                block.segment.first = block\n            else:\n                block.prev.next = block\n",
        "            if block.prev is not None:\n                block.prev.next = block\n",
        "merging into a segment's first block leaves the segment pointing at the absorbed block"),
    Bug("merge_forgets_the_back_link", "08_allocator.py", "8.4",
        "            if block.next is not None:\n                block.next.prev = block\n", "",
        "after merging with the block after, the block beyond still points back at the absorbed one"),
    Bug("split_remainder_points_back", "08_allocator.py", "8.3",
        "remainder.prev, remainder.next = block, block.next", "remainder.prev, remainder.next = block, block",
        "the remainder's next is the block itself: the segment's block list becomes a cycle"),
    # 8.5: the tracker's engine
    Bug("counting_peak_split_not_copied", "08_counting.py", "8.5",
        "counts.peak_by_category = by_category.copy()", "counts.peak_by_category = by_category",
        "the split at the peak is the live dict itself, so it follows every later event"),
    Bug("counting_peak_moves_on_a_tie", "08_counting.py", "8.5",
        "            if current > peak:", "            if current >= peak:",
        "a later moment as high as the peak replaces it: the split and its index are the last such moment's"),
    Bug("counting_frees_buffers_it_never_saw", "08_counting.py", "8.5",
        "            category = category_of.pop(buffer, None)\n            if category is None:\n"
        "                counts.uncounted.add(index)\n            else:\n                by_category[category] -= nbytes\n"
        "                current -= nbytes\n",
        "            category = category_of.pop(buffer, _CATEGORY_OF_TAG[tag])\n            by_category[category] -= nbytes\n"
        "            current -= nbytes\n",
        "a free of a buffer that was alive before counting began is subtracted: the counts go below what is alive"),
    Bug("counting_retag_moves_nothing", "08_counting.py", "8.5",
        "                by_category[previous] -= nbytes\n                by_category[category] += nbytes\n", "",
        "a relabelling changes the buffer's category but not the bytes by category"),
    Bug("counting_retag_keeps_the_old_category", "08_counting.py", "8.5",
        "                category_of[buffer] = category\n                by_category[previous]",
        "                by_category[previous]",
        "a relabelling moves the bytes but the buffer stays in its old category: its free takes from the wrong one"),
    Bug("counting_tag_used_as_category", "08_counting.py", "8.5",
        "category = category_of[buffer] = _CATEGORY_OF_TAG[tag]", "category = category_of[buffer] = tag",
        "the tag is used as the category: an op's 'output' is no temporary, a 'tensor' no input"),
    Bug("counting_free_forgets_the_category", "08_counting.py", "8.5",
        "                by_category[category] -= nbytes\n                current -= nbytes\n",
        "                current -= nbytes\n",
        "a free lowers the total but not its category: the categories no longer sum to the total"),
    Bug("counting_peak_index_not_recorded", "08_counting.py", "8.5",
        "                counts.peak_at = index\n", "",
        "the index of the peak's event is never recorded (the timeline cannot mark the peak)"),
    # 8.6: the allocator's size rules
    Bug("sizes_round_an_exact_multiple_up", "08_sizes.py", "8.6",
        "return -(-nbytes // MIN_BLOCK) * MIN_BLOCK", "return (nbytes // MIN_BLOCK + 1) * MIN_BLOCK",
        "a request that is already a multiple of 512 is rounded up by another 512"),
    Bug("sizes_round_with_float_division", "08_sizes.py", "8.6",
        "return -(-nbytes // MIN_BLOCK) * MIN_BLOCK", "return int((nbytes + MIN_BLOCK - 1) / MIN_BLOCK) * MIN_BLOCK",
        "rounds through a float: huge sizes lose their last bytes"),
    Bug("sizes_zero_gets_no_block", "08_sizes.py", "8.6",
        "    if nbytes < MIN_BLOCK:\n        return MIN_BLOCK\n", "",
        "a request of 0 bytes is rounded to 0: no block of its own"),
    Bug("sizes_1_mib_goes_to_the_large_pool", "08_sizes.py", "8.6",
        "return SMALL if size <= SMALL_REQUEST else LARGE", "return SMALL if size < SMALL_REQUEST else LARGE",
        "a request of exactly 1 MiB goes to the large pool"),
    Bug("sizes_10_mib_gets_a_20_mib_segment", "08_sizes.py", "8.6",
        "    if size < MIN_LARGE_ALLOC:\n        return LARGE_SEGMENT", "    if size <= MIN_LARGE_ALLOC:\n        return LARGE_SEGMENT",
        "a request of exactly 10 MiB gets a shared 20 MiB segment instead of its own"),
    Bug("sizes_big_segment_not_rounded", "08_sizes.py", "8.6",
        "return -(-size // ROUND_LARGE) * ROUND_LARGE", "return size",
        "a request of 10 MiB or more gets a segment of exactly its size, not rounded up to 2 MiB"),
    Bug("sizes_split_ignores_the_remainder_rule", "08_sizes.py", "8.6",
        "    if pool == SMALL:\n        return remainder >= MIN_BLOCK\n    return remainder > SMALL_REQUEST",
        "    return remainder >= MIN_BLOCK",
        "splits whenever 512 bytes are left, in the large pool too: 11 MiB + 1 B in a 12 MiB segment leaves a "
        "useless block of less than 1 MiB"),
    Bug("sizes_split_at_exactly_1_mib_left", "08_sizes.py", "8.6",
        "return remainder > SMALL_REQUEST", "return remainder >= SMALL_REQUEST",
        "a large block splits when exactly 1 MiB would be left (it must be more)"),
    # 9.1: float32 -> float16 on the bits
    Bug("f16_round_half_up", "09_float16_bits.py", "9.1",
        "kept = kept + ((rest > half) | ((rest == half) & ((kept & 1) == 1)))", "kept = kept + (rest >= half)",
        "rounds half up (away from zero) instead of half to even"),
    Bug("f16_truncates", "09_float16_bits.py", "9.1",
        "kept = kept + ((rest > half) | ((rest == half) & ((kept & 1) == 1)))", "kept = kept",
        "drops the 13 low bits without rounding (toward zero)"),
    Bug("f16_subnormals_flushed_to_zero", "09_float16_bits.py", "9.1",
        "    biased = np.maximum(exponent + BIAS_16 - 1, 0).astype(np.uint32)\n",
        "    biased = np.maximum(exponent + BIAS_16 - 1, 0).astype(np.uint32)\n"
        "    kept = np.where(exponent < MIN_NORMAL_EXPONENT, 0, kept)\n",
        "results below 2**-14 are flushed to zero instead of becoming subnormal"),
    Bug("f16_overflow_saturates_at_65504", "09_float16_bits.py", "9.1",
        "np.where(exponent > BIAS_16, INFINITY_16, np.minimum((biased << 10) + kept, INFINITY_16))",
        "np.where(exponent > BIAS_16, 0x7BFF, np.minimum((biased << 10) + kept, 0x7BFF))",
        "values too large for float16 saturate at 65504 instead of overflowing to infinity"),
    Bug("f16_nan_becomes_inf", "09_float16_bits.py", "9.1",
        "np.where(special, np.where(fraction == 0, INFINITY_16, INFINITY_16 | nan_fraction), magnitude)",
        "np.where(special, INFINITY_16, magnitude)",
        "every NaN becomes an infinity (only the exponent bits are looked at)"),
    Bug("f16_nan_payload_in_low_bits_becomes_inf", "09_float16_bits.py", "9.1",
        "nan_fraction = np.maximum(fraction >> DROPPED, 1)", "nan_fraction = fraction >> DROPPED",
        "a NaN whose payload sits only in the 13 dropped bits becomes an infinity"),
    Bug("f16_negative_zero_loses_its_sign", "09_float16_bits.py", "9.1",
        "return (sign | magnitude).astype(np.uint16)", "return np.where(magnitude == 0, 0, sign | magnitude).astype(np.uint16)",
        "-0.0 (and negative values that round to zero) come back as +0.0"),
    Bug("f16_subnormal_ties_at_the_normal_halfway_bit", "09_float16_bits.py", "9.1",
        "half = np.uint32(1) << (shift - np.uint32(1))", "half = np.uint32(1) << np.uint32(DROPPED - 1)",
        "the halfway point of a subnormal result is taken at bit 12, as for normal ones"),
    Bug("f16_exponent_bias_off_by_one", "09_float16_bits.py", "9.1",
        "biased = np.maximum(exponent + BIAS_16 - 1, 0).astype(np.uint32)",
        "biased = np.maximum(exponent + BIAS_16, 0).astype(np.uint32)",
        "the exponent is re-biased by 15 and the implicit 1 added on top: every normal result is twice too large"),
    # 9.4: the loss scaler's state machine
    Bug("scale_grows_after_an_overflow", "09_scaler_state.py", "9.4",
        "    if found_inf:\n        return float32(scale * backoff_factor), 0\n    successful = growth_tracker + 1\n"
        "    if successful == growth_interval:\n        grown = float32(scale * growth_factor)\n"
        "        return (grown if math.isfinite(grown) else scale), 0\n",
        "    successful = growth_tracker + 1\n    if successful == growth_interval:\n"
        "        grown = float32(scale * growth_factor)\n        return (grown if math.isfinite(grown) else scale), 0\n"
        "    if found_inf:\n        return float32(scale * backoff_factor), 0\n",
        "the interval is checked before the overflow: a step that overflows on the growth_interval-th step grows the scale"),
    Bug("growth_tracker_not_reset_after_growth", "09_scaler_state.py", "9.4",
        "return (grown if math.isfinite(grown) else scale), 0", "return (grown if math.isfinite(grown) else scale), successful",
        "the growth tracker is not reset when the scale grows: it never reaches the interval again"),
    Bug("growth_tracker_not_reset_on_overflow", "09_scaler_state.py", "9.4",
        "return float32(scale * backoff_factor), 0", "return float32(scale * backoff_factor), growth_tracker",
        "an overflow backs off but keeps counting the clean steps from before it"),
    Bug("scale_grows_to_infinity", "09_scaler_state.py", "9.4",
        "return (grown if math.isfinite(grown) else scale), 0", "return grown, 0",
        "a growth past float32's largest number makes the scale infinite"),
    Bug("scale_kept_in_float64", "09_scaler_state.py", "9.4",
        "grown = float32(scale * growth_factor)", "grown = scale * growth_factor",
        "the grown scale is not rounded to float32 (and 2**128 counts as finite)"),
    Bug("scale_grows_one_step_late", "09_scaler_state.py", "9.4",
        "if successful == growth_interval:", "if growth_tracker == growth_interval:",
        "the scale grows after growth_interval + 1 clean steps"),
    Bug("bfloat16_gets_a_loss_scale", "09_scaler_state.py", "9.4",
        "return is_floating_point(dtype) and float(finfo(dtype).tiny) > float(finfo(np.float32).tiny)",
        "return is_floating_point(dtype) and finfo(dtype).bits < 32",
        "a loss scale for bfloat16 too, because float16 needs one (16 bits wide, but float32's exponent range)"),
    # 9.2: the autocast op policy
    Bug("softmax_in_float16", "09_autocast_policy.py", "9.2",
        "    if kind == \"float32\":\n        return float32\n", "    if kind == \"float32\":\n        return autocast_dtype\n",
        "the float32 list runs in the region's dtype too: softmax, exp and the losses in float16"),
    Bug("float32_list_left_alone", "09_autocast_policy.py", "9.2",
        "    if kind == \"float32\":\n        return float32\n", "    if kind == \"float32\":\n        return None\n",
        "ops on the float32 list keep their inputs' dtype: softmax of a float16 activation stays float16"),
    Bug("float64_tensors_cast_down", "09_autocast_policy.py", "9.2",
        "return is_floating_point(dtype) and dtype != float64 and a._device.type == device_type",
        "return is_floating_point(dtype) and a._device.type == device_type",
        "float64 tensors are cast to float16 too (PyTorch never casts float64)"),
    Bug("other_device_types_cast", "09_autocast_policy.py", "9.2",
        "return is_floating_point(dtype) and dtype != float64 and a._device.type == device_type",
        "return is_floating_point(dtype) and dtype != float64",
        "tensors on a device type the region does not cover are cast as well"),
    Bug("promote_always_the_region_dtype", "09_autocast_policy.py", "9.2",
        "return float32 if any(d == float32 for d in widest) or len(set(widest)) > 1 else autocast_dtype",
        "return autocast_dtype",
        "cat and stack run in the region's dtype even with a float32 input (a lossy cast instead of a widening one)"),
    Bug("promote_counts_tensors_it_cannot_cast", "09_autocast_policy.py", "9.2",
        "widest = [a._data.dtype for a in args if _eligible(a, device_type)]",
        "widest = [a._data.dtype for a in args if isinstance(a, Tensor)]",
        "the widest dtype is taken over every tensor, float64 and integer ones included"),
    Bug("promote_mixed_16_bit_formats_to_region_dtype", "09_autocast_policy.py", "9.2",
        "any(d == float32 for d in widest) or len(set(widest)) > 1", "any(d == float32 for d in widest)",
        "float16 and bfloat16 meeting in a cat go to the region's dtype instead of float32"),
    Bug("weight_cache_never_used", "09_autocast_policy.py", "9.2",
        "convert = cached_cast if mode.cache_enabled else cast", "convert = cast",
        "every use of a weight casts it again: the region's weight cache is never used"),
    Bug("integer_arguments_cast", "09_autocast_policy.py", "9.2",
        "convert(a, target) if _eligible(a, device_type) and a._data.dtype != target else a",
        "convert(a, target) if isinstance(a, Tensor) and a._data.dtype != target else a",
        "every tensor argument is cast, the integer labels of a loss too"),
    # 9.3: the master-weight step
    Bug("clip_before_unscale", "09_master_step.py", "9.3",
        "    found_inf = None\n", "    found_inf = None\n    if clip is not None:\n        clip(model_params)\n",
        "clips the model's gradients before unscaling them: the clip sees the scaled norm and lets everything through"),
    Bug("clip_hook_never_called", "09_master_step.py", "9.3",
        "    if clip is not None:\n        clip(master_params)\n    step()\n", "    step()\n",
        "the clip hook is never called"),
    Bug("master_copy_never_written_back", "09_master_step.py", "9.3",
        "    with no_grad():\n        for model, master in zip(model_params, master_params):\n            model.copy_(master)\n", "",
        "the masters are updated but never copied down: the model keeps its old weights"),
    Bug("unscale_in_16_bits", "09_master_step.py", "9.3",
        "master.grad = model.grad.to(float32, copy=True)\n        found_inf = unscale_grad_(master.grad, inv_scale, found_inf)",
        "master.grad = (model.grad * inv_scale).to(float32)\n"
        "        found_inf = unscale_grad_(master.grad, 1.0, found_inf)",
        "unscales in the model's 16-bit dtype: the gradients the loss scale lifted underflow again"),
    Bug("each_flag_replaces_the_last", "09_master_step.py", "9.3",
        "found_inf = unscale_grad_(master.grad, inv_scale, found_inf)", "found_inf = unscale_grad_(master.grad, inv_scale)",
        "a new found-inf flag per gradient: only the last weight's inf/NaN skips the step"),
    Bug("step_runs_before_the_check", "09_master_step.py", "9.3",
        "    if found_inf is not None and float(found_inf[0].item()):\n        return True\n    if clip is not None:\n"
        "        clip(master_params)\n    step()\n",
        "    if clip is not None:\n        clip(master_params)\n    step()\n"
        "    if found_inf is not None and float(found_inf[0].item()):\n        return True\n",
        "the optimizer steps before the inf/NaN check: a skipped step has already written inf/NaN into the masters"),
    Bug("copy_down_rebinds_instead_of_copying", "09_master_step.py", "9.3",
        "            model.copy_(master)", "            model._data = master._data.astype(model._data.dtype)",
        "the model's array is replaced, not written in place: its version counter never moves"),
    Bug("missing_gradient_keeps_the_stale_master_gradient", "09_master_step.py", "9.3",
        "        if model.grad is None:\n            master.grad = None\n            continue\n",
        "        if model.grad is None:\n            continue\n",
        "a weight without a gradient leaves its master's gradient from the last step: the optimizer applies it again"),
    # 9.5: the fused unscale + inf/NaN check kernel
    Bug("unscale_flag_reset_on_finite", "09_loss_scale.py", "9.5",
        "        if not jit.isfinite(g):\n            found_inf[0] = np.float32(1)\n",
        "        if not jit.isfinite(g):\n            found_inf[0] = np.float32(1)\n        else:\n"
        "            found_inf[0] = np.float32(0)\n",
        "a finite gradient writes 0 into the flag: an inf seen earlier (or by another gradient of the step) is forgotten"),
    Bug("unscale_flag_counts", "09_loss_scale.py", "9.5",
        "            found_inf[0] = np.float32(1)", "            found_inf[0] = found_inf[0] + np.float32(1)",
        "the flag counts the non-finite values instead of being set to 1 (a read-modify-write race on a GPU)"),
    Bug("unscale_checks_isfinite_the_wrong_way", "09_loss_scale.py", "9.5",
        "        if not jit.isfinite(g):", "        if jit.isfinite(g):",
        "the flag is set by the finite values"),
    Bug("unscale_bound_off_by_one", "09_loss_scale.py", "9.5",
        "    while i < n:\n        g = grads[i] * inv_scale[0]", "    while i <= n:\n        g = grads[i] * inv_scale[0]",
        "the loop runs one element past the end"),
    Bug("unscale_no_grid_stride", "09_loss_scale.py", "9.5",
        "    while i < n:\n        g = grads[i] * inv_scale[0]", "    if i < n:\n        g = grads[i] * inv_scale[0]",
        "each thread handles one element: a grid smaller than the array leaves gradients scaled and unchecked"),
    Bug("unscale_two_passes", "09_loss_scale.py", "9.5",
        "    while i < n:\n        g = grads[i] * inv_scale[0]\n        if not jit.isfinite(g):\n"
        "            found_inf[0] = np.float32(1)\n        grads[i] = g\n        i += stride\n",
        "    while i < n:\n        if not jit.isfinite(grads[i] * inv_scale[0]):\n            found_inf[0] = np.float32(1)\n"
        "        i += stride\n    i = jit.grid(1)\n    while i < n:\n        grads[i] = grads[i] * inv_scale[0]\n"
        "        i += stride\n",
        "a check pass, then a multiply pass: every gradient is read twice"),
    Bug("unscale_forgets_to_write", "09_loss_scale.py", "9.5",
        "        grads[i] = g\n        i += stride\n", "        i += stride\n",
        "the product is checked but never written back: the gradients stay scaled"),
    # 10.1: checkpoint as one Function (the reentrant variant)
    Bug("reentrant_saves_the_output", "10_reentrant.py", "10.1",
        "        ctx.save_for_backward(*values)\n        with no_grad():\n            out = call.fn(*inputs)\n"
        "        return call.output(out, values)\n" + _REENTRANT_BACKWARD_HEAD
        + "        leaves = ctx.call.arguments(ctx.saved_tensors, requiring_grad=True)\n",
        "        ctx.values = values\n        with no_grad():\n            out = call.fn(*inputs)\n"
        "        result = call.output(out, values)\n        ctx.save_for_backward(result)\n        return result\n"
        + _REENTRANT_BACKWARD_HEAD + "        leaves = ctx.call.arguments(ctx.values, requiring_grad=True)\n",
        "saves the block's output for backward, as an ordinary op would, and keeps the inputs on ctx for the "
        "recompute: the gradients are right, but the node keeps an activation the checkpoint was meant to free"),
    Bug("reentrant_forward_records_the_graph", "10_reentrant.py", "10.1",
        "        with no_grad():\n            out = call.fn(*inputs)\n", "        out = call.fn(*inputs)\n",
        "the first run records a graph: the block's activations stay alive until its forward ends"),
    Bug("reentrant_recomputes_on_detached_inputs", "10_reentrant.py", "10.1",
        "leaves = ctx.call.arguments(ctx.saved_tensors, requiring_grad=True)",
        "leaves = ctx.call.arguments(ctx.saved_tensors)",
        "the recompute runs on inputs that do not require grad: the parameters get gradients, the inputs none"),
    Bug("reentrant_recomputes_under_no_grad", "10_reentrant.py", "10.1",
        "ctx.call.autocast(), enable_grad(),", "ctx.call.autocast(), no_grad(),",
        "the recompute runs under no_grad() as the first run did: there is no graph to backpropagate through"),
    Bug("reentrant_runs_the_block_twice", "10_reentrant.py", "10.1",
        "            out = ctx.call.fn(*leaves)\n        out.backward(make_tensor(grad, out.device))\n",
        "            out = ctx.call.fn(*leaves)\n            ctx.call.fn(*leaves).backward(make_tensor(grad, out.device))\n",
        "backward runs the block once for its output and once more to backpropagate"),
    Bug("reentrant_rng_not_restored", "10_reentrant.py", "10.1",
        "with rng_states.restored_rng(ctx.rng), ctx.call.autocast(), enable_grad(),",
        "with ctx.call.autocast(), enable_grad(),",
        "the recompute draws from the generators as they are: dropout draws another mask"),
    Bug("reentrant_rng_captured_after_the_first_run", "10_reentrant.py", "10.1",
        "        ctx.rng = rng_states.capture_rng(inputs) if call.preserve_rng_state else None\n"
        "        ctx.save_for_backward(*values)\n        with no_grad():\n            out = call.fn(*inputs)\n",
        "        ctx.save_for_backward(*values)\n        with no_grad():\n            out = call.fn(*inputs)\n"
        "        ctx.rng = rng_states.capture_rng(inputs) if call.preserve_rng_state else None\n",
        "the random states are captured after the first run: the recompute starts where the mask's draw ended"),
    Bug("reentrant_drops_plain_arguments", "10_reentrant.py", "10.1",
        "        ctx.save_for_backward(*values)\n",
        "        ctx.save_for_backward(*[v for v in values if hasattr(v, \"shape\")])\n",
        "only the arrays are saved (save_for_backward is for tensors, as in PyTorch): the recompute lacks the plain "
        "arguments"),
    Bug("reentrant_recompute_outside_autocast", "10_reentrant.py", "10.1",
        "with rng_states.restored_rng(ctx.rng), ctx.call.autocast(), enable_grad(),",
        "with rng_states.restored_rng(ctx.rng), enable_grad(),",
        "the recompute runs outside the first run's autocast region: in float32 where the first run used bfloat16"),
    Bug("reentrant_batchnorm_counts_the_batch_twice", "10_reentrant.py", "10.1",
        "enable_grad(), buffers_put_back():", "enable_grad():",
        "the recompute runs BatchNorm a second time and its running statistics count the batch twice"),
    # 10.2: capture and restore the random-number states
    Bug("rng_not_restored", "10_rng_states.py", "10.2",
        "    with fork_rng(devices=[d for d in states if d != \"cpu\"]):\n        for device, state in states.items():\n"
        "            set_rng_state(state, device)\n        yield\n",
        "    with fork_rng(devices=[d for d in states if d != \"cpu\"]):\n        yield\n",
        "forks the generators but never puts the captured states in: the replay draws another mask"),
    Bug("rng_restored_without_fork", "10_rng_states.py", "10.2",
        "    with fork_rng(devices=[d for d in states if d != \"cpu\"]):\n        for device, state in states.items():\n"
        "            set_rng_state(state, device)\n        yield\n",
        "    for device, state in states.items():\n        set_rng_state(state, device)\n    yield\n",
        "puts the captured states in and leaves them: after the replay the generators repeat the block's numbers"),
    Bug("rng_restored_after_the_block", "10_rng_states.py", "10.2",
        "            set_rng_state(state, device)\n        yield\n",
        "            pass\n        yield\n        for device, state in states.items():\n"
        "            set_rng_state(state, device)\n",
        "puts the captured states in after the block ran instead of before: the replay starts from where the first "
        "run and the draws since left the generators"),
    Bug("rng_captures_only_the_cpu", "10_rng_states.py", "10.2",
        "devices = [\"cpu\"] + sorted({str(a.device) for a in args if isinstance(a, Tensor) and a.device.type != \"cpu\"})",
        "devices = [\"cpu\"]",
        "captures only the CPU's generator: dropout on another device draws another mask in the replay"),
    Bug("rng_none_still_forks", "10_rng_states.py", "10.2",
        "    if states is None:\n        yield\n        return\n"
        "    with fork_rng(devices=[d for d in states if d != \"cpu\"]):\n        for device, state in states.items():\n",
        "    with fork_rng(devices=[d for d in (states or {}) if d != \"cpu\"]):\n"
        "        for device, state in (states or {}).items():\n",
        "restored_rng(None) still puts the generators back afterwards: the block's draws are undone"),
    Bug("rng_put_back_by_hand_but_not_on_error", "10_rng_states.py", "10.2",
        "    with fork_rng(devices=[d for d in states if d != \"cpu\"]):\n        for device, state in states.items():\n"
        "            set_rng_state(state, device)\n        yield\n",
        "    outside = {device: get_rng_state(device) for device in states}\n    for device, state in states.items():\n"
        "        set_rng_state(state, device)\n    yield\n    for device, state in outside.items():\n"
        "        set_rng_state(state, device)\n",
        "puts the outside states back by hand after the block, but not when the block raises"),
    # 10.3: segment_bounds
    Bug("segments_remainder_to_the_first", "10_segments.py", "10.3",
        "    bounds = [(start, start + size - 1) for start in range(0, size * (segments - 1), size)]\n"
        "    last_start = bounds[-1][1] + 1 if bounds else 0\n    return bounds + [(last_start, n_functions - 1)]\n",
        "    first = size + n_functions % segments\n"
        "    return [(0, first - 1)] + [(start, start + size - 1) for start in range(first, n_functions, size)]\n",
        "the first segment takes the remainder instead of the last"),
    Bug("segments_exclusive_ends", "10_segments.py", "10.3",
        "    bounds = [(start, start + size - 1) for start in range(0, size * (segments - 1), size)]\n"
        "    last_start = bounds[-1][1] + 1 if bounds else 0\n    return bounds + [(last_start, n_functions - 1)]\n",
        "    bounds = [(start, start + size) for start in range(0, size * (segments - 1), size)]\n"
        "    last_start = bounds[-1][1] if bounds else 0\n    return bounds + [(last_start, n_functions)]\n",
        "the end bounds are exclusive (Python's slices) where checkpoint_sequential's are inclusive"),
    Bug("segments_extra_empty_segment", "10_segments.py", "10.3",
        "range(0, size * (segments - 1), size)", "range(0, size * segments, size)",
        "segments equal segments and then the rest as one more: an empty extra segment when segments divides n"),
    Bug("segments_remainder_dropped", "10_segments.py", "10.3",
        "    bounds = [(start, start + size - 1) for start in range(0, size * (segments - 1), size)]\n"
        "    last_start = bounds[-1][1] + 1 if bounds else 0\n    return bounds + [(last_start, n_functions - 1)]\n",
        "    return [(start, start + size - 1) for start in range(0, size * segments, size)]\n",
        "equal segments of n // segments functions and nothing else: the last n % segments functions are never run"),
    # 10.4: plan_chain, the planning dynamic program
    Bug("chain_dp_ignores_boundary_bytes", "10_chain_dp.py", "10.4",
        "(kept + input_bytes[j], cost_flops + recompute, max(peak, kept + input_bytes[j] + saved), True),",
        "(kept, cost_flops + recompute, max(peak, kept + saved), True),",
        "a checkpointed segment keeps nothing: its input (the boundary it is rebuilt from) is left out of the "
        "forward total and of its recompute peak, so plans over the budget are returned"),
    Bug("chain_dp_checkpoint_keeps_its_saved_bytes_too", "10_chain_dp.py", "10.4",
        "(kept + input_bytes[j], cost_flops + recompute, max(peak, kept + input_bytes[j] + saved), True),",
        "(kept + input_bytes[j] + saved, cost_flops + recompute, max(peak, kept + input_bytes[j] + saved), True),",
        "a checkpointed segment's saved bytes are counted in the forward total too, as if it kept them: too "
        "pessimistic, it returns None or recomputes more on budgets that fit"),
    Bug("chain_dp_greedy_largest_first", "10_chain_dp.py", "10.4",
        _CHAIN_DP_BODY,
        "    n = len(saved_bytes)\n    checkpointed = set()\n\n"
        "    def segments():  # each run of stored layers one segment, each checkpointed layer its own\n"
        "        out = []\n        for i in range(n):\n"
        "            if i not in checkpointed and out and not out[-1][2]:\n"
        "                out[-1] = (out[-1][0], i, False)\n            else:\n"
        "                out.append((i, i, i in checkpointed))\n        return out\n\n"
        "    for layer in sorted(range(n), key=lambda i: -saved_bytes[i]):  # the largest layers first\n"
        "        if chain_peak(segments(), saved_bytes, input_bytes) <= budget:\n            break\n"
        "        checkpointed.add(layer)\n"
        "    plan = evaluate_plan(segments(), saved_bytes, input_bytes, flops)\n"
        "    return plan if plan.peak_bytes <= budget else None\n",
        "greedy instead of a dynamic program: checkpoints the layers that save the most, one at a time, until the "
        "peak fits"),
    Bug("chain_dp_exclusive_segment_ends", "10_chain_dp.py", "10.4",
        "plan + ((j, i - 1, checkpointed),)", "plan + ((j, i, checkpointed),)",
        "the segments' ends are exclusive (Python's slices) where a plan's are inclusive: they overlap"),
    Bug("chain_dp_fewest_segments_first", "10_chain_dp.py", "10.4",
        _CHAIN_DP_BODY,
        _CHAIN_DP_BODY.replace("cost = (new_flops, count + 1, new_peak)", "cost = (count + 1, new_flops, new_peak)")
        .replace("kept, ((recompute, _, peak), segments)", "kept, ((_, recompute, peak), segments)")
        .replace("((cost_flops, count, peak), plan)", "((count, cost_flops, peak), plan)"),
        "compares plans by their number of segments first: returns the plan with the fewest segments that fits "
        "instead of the one that recomputes the least"),
    Bug("chain_dp_checkpoints_everything_when_tight", "10_chain_dp.py", "10.4",
        "    n = len(saved_bytes)\n    saved_upto",
        "    n = len(saved_bytes)\n"
        "    if sum(saved_bytes) > budget:  # storing everything does not fit: checkpoint every layer\n"
        "        plan = evaluate_plan([(i, i, True) for i in range(n)], saved_bytes, input_bytes, flops)\n"
        "        return plan if plan.peak_bytes <= budget else None\n"
        "    saved_upto",
        "when storing everything does not fit, checkpoints every layer instead of choosing which"),
    Bug("chain_dp_never_stores_everything", "10_chain_dp.py", "10.4",
        "    if not best[n]:\n        return None\n"
        "    kept, ((recompute, _, peak), segments) = min(best[n].items(), key=lambda item: item[1][0])\n",
        "    answers = {k: v for k, v in best[n].items() if any(c for _, _, c in v[1])}  # plans that checkpoint\n"
        "    if not answers:\n        return None\n"
        "    kept, ((recompute, _, peak), segments) = min(answers.items(), key=lambda item: item[1][0])\n",
        "only plans that checkpoint something are answers: storing everything, the plan that recomputes nothing, "
        "is never returned, not even on a budget it fits"),
    # 11.1: fitting_configuration, the search for the first configuration that fits
    Bug("fitting_compares_allocated_bytes", "11_fitting.py", "11.1",
        "step.judged(step.fits_card(profile))", "step.judged(step.peak <= profile.usable_bytes)",
        "judges a step by its allocated peak (the tensors' bytes) instead of the card's verdict"),
    Bug("fitting_ignores_the_cuda_context", "11_fitting.py", "11.1",
        "step.judged(step.fits_card(profile))", "step.judged(step.reserved <= profile.memory_bytes)",
        "compares by hand with the card's whole memory, as if the CUDA context took none of it"),
    Bug("fitting_judges_by_the_unbounded_reserved_peak", "11_fitting.py", "11.1",
        "step.judged(step.fits_card(profile))", "step.judged(step.reserved <= profile.usable_bytes)",
        "judges a step by its reserved peak on a card big enough: a full card empties its cache and retries, "
        "so it runs steps this says do not fit"),
    Bug("fitting_checkpoints_before_mixed_precision", "11_fitting.py", "11.1",
        "order = [first, first.but(amp=amp), first.but(amp=amp, checkpoint=checkpoint)]",
        "order = [first, first.but(checkpoint=checkpoint), first.but(amp=amp, checkpoint=checkpoint)]",
        "turns the knobs in the wrong order: checkpointing before mixed precision"),
    Bug("fitting_accumulation_grows_the_batch", "11_fitting.py", "11.1",
        "first.but(amp=amp, checkpoint=checkpoint, accumulate=k)",
        "first.but(amp=amp, checkpoint=checkpoint, accumulate=k, batch_size=batch_size * k)",
        "forgets that accumulation divides the batch: k micro-batches of the whole batch, a k times larger "
        "effective batch"),
    Bug("fitting_keeps_going_after_a_fit", "11_fitting.py", "11.1",
        "        if step.fits:\n            return FitSearch(profile, tuple(tried), step)\n",
        "        if step.fits and config is order[-1]:\n            return FitSearch(profile, tuple(tried), step)\n"
        "        if step.fits:\n            chosen = step\n",
        "does not stop at the first configuration that fits: it tries them all"),
    # 11.3: the layer monitor's hooks
    Bug("ch11_monitor_hooks_never_removed", "11_layer_monitor.py", "11.3",
        "        while self.handles:\n            self.handles.pop().remove()\n",
        "        self.handles.clear()\n",
        "exit forgets the handles without removing them: the hooks stay on the model and keep recording"),
    Bug("ch11_monitor_only_forward_hooks_removed", "11_layer_monitor.py", "11.3",
        "            self.handles.append(self.optimizer.register_step_pre_hook(",
        "            self.optimizer_handle = (self.optimizer.register_step_pre_hook(",
        "the optimizer's step hook is registered but not kept with the others, so exit never removes it"),
    Bug("ch11_monitor_whole_model_norm", "11_layer_monitor.py", "11.3",
        "            self.grad_norms[name].append(gradient_norm(params))\n",
        "            self.grad_norms[name].append(gradient_norm(self.model.parameters()))\n",
        "every layer records the gradient norm of the whole model instead of its own parameters'"),
    Bug("ch11_monitor_zero_gradient_for_a_frozen_layer", "11_layer_monitor.py", "11.3",
        "    return math.sqrt(total) if seen else None\n",
        "    return math.sqrt(total)\n",
        "a layer none of whose parameters has a gradient records 0.0 instead of None"),
    Bug("ch11_monitor_statistics_of_the_input", "11_layer_monitor.py", "11.3",
        "                records.append(activation_stats(output._data, self.steps))\n",
        "                records.append(activation_stats(args[0]._data, self.steps))\n",
        "the forward hook records the statistics of the module's input instead of its output"),
    Bug("ch11_monitor_keeps_the_output_alive", "11_layer_monitor.py", "11.3",
        "                records.append(activation_stats(output._data, self.steps))\n",
        "                records.append(activation_stats(output._data, self.steps))\n"
        "                hook.last_output = output  # to look at it later\n",
        "the hook keeps a reference to the last output of each module: the activation memory is held"),
    Bug("ch11_monitor_zeros_with_a_tolerance", "11_layer_monitor.py", "11.3",
        "float(xp.count_nonzero(x == 0)) / x.size",
        "float(xp.count_nonzero(xp.abs(x) < 1e-6)) / x.size",
        "counts elements near 0 (|x| < 1e-6) as zeros instead of exact zeros"),
    Bug("ch11_monitor_sample_std", "11_layer_monitor.py", "11.3",
        "float(x.std())", "float(x.std(ddof=1))",
        "the sample standard deviation (n - 1) instead of the population one"),
    Bug("ch11_monitor_max_instead_of_max_abs", "11_layer_monitor.py", "11.3",
        "float(xp.abs(x).max())", "float(x.max())",
        "the largest value instead of the largest magnitude (a negative output's size is missed)"),
    Bug("ch11_monitor_records_eval_forwards", "11_layer_monitor.py", "11.3",
        "            if module.training and isinstance(output, Tensor):\n",
        "            if isinstance(output, Tensor):\n",
        "forwards in eval mode (evaluation, no graph) are recorded too"),
    Bug("ch11_monitor_hook_closure_sees_the_last_name", "11_layer_monitor.py", "11.3",
        "        for name, module in self.modules.items():\n"
        "            self.handles.append(module.register_forward_hook(self._forward_hook(name)))\n",
        "        for name, module in self.modules.items():\n"
        "            self.handles.append(module.register_forward_hook(\n"
        "                lambda m, args, output: self._forward_hook(name)(m, args, output)))\n",
        "the hooks are lambdas made in the loop: each looks up the loop variable when it runs and records under "
        "the last module's name"),
    # 11.2: restore a training run
    Bug("resume_forgets_the_rng", "11_run_state.py", "11.2",
        "    set_rng_states(state[\"rng\"])\n", "",
        "restores everything but the random-number generators: dropout draws other masks after resuming"),
    Bug("resume_forgets_the_data_position", "11_run_state.py", "11.2",
        "run.step_count, run.epoch, run.position = counters[\"step\"], counters[\"epoch\"], counters[\"position\"]",
        "run.step_count, run.epoch = counters[\"step\"], counters[\"epoch\"]",
        "restores the loader's order but not the run's position in the epoch: the run no longer knows when the "
        "epoch ends"),
    Bug("resume_restarts_the_epoch", "11_run_state.py", "11.2",
        "    run.train_loader.load_state_dict(state[\"data\"][\"order\"])\n",
        "    run.train_loader.load_state_dict({**state[\"data\"][\"order\"], \"position\": 0})\n",
        "restores the epoch's order but starts it from its first batch: batches seen before the stop are seen again"),
    Bug("resume_forgets_the_data_order", "11_run_state.py", "11.2",
        "    run.train_loader.load_state_dict(state[\"data\"][\"order\"])\n", "",
        "never restores the loader: the resumed run draws the first epoch's order again"),
    Bug("resume_forgets_the_scaler", "11_run_state.py", "11.2",
        "    run.scaler.load_state_dict(state[\"scaler\"])\n", "",
        "forgets the loss scaler: the resumed float16 run starts from the initial scale and overflows again"),
    Bug("resume_aliases_the_optimizer_state", "11_run_state.py", "11.2",
        "    run.optimizer.load_state_dict(state[\"optimizer\"][\"state\"])\n",
        "    saved = state[\"optimizer\"][\"state\"]\n"
        "    params = [p for group in run.optimizer.param_groups for p in group[\"params\"]]\n"
        "    for group, saved_group in zip(run.optimizer.param_groups, saved[\"param_groups\"]):\n"
        "        group.update({k: v for k, v in saved_group.items() if k != \"params\"})\n"
        "    for index, moments in saved[\"state\"].items():\n"
        "        run.optimizer.state[params[index]] = moments\n",
        "puts the saved optimizer state in by reference: training updates the state's own tensors, so a second "
        "resume from it starts from moments of the future"),
    Bug("resume_forgets_the_schedule", "11_run_state.py", "11.2",
        "    if run.scheduler is not None:\n        run.scheduler.load_state_dict(copy.deepcopy(state[\"scheduler\"][\"state\"]))\n",
        "",
        "forgets the learning-rate schedule: the resumed run starts the cosine from its top again"),
    Bug("resume_forgets_the_history", "11_run_state.py", "11.2",
        "    run.history = RunHistory.from_state(state[\"history\"])\n", "",
        "forgets the history: the resumed run's losses start over as if it had taken no step"),
]
