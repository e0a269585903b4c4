"""Reshapes named by the dimensions they change: squeeze (drop size-1 dims), unsqueeze (add one), flatten (merge).

Each is a view made by :class:`~minigrad.tensor.ops.shape.Reshape`; its
backward reshapes the gradient back.
"""

from __future__ import annotations

from minigrad.tensor.errors import ShapeError
from minigrad.tensor.op_table import register
from minigrad.tensor.ops.shape import Reshape, reshape
from minigrad.tensor.strides import numel
from minigrad.tensor.tensor import Tensor

__all__ = ["squeeze", "unsqueeze", "flatten"]


class Squeeze(Reshape):
    is_view = True


class Unsqueeze(Reshape):
    is_view = True


def squeeze(x: Tensor, dim=None) -> Tensor:
    """Drop dimensions of size 1 (all of them, or only ``dim``, which may be an int or a tuple)."""
    shape = x._data.shape
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        dims = {x._dim(d, "squeeze") for d in ((dim,) if isinstance(dim, int) else dim)}
        dims = {d for d in dims if shape and shape[d] == 1}  # PyTorch: squeezing a non-1 dim is a no-op
    if not dims:
        return x
    return Squeeze.apply(x, tuple(s for i, s in enumerate(shape) if i not in dims))


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a dimension of size 1 at ``dim`` (negative dims count from the end of the result)."""
    ndim = x._data.ndim + 1
    if not -ndim <= dim < ndim:
        raise IndexError(f"unsqueeze: dimension {dim} is out of range for the result's {ndim} dimensions")
    dim %= ndim
    shape = x._data.shape
    return Unsqueeze.apply(x, shape[:dim] + (1,) + shape[dim:])


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions start_dim..end_dim into one (``flatten(x, 1)`` turns NCHW into N x CHW)."""
    shape = x._data.shape
    if not shape:
        return reshape(x, 1)
    start, end = x._dim(start_dim, "flatten"), x._dim(end_dim, "flatten")
    if start > end:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for shape {shape}")
    return reshape(x, shape[:start] + (numel(shape[start : end + 1]),) + shape[end + 1 :])


# what the Tensor's methods call (see op_table.py)
register(flatten, squeeze, unsqueeze)
