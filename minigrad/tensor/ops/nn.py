"""Neural-network building blocks: softmax, log_softmax, logsumexp, one_hot, pad.

Softmax and friends are computed the numerically stable way: subtract the
row's maximum before ``exp`` (the result is mathematically the same, since
the max cancels) so that ``exp`` never overflows; ``exp(1000.)`` is ``inf`` in
float32, ``exp(1000. - 1000.)`` is 1. As in PyTorch, a row that is entirely
``-inf`` gives ``nan`` in softmax/log_softmax, and ``-inf`` in logsumexp.

``log_softmax``'s node, :class:`~minigrad.tensor.ops.log_softmax.LogSoftmax`,
is written out in its own file as chapter 04's example of a whole op
(exercise 4.4).
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.backend import array_module
from minigrad.tensor.dtypes import default_float, int64, is_floating_point
from minigrad.tensor.errors import DTypeError, ShapeError
from minigrad.tensor.function import Function
from minigrad.tensor.op_table import register
from minigrad.tensor.ops.convert import cast
from minigrad.tensor.ops.log_softmax import LogSoftmax
from minigrad.tensor.ops.reduce import normalize_dims
from minigrad.tensor.tensor import Tensor, make_tensor

__all__ = ["softmax", "log_softmax", "logsumexp", "one_hot", "pad"]


class Softmax(Function):
    def forward(ctx, a, dim):
        ctx.dim = dim
        z = a - a.max(axis=dim, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=dim, keepdims=True)
        ctx.save_for_backward(z)
        return z

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return out * (grad - (grad * out).sum(axis=ctx.dim, keepdims=True)), None


class LogSumExp(Function):
    op = "logsumexp"
    def forward(ctx, a, dims, keepdim):
        peak = a.max(axis=dims, keepdims=True)
        if np.isfinite(peak).all():
            out = np.log(np.exp(a - peak).sum(axis=dims, keepdims=True)) + peak
        else:  # a slice that is all -inf (or holds inf): log(0) = -inf is the right answer there
            peak = np.where(np.isfinite(peak), peak, 0)
            with np.errstate(divide="ignore"):
                out = np.log(np.exp(a - peak).sum(axis=dims, keepdims=True)) + peak
        ctx.save_for_backward(a, out)
        ctx.dims, ctx.keepdim = dims, keepdim
        return out if keepdim else out.reshape([s for i, s in enumerate(out.shape) if i not in dims])

    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        if not ctx.keepdim:
            grad = grad.reshape(out.shape)
        return grad * np.exp(a - out), None, None


def _softmax_dim(x: Tensor, dim, op: str) -> int:
    if dim is None:
        raise TypeError(f"{op}: pass dim explicitly (e.g. dim=-1 for the last dimension), as PyTorch requires")
    if x._data.ndim == 0:
        raise ShapeError(f"{op}: needs at least one dimension, got a 0-d tensor")
    return x._dim(dim, op)


def _float(x: Tensor, op: str) -> Tensor:
    if is_floating_point(x._data.dtype):
        return x
    return cast(x, default_float)


def softmax(x: Tensor, dim: int) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``: non-negative, sums to 1."""
    return Softmax.apply(_float(x, "softmax"), _softmax_dim(x, dim, "softmax"))


def log_softmax(x: Tensor, dim: int) -> Tensor:
    """log(softmax(x)) along ``dim``, computed without overflow or log(0)."""
    return LogSoftmax.apply(_float(x, "log_softmax"), _softmax_dim(x, dim, "log_softmax"))


def logsumexp(x: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``dim`` (an int or a tuple), computed without overflow."""

    if x._data.ndim == 0:
        return x
    dims = normalize_dims(x._data.ndim, dim, "logsumexp")
    if dims is None:
        dims = tuple(range(x._data.ndim))
    return LogSumExp.apply(_float(x, "logsumexp"), dims, bool(keepdim))


def one_hot(indices: Tensor, num_classes: int = -1) -> Tensor:
    """``(..., ) int64 -> (..., num_classes) int64`` with a 1 at each index (not differentiable)."""
    if not isinstance(indices, Tensor):
        indices = Tensor(indices)
    data = indices._data
    if data.dtype.kind not in "iu":
        raise DTypeError(f"one_hot: indices must be an integer tensor, got {indices.dtype}; convert with .long()")
    if num_classes == -1:
        num_classes = int(data.max()) + 1 if data.size else 0
    if data.size and (data.min() < 0 or data.max() >= num_classes):
        raise ShapeError(
            f"one_hot: indices must lie in [0, {num_classes}), got values from {int(data.min())} to "
            f"{int(data.max())}; pass num_classes= the number of classes"
        )
    xp = array_module(data)
    out = (data[..., None] == xp.arange(num_classes)).astype(int64)
    return make_tensor(out, indices._device)


class Pad(Function):
    def forward(ctx, a, widths, value):
        ctx.inside = tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, a.shape))
        return array_module(a).pad(a, widths, mode="constant", constant_values=value)

    def backward(ctx, grad):
        return grad[ctx.inside], None, None


def pad(x: Tensor, pad, mode: str = "constant", value: float = 0.0) -> Tensor:
    """Pad with ``value``. ``pad = (left, right)`` for the last dimension, then ``(top, bottom)`` for the one before, ...

    The order is PyTorch's ``F.pad``: pairs start from the *last* dimension.
    ``pad(images, (1, 1, 1, 1))`` adds a one-pixel border to an NCHW batch.
    """
    if mode != "constant":
        raise NotImplementedError(f"pad: mode {mode!r} is not supported; minigrad implements mode='constant'")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > x._data.ndim:
        raise ShapeError(
            f"pad: needs pairs (left, right) for at most {x._data.ndim} dimensions, got {len(pad)} numbers"
        )
    if any(p < 0 for p in pad):
        raise ValueError(f"pad: negative padding {pad} is not supported; slice the tensor instead")
    widths = [(0, 0)] * x._data.ndim
    for i in range(len(pad) // 2):
        widths[x._data.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return Pad.apply(x, tuple(widths), value)


# what the Tensor's methods call (see op_table.py)
register(log_softmax, logsumexp, softmax)
