"""The backward rules, in one place: the chapter-04 exercises.

Every op of :mod:`minigrad.tensor` has a ``backward`` that turns the gradient
of its output into gradients of its inputs. Most are one line (``d(a*b)/da =
b``) and live next to their op. The rules gathered here are the ones with an
idea in them: summing a gradient back over broadcast dimensions, the two
matrix products of a matmul, and spreading a reduction's gradient back over
what it reduced (exercises 4.1-4.3). Exercise 4.4 writes a whole op
(:mod:`.ops.log_softmax`), exercise 4.5 the backward pass itself
(:mod:`.autograd`).

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
  non-negative dimension indices for reductions.

Speed paths live elsewhere: float16 products on the CPU are computed in
float32 by :mod:`.fast_float16`, which calls these rules.
"""

from __future__ import annotations

from minigrad.tensor.backend import array_module

__all__ = ["unbroadcast", "matmul_backward", "sum_backward", "mean_backward"]


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
    ### BEGIN SOLUTION 4.1 | find the dimensions the operand was copied along (prepended ones, stretched size-1 ones) and add the copies up
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, size in enumerate(shape) if size == 1 and grad.shape[extra + i] != 1
    )
    return grad.sum(axis=axes, keepdims=True).reshape(shape)
    ### END SOLUTION


# --------------------------------------------------------------------------- 4.2 matmul


def matmul_backward(grad, a, b, need_a: bool = True, need_b: bool = True):
    """Gradients ``(grad_a, grad_b)`` of ``out = a @ b`` (NumPy's matmul rules), given ``grad = d(loss)/d(out)``.

    For matrices, ``out[i, j] = sum_k a[i, k] b[k, j]``: each gradient is
    again a matrix product of ``grad`` with the *other* operand, and the
    shapes leave one way to write each (``grad_a`` has ``a``'s shape ``(n, k)``,
    ``grad_b`` has ``b``'s ``(k, m)``). The other cases reduce to that one:

    - a 1-D ``a`` acts as a row ``(1, k)`` and a 1-D ``b`` as a column
      ``(k, 1)``; that size-1 dimension is missing from ``out`` (and so from
      ``grad``): put it back before multiplying, drop it from the result;
    - dimensions before the last two are batch dimensions: the products are
      batched (transpose only the last two dimensions of each operand), and
      batch dimensions that were broadcast are summed back with
      :func:`unbroadcast` (exercise 4.1).

    ``need_a`` / ``need_b`` False: that gradient is not wanted; return None in
    its place (and save a product).
    """
    ### BEGIN SOLUTION 4.2 | each gradient is grad times the other operand, transposed in its last two dimensions; treat 1-D operands as a row / a column, then unbroadcast the batch dimensions
    a2 = a.reshape(1, -1) if a.ndim == 1 else a  # a row
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b  # a column
    if a.ndim == 1:  # out lost the row dimension: put it back
        grad = grad[..., None, :] if b.ndim > 1 else grad[..., None]
    if b.ndim == 1:  # out lost the column dimension
        grad = grad[..., None]
    grad_a = grad_b = None
    if need_a:
        grad_a = unbroadcast(grad @ b2.swapaxes(-1, -2), a2.shape).reshape(a.shape)
    if need_b:
        grad_b = unbroadcast(a2.swapaxes(-1, -2) @ grad, b2.shape).reshape(b.shape)
    return grad_a, grad_b
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
    ### BEGIN SOLUTION 4.3 | give grad the reduced dimensions back (size 1) unless they are still there, then stretch it to the input's shape without copying
    if not keepdim and dim is not None:
        grad = grad.reshape(_kept_shape(input_shape, dim))
    return array_module(grad).broadcast_to(grad, input_shape)
    ### END SOLUTION


def mean_backward(grad, input_shape: tuple, dim, keepdim: bool):
    """Gradient of ``x.mean(dim, keepdim)``: as for the sum, but each of the ``n`` averaged elements gets ``grad / n``."""
    ### BEGIN SOLUTION 4.3 | as for the sum, with each element's share of the average: count how many elements each mean took
    n = 1
    for i, size in enumerate(input_shape):
        if dim is None or i in dim:
            n *= size
    grad = grad / n
    if not keepdim and dim is not None:
        grad = grad.reshape(_kept_shape(input_shape, dim))
    return array_module(grad).broadcast_to(grad, input_shape)
    ### END SOLUTION
