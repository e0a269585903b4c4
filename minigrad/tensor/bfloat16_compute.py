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
  backward (broadcasting, repeated indices) accumulate in float32. A
  float16 backward runs without NumPy's overflow and invalid-value warnings:
  a loss scaled for float16 is meant to overflow now and then, and the
  GradScaler finds the inf/NaN and skips the step (as PyTorch, silently). An op
  class with ``widens_saved_on_use = True`` gets its saved arrays as stored
  and widens each just where it reads it (:func:`wide`), so a large saved
  array (the fast convolution's im2col matrix) is not also held in float32
  for the whole backward.

float16 takes the same route, every op included (NumPy's float16 loops
convert every element to float32 and back one at a time, 10-20x slower than
these whole-array conversions, :mod:`.float16_casts`). A convolution's im2col
matrix is then a float32 temporary during the op, and what it saves for
backward is rounded to float16: measured on the chapter-06 CNN (batch 64),
this route's step is about 1.8x faster than convolving float16 arrays, with
the same activation bytes (``benchmarks/amp.py``).
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from minigrad.tensor.dtypes import bfloat16, float16, float32, is_floating_point
from minigrad.tensor.float16_casts import astype

__all__ = ["DATA_MOVEMENT_OPS", "ACCUMULATING_OPS", "moves_data", "applies", "forward", "backward", "wide"]

#: ops (``Function.op``) that only move or copy elements; the view ops (``is_view = True``) are included anyway.
DATA_MOVEMENT_OPS = frozenset({
    "reshape", "view", "squeeze", "unsqueeze", "permute", "expand", "contiguous", "cat", "stack",
    "getitem", "setitem", "pad", "cast", "to_device", "clone",
})


#: ops (``Function.op``) that sum many terms (kept for reference: on float16 operands every arithmetic op now
#: computes in float32 and rounds once, as on bfloat16 ones).
ACCUMULATING_OPS = frozenset({
    "sum", "mean", "var", "std", "vector_norm", "softmax", "log_softmax", "logsumexp",
    "cross_entropy", "nll_loss", "binary_cross_entropy_with_logits", "batch_norm", "avg_pool2d",
})


def moves_data(cls) -> bool:
    """True for ops whose forward copies or views elements without arithmetic (run on bfloat16 bits)."""
    return cls.is_view or cls.op in DATA_MOVEMENT_OPS


def applies(cls, arrays, storage) -> bool:
    """Does op ``cls`` on these operands (some of dtype ``storage``, the caller checked) compute in float32?

    Yes when every floating point operand is of that dtype.
    """
    for a in arrays:
        dtype = getattr(a, "dtype", None)
        if dtype is not None and dtype is not storage and not isinstance(a, np.generic) and is_floating_point(dtype):
            return False
    return True


def _widen(a, storage):
    return astype(a, float32) if getattr(a, "dtype", None) is storage else a


def _round(a, storage):
    dtype = getattr(a, "dtype", None)
    if dtype is not None and dtype.kind == "f":
        with np.errstate(over="ignore"):  # past the format's largest number is inf, as in PyTorch
            return astype(a, storage)
    return a


def forward(ctx, forward_fn, arrays, kwargs, storage=bfloat16):
    """``forward_fn`` (the node's forward) on operands stored as ``storage``: computed in float32 (or on the
    bits, for data movement), the result rounded to ``storage``; marks the node so that backward does the same."""
    ctx._storage = storage
    if moves_data(type(ctx)):
        return forward_fn(*arrays, **kwargs)
    wide = [_widen(a, storage) for a in arrays]
    out = forward_fn(*wide, **kwargs)
    rounded = _round(out, storage)
    saved = ctx._saved
    if saved:
        originals = {id(w): a for w, a in zip(wide, arrays) if w is not a}
        if out is not rounded:
            originals[id(out)] = rounded
        ctx._saved = tuple(
            originals.get(id(s)) if id(s) in originals else (_round(s, storage) if getattr(s, "dtype", None) is float32 else s)
            for s in saved
        )
    return rounded


def backward(node, grad):
    """``node.backward(grad)`` in float32: the gradient and the saved arrays widened, the results rounded."""
    storage = node._storage
    saved, unpack = node._saved, node._unpack
    if getattr(node, "widens_saved_on_use", False):
        saved = ()  # the op widens what it reads itself (through saved_tensors, hooks and checks included)
    if saved:  # read through saved_tensors: the version checks, and the unpack hook of saved-tensor hooks
        node._saved, node._unpack = tuple(_widen(s, storage) for s in node.saved_tensors), None
    try:
        with np.errstate(over="ignore", invalid="ignore") if storage is float16 else nullcontext():
            grads = node.backward(_widen(grad, storage))  # a scaled float16 backward may overflow: GradScaler's check
    finally:
        if saved:
            node._saved, node._unpack = saved, unpack
    if type(grads) is tuple:
        return tuple(None if g is None else _round(g, storage) for g in grads)
    return _round(grads, storage)


def wide(a):
    """``a`` in float32 if it is a bfloat16 or float16 array (a saved array, read by an op that
    ``widens_saved_on_use``), else ``a``."""
    dtype = getattr(a, "dtype", None)
    return astype(a, float32) if dtype is bfloat16 or dtype is float16 else a
