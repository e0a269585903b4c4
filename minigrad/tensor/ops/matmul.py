"""Matrix multiplication ``a @ b``, with NumPy's rules for 1-D operands and batch dimensions.

For matrices, ``C = A @ B`` with ``C[i, j] = sum_k A[i, k] B[k, j]`` has the
gradients ``dA = dC @ B.T`` and ``dB = A.T @ dC``: two more matrix products,
the same size of work as the forward one. Transposes are views, so no data is
copied; BLAS reads the transposed layout directly.

The other cases reduce to that one:

- a 1-D left operand is a row vector ``(1, k)``, a 1-D right operand a column
  ``(k, 1)``; the added dimension is removed from the result (and from the
  gradients);
- dimensions before the last two are *batch* dimensions and broadcast like an
  elementwise op, so their gradients are summed back with ``unbroadcast``.

The backward rule is :func:`minigrad.tensor.grad_rules.matmul_backward` (exercise 4.2).

float16 on the CPU takes a speed path: NumPy has no fast half-precision
matmul (it is ~200x slower), so :mod:`.fast_float16` computes the same
products in float32 and rounds the result to float16, as GPU tensor cores do.
"""

from __future__ import annotations

from minigrad.tensor import fast_float16, grad_rules
from minigrad.tensor.dtypes import promote_types
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.function import Function
from minigrad.tensor.op_table import register
from minigrad.tensor.ops.convert import cast
from minigrad.tensor.ops.elementwise import _as_operand
from minigrad.tensor.strides import broadcast_shapes
from minigrad.tensor.tensor import Tensor

__all__ = ["matmul", "Matmul"]


class Matmul(Function):
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        if fast_float16.applies(a):  # speed path: the same product, computed in float32
            return fast_float16.product(a, b)
        return a @ b

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        if fast_float16.applies(a):  # speed path: the same rule, computed in float32
            return fast_float16.matmul_backward(grad, a, b, need_a, need_b)
        return grad_rules.matmul_backward(grad, a, b, need_a, need_b)


def _explain(a: Tensor, b: Tensor) -> str | None:
    """Why ``a @ b`` does not work, with a suggestion; None if the shapes fit."""
    sa, sb = a.shape, b.shape
    if not sa or not sb:
        return (
            f"matmul: {sa} @ {sb}: both operands need at least one dimension; "
            f"use * to multiply by a scalar"
        )
    ka = sa[-1]
    kb = sb[-2] if len(sb) > 1 else sb[0]
    if ka != kb:
        text = f"matmul: {sa} @ {sb}: inner dimensions {ka} and {kb} differ"
        if len(sb) > 1 and sb[-1] == ka:
            return text + f" — did you mean W.T? (the right operand transposed, {sb[:-2] + (sb[-1], sb[-2])}, fits)"
        if len(sa) > 1 and sa[-2] == kb:
            return text + f" — did you mean x.T? (the left operand transposed, {sa[:-2] + (sa[-1], sa[-2])}, fits)"
        return text + (
            "; the last dimension of the left operand must equal the "
            + ("first" if len(sb) == 1 else "second-to-last")
            + " dimension of the right operand"
        )
    try:
        broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError as why:
        return f"matmul: {sa} @ {sb}: the batch dimensions do not broadcast: {why}"
    return None


def matmul(a, b) -> Tensor:
    """``a @ b``: matrix product, batched over leading dimensions (NumPy/PyTorch semantics)."""
    if type(a) is Tensor and type(b) is Tensor and a._data.dtype is b._data.dtype:  # the common case, fast
        sa, sb = a._data.shape, b._data.shape
        if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0]:
            return Matmul.apply(a, b)
    if not isinstance(a, Tensor):
        a = _as_operand(a, b, "matmul")
    if not isinstance(b, Tensor):
        b = _as_operand(b, a, "matmul")
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("matmul: both operands must be tensors (or arrays); use * to multiply by a number")
    da, db = a._data.dtype, b._data.dtype
    if da is not db:
        dt = promote_types(da, db)
        a, b = cast(a, dt), cast(b, dt)
    sa, sb = a._data.shape, b._data.shape
    if not sa or not sb or sa[-1] != (sb[-2] if len(sb) > 1 else sb[0]):
        raise ShapeError(_explain(a, b))
    try:
        return Matmul.apply(a, b)
    except ShapeError as exc:
        if exc.__cause__ is not None:  # raised in the user's code (an exercise plugged in): keep it
            raise
        raise ShapeError(_explain(a, b) or str(exc)) from None


# what the Tensor's methods call (see op_table.py)
register(matmul)
