"""Shape ops: reshape/view, transpose/permute, expand, squeeze/unsqueeze, flatten, cat/stack/split.

Most of these are *views*: they return a tensor that reads the same memory
through a different shape and strides (see :mod:`~minigrad.tensor.strides`),
without copying a single element. Their backward only has to undo the shape
change on the gradient: reshape it back, transpose it back, or, for
``expand`` (a broadcast view with stride 0), sum it back with ``grad_rules.unbroadcast``.

``reshape`` returns a view when the memory layout allows it and copies
otherwise; ``view`` never copies and raises when it would have to.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor import grad_rules, strided_arrays, strides
from minigrad.tensor.backend import array_module
from minigrad.tensor.dtypes import promote_types
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.function import Function
from minigrad.tensor.ops_convert import cast
from minigrad.tensor.strides import numel
from minigrad.tensor.tensor import Tensor

__all__ = [
    "reshape", "view", "transpose", "permute", "expand", "squeeze", "unsqueeze", "flatten",
    "contiguous", "cat", "concatenate", "stack", "split", "chunk",
]


def _sizes(args, op: str) -> tuple[int, ...]:
    """Accept ``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for s in args:
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"{op}: sizes must be ints, got {args!r}")
    return tuple(int(s) for s in args)


def _infer_shape(shape: tuple[int, ...], x: Tensor, op: str) -> tuple[int, ...]:
    """Fill in a single -1 so that the number of elements is unchanged."""
    total = x._data.size
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise ShapeError(f"{op}: shape {shape} is invalid: only one dimension can be -1 and sizes must be >= 0")
    known = numel(tuple(s for s in shape if s != -1))
    if unknown:
        if known == 0 or total % known:
            raise ShapeError(
                f"{op}: shape {shape} is invalid for a tensor of {total} elements (shape {x.shape}): "
                f"{total} is not a multiple of {known}"
            )
        shape = shape[: unknown[0]] + (total // known,) + shape[unknown[0] + 1 :]
    elif known != total:
        raise ShapeError(
            f"{op}: shape {shape} is invalid for a tensor of {total} elements (shape {x.shape}); "
            f"the product of the sizes must be {total} (use -1 for one size to have it inferred)"
        )
    return shape


class Reshape(Function):
    def forward(ctx, a, shape):
        ctx.input_shape = a.shape
        out = a.reshape(shape)
        base = out.base
        ctx.is_view = base is not None and (base is a or base is a.base)
        return out

    def backward(ctx, grad):
        return grad.reshape(ctx.input_shape), None


class View(Function):
    is_view = True

    def forward(ctx, a, shape, new_strides):
        ctx.input_shape = a.shape
        return strided_arrays.viewed(a, shape, new_strides)

    def backward(ctx, grad):
        return grad.reshape(ctx.input_shape), None, None


class Squeeze(Reshape):
    is_view = True


class Unsqueeze(Reshape):
    is_view = True


class Permute(Function):
    is_view = True

    def forward(ctx, a, dims):
        ctx.dims = dims
        return strided_arrays.permuted(a, dims)

    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)  # the permutation that undoes dims
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.transpose(inverse), None


class Expand(Function):
    is_view = True

    def forward(ctx, a, shape):
        ctx.input_shape = a.shape
        return strided_arrays.expanded(a, shape)

    def backward(ctx, grad):
        return grad_rules.unbroadcast(grad, ctx.input_shape), None


class Contiguous(Function):
    def forward(ctx, a):
        return strided_arrays.contiguous_copy(a)

    def backward(ctx, grad):
        return grad


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


# --------------------------------------------------------------------------- functions


def reshape(x: Tensor, *shape) -> Tensor:
    """The same elements with a new shape: a view when the layout allows, otherwise a copy."""
    shape = _infer_shape(_sizes(shape, "reshape"), x, "reshape")
    if shape == x._data.shape:
        return x
    return Reshape.apply(x, shape)


def view(x: Tensor, *shape) -> Tensor:
    """Like reshape but never copies; raises when the memory layout does not allow a view."""
    shape = _infer_shape(_sizes(shape, "view"), x, "view")
    new_strides = strides.view_strides(x._data.shape, x.strides, shape)
    if new_strides is None:
        raise ShapeError(
            f"view: cannot view a tensor of shape {x.shape} with strides {x.strides} as {shape} "
            f"without copying: its elements are not laid out contiguously in memory (e.g. after "
            f".T, permute or slicing). Use .reshape{shape} (copies when needed) or "
            f".contiguous().view{shape}"
        )
    return View.apply(x, shape, new_strides)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    dims = list(range(x._data.ndim))
    d0, d1 = x._dim(dim0, "transpose"), x._dim(dim1, "transpose")
    if x._data.ndim < 2:
        return x
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return Permute.apply(x, tuple(dims))


def permute(x: Tensor, *dims) -> Tensor:
    """Reorder the dimensions: result dimension i is input dimension dims[i] (a view)."""
    dims = _sizes(dims, "permute")
    ndim = x._data.ndim
    strides.permute_strides(x._data.shape, x._data.strides, dims)  # validates dims, with a clear error
    dims = tuple(d % ndim for d in dims) if ndim else ()
    if dims == tuple(range(ndim)):
        return x
    return Permute.apply(x, dims)


def expand(x: Tensor, *sizes) -> Tensor:
    """Broadcast size-1 dimensions to larger sizes without copying (stride 0); -1 keeps a size."""
    sizes = _sizes(sizes, "expand")
    shape = x._data.shape
    if len(sizes) < len(shape):
        raise ShapeError(
            f"expand: the number of sizes ({len(sizes)}) must be at least the tensor's number of "
            f"dimensions ({len(shape)}, shape {shape})"
        )
    extra = len(sizes) - len(shape)
    target = list(sizes)
    for i, size in enumerate(sizes):
        if i < extra:
            if size < 0:
                raise ShapeError(f"expand: size -1 is not allowed for the new leading dimension {i}")
            continue
        old = shape[i - extra]
        if size == -1:
            target[i] = old
        elif size != old and old != 1:
            raise ShapeError(
                f"expand: the expanded size {size} must match the existing size {old} at dimension {i} "
                f"(tensor of shape {shape}, target {sizes}); only size-1 dimensions can be expanded"
            )
    target = tuple(target)
    if target == shape:
        return x
    return Expand.apply(x, target)


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


def contiguous(x: Tensor) -> Tensor:
    """A row-major copy when ``x`` is not contiguous (x itself otherwise)."""
    if x._data.flags.c_contiguous:
        return x
    return Contiguous.apply(x)


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
