"""How ops compute on bfloat16 data: read bfloat16, compute in float32, round the result once.

bfloat16 is a *storage* format here, as on hardware with float32 accumulation
and in PyTorch's CPU kernels: an op loads its bfloat16 operands, widens them
to float32 (exact: bfloat16 is float32 with the low 16 bits zero), computes,
and rounds its result to bfloat16 (round to nearest even). Computing in
NumPy's bfloat16 instead would round after every step of a reduction or a
composite formula, and NumPy's promotion of ``ml_dtypes`` types is not ours
(``bfloat16 @ bfloat16`` gives float32 there), so it is never used for
arithmetic.

:meth:`Function.apply <minigrad.tensor.function.Function.apply>` sends an op
here when a tensor operand is bfloat16 and no operand has another floating
dtype (ops promote their operands first, so that is every op on bfloat16):

- :func:`forward` runs an arithmetic op's ``forward`` on float32 copies,
  rounds the output, and replaces what the op saved for backward by bfloat16
  arrays: the op's own bfloat16 inputs and rounded output where it saved
  those (so in-place edits of them are still detected), other float32 arrays
  rounded. Saved activations therefore take bfloat16's memory.
- *Data movement* ops (:func:`moves_data`: views, reshape, indexing, cat,
  pad, copies, casts) compute nothing; their ``forward`` runs on the
  bfloat16 bits themselves, so views stay views.
- :func:`backward` runs every such node's ``backward`` in float32 (the
  incoming gradient and the saved arrays widened) and rounds the gradients
  to bfloat16: gradients of bfloat16 tensors are bfloat16, and sums in
  backward (broadcasting, repeated indices) accumulate in float32.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.dtypes import bfloat16, float32, is_floating_point

__all__ = ["DATA_MOVEMENT_OPS", "moves_data", "applies", "forward", "backward"]

#: ops (``Function.op``) that only move or copy elements; the view ops (``is_view = True``) are included anyway.
DATA_MOVEMENT_OPS = frozenset({
    "reshape", "view", "squeeze", "unsqueeze", "permute", "expand", "contiguous", "cat", "stack",
    "getitem", "setitem", "pad", "cast", "to_device", "clone",
})


def moves_data(cls) -> bool:
    """True for ops whose forward copies or views elements without arithmetic (run on bfloat16 bits)."""
    return cls.is_view or cls.op in DATA_MOVEMENT_OPS


def applies(arrays) -> bool:
    """True when every floating point array among the op's operands is bfloat16 (some is, the caller checked)."""
    for a in arrays:
        dtype = getattr(a, "dtype", None)
        if dtype is not None and dtype is not bfloat16 and not isinstance(a, np.generic) and is_floating_point(dtype):
            return False
    return True


def _widen(a):
    return a.astype(float32) if getattr(a, "dtype", None) is bfloat16 else a


def _round(a):
    dtype = getattr(a, "dtype", None)
    if dtype is not None and dtype.kind == "f":
        return a.astype(bfloat16)
    return a


def forward(ctx, arrays, kwargs):
    """``ctx.forward`` for operands in bfloat16: computed in float32 (or on the bits, for data movement)."""
    ctx._bf16 = True
    if moves_data(type(ctx)):
        return ctx.forward(*arrays, **kwargs)
    wide = [_widen(a) for a in arrays]
    out = ctx.forward(*wide, **kwargs)
    rounded = _round(out)
    saved = ctx._saved
    if saved:
        originals = {id(w): a for w, a in zip(wide, arrays) if w is not a}
        if out is not rounded:
            originals[id(out)] = rounded
        ctx._saved = tuple(
            originals.get(id(s)) if id(s) in originals else (s.astype(bfloat16) if getattr(s, "dtype", None) is float32 else s)
            for s in saved
        )
    return rounded


def backward(node, grad):
    """``node.backward(grad)`` in float32: the gradient and the saved arrays widened, the results rounded."""
    saved = node._saved
    if saved:
        node._saved = tuple(_widen(s) for s in saved)
    try:
        grads = node.backward(_widen(grad))
    finally:
        if saved:
            node._saved = saved
    if type(grads) is tuple:
        return tuple(None if g is None else _round(g) for g in grads)
    return _round(grads)
