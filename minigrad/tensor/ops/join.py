"""Joining and splitting tensors: cat, stack, split, chunk.

``cat`` and ``stack`` copy their inputs into one new array (mixed dtypes are
promoted first); their backward cuts the gradient back into the pieces.
``split`` and ``chunk`` return views made by slicing (``x[..., a:b]``).
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.backend import array_module
from minigrad.tensor.dtypes import promote_types
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.function import Function
from minigrad.tensor.op_table import register
from minigrad.tensor.ops.convert import cast
from minigrad.tensor.tensor import Tensor

__all__ = ["cat", "concatenate", "stack", "split", "chunk"]


class Cat(Function):
    def forward(ctx, *arrays, dim):
        ctx.dim = dim
        ctx.bounds = np.cumsum([a.shape[dim] for a in arrays])[:-1].tolist()
        return array_module(arrays[0]).concatenate(arrays, axis=dim)

    def backward(ctx, grad):
        return tuple(array_module(grad).split(grad, ctx.bounds, axis=ctx.dim))


class Stack(Function):
    def forward(ctx, *arrays, dim):
        ctx.dim, ctx.count = dim, len(arrays)
        return array_module(arrays[0]).stack(arrays, axis=dim)

    def backward(ctx, grad):
        lead = (slice(None),) * ctx.dim
        return tuple(grad[lead + (i,)] for i in range(ctx.count))


def _same_dtype(tensors, op: str):
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{op}: needs a non-empty list of tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected a list of Tensors, item {i} is {type(t).__name__}")
    dtype = tensors[0]._data.dtype
    for t in tensors[1:]:
        dtype = promote_types(dtype, t._data.dtype)
    return [cast(t, dtype) for t in tensors]


def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension; all other sizes must match."""
    tensors = _same_dtype(tensors, "cat")
    first = tensors[0]
    if first._data.ndim == 0:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    d = first._dim(dim, "cat")
    for i, t in enumerate(tensors[1:], start=1):
        if t._data.ndim != first._data.ndim or any(
            a != b for j, (a, b) in enumerate(zip(t.shape, first.shape)) if j != d
        ):
            raise ShapeError(
                f"cat: tensors must have the same shape except in dimension {d}; tensor 0 has shape "
                f"{first.shape} and tensor {i} has shape {t.shape}"
            )
    return Cat.apply(*tensors, dim=d)


concatenate = cat


def stack(tensors, dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dimension ``dim``."""
    tensors = _same_dtype(tensors, "stack")
    first = tensors[0]
    ndim = first._data.ndim + 1
    if not -ndim <= dim < ndim:
        raise IndexError(f"stack: dimension {dim} is out of range for the result's {ndim} dimensions")
    for i, t in enumerate(tensors[1:], start=1):
        if t.shape != first.shape:
            raise ShapeError(
                f"stack: all tensors must have the same shape; tensor 0 has shape {first.shape} "
                f"and tensor {i} has shape {t.shape}"
            )
    return Stack.apply(*tensors, dim=dim % ndim)


def split(x: Tensor, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of consecutive pieces along ``dim``: pieces of one size (the last may be smaller) or the listed sizes."""
    d = x._dim(dim, "split")
    length = x._data.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step <= 0:
            raise ValueError(f"split: split_size must be positive, got {step}")
        sizes = [min(step, length - start) for start in range(0, length, step)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != length:
            raise ShapeError(
                f"split: sizes {sizes} add up to {sum(sizes)} but dimension {d} has size {length} "
                f"(tensor of shape {x.shape})"
            )
    pieces, start = [], 0
    lead = (slice(None),) * d
    for size in sizes:
        pieces.append(x[lead + (slice(start, start + size),)])
        start += size
    return tuple(pieces)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` pieces of equal size (the last may be smaller), as in PyTorch."""
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    length = x._data.shape[x._dim(dim, "chunk")]
    return split(x, max(1, -(-length // chunks)), dim)


# what the Tensor's methods call (see op_table.py)
register(chunk, split)
