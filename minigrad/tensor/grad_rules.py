"""The backward rules, in one place: the chapter-04 exercises.

Every op of :mod:`minigrad.tensor` has a ``backward`` that turns the gradient
of its output into gradients of its inputs. Most are one line (``d(a*b)/da =
b``) and live next to their op. The rules gathered here are the ones with an
idea in them: summing a gradient back over broadcast dimensions, the two
matrix products of a matmul, spreading a reduction's gradient back over what
it reduced, the log-softmax Jacobian, and the order in which the backward pass
visits the graph.

They are plain functions on *backend arrays* (NumPy ``ndarray``s on the CPU):
no Tensors, no graph. The ops call them through this module at call time
(``grad_rules.unbroadcast(grad, shape)``), so replacing a function here
replaces it everywhere: ``minigrad.grading.use_exercise("04")`` plugs a
learner's versions in this way.

Conventions (the checks of chapter 04 rely on them):

- a rule never modifies ``grad`` in place and returns new arrays or views of
  ``grad``;
- each returned gradient has exactly the shape of the input it belongs to;
- ``dim`` arguments arrive normalised by the op: ``None`` or a sorted tuple of
  non-negative dimension indices for reductions, one non-negative int for
  ``log_softmax``.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.backend import array_module

__all__ = [
    "unbroadcast", "matmul_backward", "sum_backward", "mean_backward", "log_softmax_backward",
    "topological_order", "product",
]

_FLOAT16 = np.dtype(np.float16)


def product(a, b):
    """``a @ b`` on backend arrays; NumPy float16 operands are multiplied in float32 and rounded back.

    NumPy has no fast float16 matmul (it is ~200x slower than float32), so we
    accumulate in float32 as GPU tensor cores do. For any other dtype this is ``a @ b``.
    """
    if a.dtype is _FLOAT16 and isinstance(a, np.ndarray):
        return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    return a @ b


# --------------------------------------------------------------------------- 4.1 broadcasting


def unbroadcast(grad, shape):
    """Sum ``grad`` (the gradient of a broadcast result) back down to an operand's ``shape``.

    Broadcasting lines shapes up from the right, prepends dimensions to the
    shorter one and stretches its size-1 dimensions. An operand that was
    broadcast was *read several times*, once per copy, so its gradient is the
    sum of the gradients of all its copies: sum over the prepended dimensions,
    and over each stretched dimension (keeping it, with size 1).

    ``unbroadcast(ones((4, 3)), (3,))`` is ``[4, 4, 4]`` (a bias added to 4
    rows); ``unbroadcast(ones((4, 3)), (4, 1))`` is ``[[3], [3], [3], [3]]``.
    """
    if grad.shape == shape:
        return grad
    ### BEGIN SOLUTION 4.1 | axes = the leading grad.ndim - len(shape) dimensions, plus every dimension where shape has 1 and grad does not; sum them with keepdims=True, then reshape to shape
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, size in enumerate(shape) if size == 1 and grad.shape[extra + i] != 1
    )
    return grad.sum(axis=axes, keepdims=True).reshape(shape)
    ### END SOLUTION


# --------------------------------------------------------------------------- 4.2 matmul


def matmul_backward(grad, a, b, need_a: bool = True, need_b: bool = True):
    """Gradients ``(grad_a, grad_b)`` of ``out = a @ b`` (NumPy's matmul rules), given ``grad = d(loss)/d(out)``.

    For matrices, ``out[i, j] = sum_k a[i, k] b[k, j]``, so ``grad_a = grad @ b.T``
    (shape ``(n, k)``, like ``a``) and ``grad_b = a.T @ grad`` (``(k, m)``, like ``b``):
    the only products whose shapes fit. The other cases reduce to that one:

    - a 1-D ``a`` is a row ``(1, k)`` and a 1-D ``b`` a column ``(k, 1)``; the
      size-1 dimension is missing from ``out`` (and so from ``grad``): put it
      back before multiplying, remove it from the result;
    - dimensions before the last two are batch dimensions: the products are
      batched (``swapaxes(-1, -2)`` transposes every matrix of a batch), and
      batch dimensions that were broadcast are summed back with ``unbroadcast``.

    ``need_a`` / ``need_b`` False: that gradient is not wanted; return None in
    its place (and save a product). Use :func:`product` instead of ``@`` to
    keep float16 fast on the CPU.
    """
    ### BEGIN SOLUTION 4.2 | 2-D: grad_a = grad @ b.T, grad_b = a.T @ grad; a 1-D a is a row (1, k), a 1-D b a column (k, 1): put the missing axis back into grad (grad[..., None, :] / grad[..., None]), multiply with swapaxes(-1, -2) for batches, unbroadcast to the 2-D operand's shape, then reshape to a.shape / b.shape
    if a.ndim == 2 and b.ndim == 2:  # the common case, without any reshaping
        ga = product(grad, b.T) if need_a else None
        gb = None
        if need_b:  # laid out like b: for b = W.T (Linear) that is W's own layout, so no copy later
            gb = product(grad.T, a).T if b.flags.f_contiguous and not b.flags.c_contiguous else product(a.T, grad)
        return ga, gb
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a.ndim == 1:
        grad = grad[..., None, :] if b.ndim > 1 else grad[..., None]
    if b.ndim == 1:
        grad = grad[..., None]
    ga = gb = None
    if need_a:
        ga = unbroadcast(product(grad, b2.swapaxes(-1, -2)), a2.shape).reshape(a.shape)
    if need_b:
        if b2.ndim == 2 and a2.ndim > 2:  # one weight matrix for a whole batch: one big product
            k = a2.shape[-1]
            gb = product(a2.reshape(-1, k).T, grad.reshape(-1, grad.shape[-1]))
        else:
            gb = unbroadcast(product(a2.swapaxes(-1, -2), grad), b2.shape)
        gb = gb.reshape(b.shape)
    return ga, gb
    ### END SOLUTION


# --------------------------------------------------------------------------- 4.3 reductions


def _kept_shape(shape: tuple, dim) -> tuple:
    """``shape`` with each reduced dimension replaced by 1: the shape of the result with keepdim=True."""
    if dim is None:
        return (1,) * len(shape)
    return tuple(1 if i in dim else size for i, size in enumerate(shape))


def sum_backward(grad, input_shape: tuple, dim, keepdim: bool):
    """Gradient of ``x.sum(dim, keepdim)`` with respect to ``x`` (of shape ``input_shape``).

    Every element of ``x`` went into exactly one sum, with weight 1, so it gets
    the gradient of that sum. ``dim`` is None (everything was summed: ``grad``
    is 0-d, or all 1s with keepdim) or a sorted tuple of non-negative dims.
    The result may be a broadcast view of ``grad`` (read-only, no copy).
    """
    ### BEGIN SOLUTION 4.3 | put the reduced dimensions back as size 1 (unless keepdim, or dim is None): grad.reshape(_kept_shape(input_shape, dim)); then stretch to the input: array_module(grad).broadcast_to(grad, input_shape)
    if not keepdim and dim is not None:
        grad = grad.reshape(_kept_shape(input_shape, dim))
    return array_module(grad).broadcast_to(grad, input_shape)
    ### END SOLUTION


def mean_backward(grad, input_shape: tuple, dim, keepdim: bool):
    """Gradient of ``x.mean(dim, keepdim)``: as for the sum, but each of the ``n`` averaged elements gets ``grad / n``."""
    ### BEGIN SOLUTION 4.3 | n = the product of input_shape over the reduced dims (all of them when dim is None); then as for sum_backward, with grad / n
    n = 1
    for i, size in enumerate(input_shape):
        if dim is None or i in dim:
            n *= size
    grad = grad / n
    if not keepdim and dim is not None:
        grad = grad.reshape(_kept_shape(input_shape, dim))
    return array_module(grad).broadcast_to(grad, input_shape)
    ### END SOLUTION


# --------------------------------------------------------------------------- 4.4 log_softmax


def log_softmax_backward(grad, output, dim: int):
    """Gradient of ``y = log_softmax(x, dim)`` with respect to ``x``, from ``grad = d(loss)/dy`` and ``output = y``.

    ``y_i = x_i - log sum_j exp(x_j)``, so ``dy_i/dx_j = [i == j] - softmax(x)_j``
    and ``dx_j = grad_j - softmax(x)_j * sum_i grad_i`` (sums along ``dim``).
    ``softmax(x) = exp(y)``: the output is all the op needs to keep, and
    ``exp(y) <= 1`` never overflows.
    """
    ### BEGIN SOLUTION 4.4 | softmax = exp(output); return grad - softmax * grad.sum(axis=dim, keepdims=True)
    return grad - np.exp(output) * grad.sum(axis=dim, keepdims=True)
    ### END SOLUTION


# --------------------------------------------------------------------------- 4.5 graph order


def topological_order(root) -> list:
    """Every graph node reachable from ``root``, each listed after all the nodes it was computed from.

    Nodes are :class:`~minigrad.tensor.Function` objects (``t.grad_fn``) and
    ``AccumulateGrad`` leaves. ``node._parents`` holds one entry per argument
    of the op's forward: the node that input came from, or a *falsy* value
    (``None`` for a tensor that needs no gradient, ``NOT_A_TENSOR`` for a
    number or a dim) — skip those. ``AccumulateGrad._parents`` is empty.

    Iterative (an explicit stack, like chapter 01's), so a graph thousands of
    ops deep does not hit Python's recursion limit; each node appears once,
    and ``root`` comes last. The backward pass visits the list in reverse.
    """
    ### BEGIN SOLUTION 4.5 | explicit stack of (node, parents_done); on a first pop mark it visited and push (node, True), then (parent, False) for each parent that is truthy and unvisited; append node when (node, True) pops
    order = []
    visited = set()
    stack = [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        for parent in node._parents:
            if parent and parent not in visited:
                stack.append((parent, False))
    return order
    ### END SOLUTION
