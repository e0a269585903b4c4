"""Indexing: ``x[key]`` and the op behind a recorded ``x[key] = value``.

Two kinds of keys, as in NumPy and PyTorch:

- *basic*: ints, slices, ``None`` (new axis) and ``...`` — the result is a
  view (it moves the offset and changes strides, see ``strides.py``);
- *advanced*: integer arrays/tensors and boolean masks — the result is a copy
  of the selected elements.

Backward of ``y = x[key]`` puts ``grad`` back where the elements came from in
a zero tensor shaped like ``x``. With integer arrays an element may have been
picked several times (``x[[0, 0, 1]]``), so the contributions must be *added*
(``np.add.at``, a scatter-add), not assigned.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor import grad_rules
from minigrad.tensor.backend import DeviceError, array_module
from minigrad.tensor.dtypes import is_floating_point
from minigrad.tensor.errors import DTypeError
from minigrad.tensor.function import Function
from minigrad.tensor.op_table import register
from minigrad.tensor.tensor import Tensor

__all__ = ["getitem", "normalize_key", "GetItem", "SetItem"]

BASIC, MASK, GATHER = "basic", "mask", "gather"


def normalize_key(x: Tensor, key, op: str = "getitem"):
    """A key NumPy can use on ``x``'s data, and its kind: basic (a view), mask, or gather (integer arrays)."""
    if not isinstance(key, tuple):
        key = (key,)
    xp = array_module(x._data)
    out = []
    kind = BASIC
    has_ellipsis = False
    for k in key:
        if k is None or isinstance(k, slice):
            out.append(k)
        elif k is Ellipsis:
            has_ellipsis = True
            out.append(k)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            out.append(int(k))
        else:
            if isinstance(k, Tensor):
                if k._device is not x._device:
                    raise DeviceError(
                        f"{op}: the index tensor is on {k.device} but the indexed tensor is on {x.device}; "
                        f"move the index with .to('{x.device}')"
                    )
                arr = k._data
            else:
                try:
                    arr = xp.asarray(k)
                except (TypeError, ValueError):
                    raise TypeError(
                        f"{op}: unsupported index {k!r} of type {type(k).__name__}; use ints, slices, None, "
                        f"..., integer tensors/arrays or bool masks"
                    ) from None
            if arr.dtype.kind == "b":
                kind = GATHER if kind == GATHER else MASK
            elif arr.dtype.kind in "iu":
                kind = GATHER
            elif arr.dtype.kind not in "fc" and not is_floating_point(arr.dtype):
                raise TypeError(
                    f"{op}: unsupported index {k!r} of type {type(k).__name__}; use ints, slices, None, "
                    f"..., integer tensors/arrays or bool masks"
                )
            else:
                raise DTypeError(
                    f"{op}: tensors used as indices must be int64 or bool, got {arr.dtype} with shape "
                    f"{tuple(arr.shape)}; convert with .long()"
                )
            out.append(arr)
    if kind == BASIC and not has_ellipsis:
        out.append(Ellipsis)  # x[0, 1, ...] is a 0-d view where x[0, 1] would be a NumPy scalar
    return tuple(out), kind


def _describe_key(key) -> str:
    parts = []
    for k in key:
        if k is Ellipsis:
            parts.append("...")
        elif isinstance(k, slice):
            parts.append(":".join("" if v is None else str(v) for v in (k.start, k.stop, k.step)).rstrip(":") or ":")
        elif hasattr(k, "shape"):
            parts.append(f"<{k.dtype} array {tuple(k.shape)}>")
        else:
            parts.append(repr(k))
    return "[" + ", ".join(parts) + "]"


_ARRAY = object()  # where an index array sits in a key kept for backward


def _save_key(ctx, key: tuple) -> tuple:
    """Keep ``key``'s index arrays with ``save_for_backward``; returns the rest of the key, arrays marked."""
    arrays = tuple(k for k in key if hasattr(k, "shape"))
    if arrays:
        ctx.save_for_backward(*arrays)
    return tuple(_ARRAY if hasattr(k, "shape") else k for k in key)


def _saved_key(ctx) -> tuple:
    """The key :func:`_save_key` kept, its index arrays put back."""
    arrays = iter(ctx.saved_tensors if _ARRAY in ctx.key_layout else ())
    return tuple(next(arrays) if k is _ARRAY else k for k in ctx.key_layout)


class _Indexing(Function):
    def explain_error(ctx, exc, args, kwargs):
        x = args[0]
        key = args[-2]  # GetItem(x, key, kind) and SetItem(x, value, key, kind)
        if isinstance(exc, IndexError):
            return IndexError(
                f"{ctx.op}: {str(exc).replace('axis', 'dimension')}; indexing a tensor of shape {x.shape} with {_describe_key(key)}"
            )
        return Function.explain_error(ctx, exc, args, kwargs)


class GetItem(_Indexing):
    op = "getitem"
    def forward(ctx, a, key, kind):
        ctx.input_shape, ctx.kind = a.shape, kind
        ctx.key_layout = _save_key(ctx, key)
        ctx.is_view = kind == BASIC
        return a[key]

    def backward(ctx, grad):
        key = _saved_key(ctx)
        xp = array_module(grad)
        out = xp.zeros(ctx.input_shape, dtype=grad.dtype)
        if ctx.kind == GATHER:
            xp.add.at(out, key, grad)  # an element picked twice gets both gradients
        else:
            out[key] = grad
        return out, None, None


class SetItem(_Indexing):
    """``out = a.copy(); out[key] = value``: used when autograd records ``x[key] = value``."""

    op = "setitem"

    def forward(ctx, a, value, key, kind):
        ctx.key_layout, ctx.kind = _save_key(ctx, key), kind
        ctx.value_shape = getattr(value, "shape", None)
        out = a.copy()
        out[key] = value
        return out

    def backward(ctx, grad):
        key = _saved_key(ctx)
        need_a, need_v = ctx.needs_input_grad[:2]
        ga = gv = None
        if need_a:
            ga = grad.copy()
            ga[key] = 0  # these elements were overwritten: the old values no longer matter
        if need_v:
            gv = grad_rules.unbroadcast(grad[key], ctx.value_shape)
        return ga, gv, None, None


def getitem(x: Tensor, key) -> Tensor:
    """``x[key]``: a view for basic keys, a copy for integer arrays and masks."""
    key, kind = normalize_key(x, key)
    return GetItem.apply(x, key, kind)


# what the Tensor's methods call (see op_table.py)
register(getitem)
