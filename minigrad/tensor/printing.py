"""``repr(tensor)`` in PyTorch's style: ``tensor([1.0000, 2.5000], grad_fn=<MulBackward>)``.

Floats print with 4 decimals (or as ``1.`` when every value is a whole
number, or in scientific notation when magnitudes span more than 1000x),
following PyTorch's formatter;
every element gets the same width. Large tensors are summarised with ``...``.
Suffixes name what is not the default: ``dtype`` unless float32/int64/bool,
``device`` unless cpu, then ``grad_fn`` or ``requires_grad=True``.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.dtypes import bfloat16, float32

__all__ = ["format_tensor"]

_DEFAULT_DTYPES = {np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)}


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)].astype(np.float64)
    magnitudes = np.abs(finite)
    nonzero = magnitudes[magnitudes > 0]
    wide = bool(nonzero.size) and (nonzero.max() / nonzero.min() > 1000 or nonzero.max() > 1e8)
    integral = bool(np.all(finite == np.round(finite)))
    if wide or (not integral and nonzero.size and nonzero.min() < 1e-4):
        def fmt(v):
            return f"{v:.4e}" if np.isfinite(v) else str(v)
    elif integral:
        def fmt(v):
            return f"{v:.0f}." if np.isfinite(v) else str(v)
    else:
        def fmt(v):
            return f"{v:.4f}" if np.isfinite(v) else str(v)
    width = max((len(fmt(float(v))) for v in values.ravel()), default=1)
    return lambda v: fmt(float(v)).rjust(width)


def format_tensor(t) -> str:
    data = t._host()
    dtype = data.dtype
    if dtype is bfloat16:  # NumPy formats it as an unknown type: print the (exact) float32 values
        data = data.astype(float32)
    prefix = "tensor("
    suffixes = []
    if data.size == 0:
        body = "[]"
        if data.shape != (0,):
            suffixes.append(f"size={tuple(data.shape)}")
    else:
        kwargs = {}
        if data.dtype.kind == "f":
            shown = data
            if data.size > 1000:  # format only what will be printed
                shown = np.concatenate([a.ravel() for a in _edges(data)])
            kwargs["formatter"] = {"float_kind": _float_formatter(shown)}
        body = np.array2string(data, separator=", ", prefix=prefix, threshold=1000, edgeitems=3, **kwargs)
    if dtype not in _DEFAULT_DTYPES:
        suffixes.append(f"dtype={dtype}")
    if str(t.device) != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"


def _edges(data: np.ndarray):
    """The corner blocks that a summarised print shows (3 items at each end of each dimension)."""
    index = [slice(None)] * data.ndim
    blocks = [data]
    for d in range(data.ndim):
        if data.shape[d] > 6:
            blocks = [b[tuple(index[:d] + [s])] for b in blocks for s in (slice(0, 3), slice(-3, None))]
    return blocks
