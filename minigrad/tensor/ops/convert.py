"""Conversion ops: dtype casts, moves between devices, copies. All differentiable.

A cast is an op like any other, so gradients flow back through it and arrive
in the input's dtype: ``x.half()`` in forward means ``grad.astype(float32)``
in backward. The dtype policy (mixed precision) inserts these casts for you.
float16 <-> float32 goes through :mod:`minigrad.tensor.float16_casts` (the
same bits as ``astype``, faster).
"""

from __future__ import annotations

from minigrad.tensor.backend import Device, transfer
from minigrad.tensor.dtypes import is_floating_point
from minigrad.tensor.float16_casts import astype
from minigrad.tensor.function import Function
from minigrad.tensor.op_table import register
from minigrad.tensor.tensor import Tensor

__all__ = ["Cast", "ToDevice", "Clone", "cast", "to_device", "clone"]


class Cast(Function):
    skip_dtype_policy = True

    def forward(ctx, a, dtype):
        ctx.input_dtype = a.dtype
        return astype(a, dtype)

    def backward(ctx, grad):
        return astype(grad, ctx.input_dtype), None


class ToDevice(Function):
    skip_dtype_policy = True

    def forward(ctx, a, src: Device, dst: Device):
        ctx.src, ctx.dst = src, dst
        ctx.out_device = dst
        return transfer(a, src, dst)

    def backward(ctx, grad):
        return transfer(grad, ctx.dst, ctx.src), None, None


class Clone(Function):
    def forward(ctx, a):
        return a.copy()

    def backward(ctx, grad):
        return grad


def cast(x: Tensor, dtype) -> Tensor:
    """``x`` converted to ``dtype`` (``x`` itself when it already has it)."""
    if x._data.dtype == dtype:
        return x
    if x._requires_grad and not is_floating_point(dtype):
        return Cast.apply(x.detach(), dtype)  # integer results cannot carry gradients
    return Cast.apply(x, dtype)


def to_device(x: Tensor, device: Device) -> Tensor:
    """``x`` copied to ``device`` (``x`` itself when it is already there)."""
    if x._device is device:
        return x
    return ToDevice.apply(x, x._device, device)


def clone(x: Tensor) -> Tensor:
    """A copy with its own memory; gradients flow back to ``x``."""
    return Clone.apply(x)


# what the Tensor's methods call (see op_table.py)
register(cast, clone, to_device)
