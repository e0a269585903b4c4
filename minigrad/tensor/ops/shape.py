"""Shape ops that are views: reshape/view, transpose/permute, expand; and contiguous.

Most of these are *views*: they return a tensor that reads the same memory
through a different shape and strides (see :mod:`~minigrad.tensor.strides`),
without copying a single element. Their backward only has to undo the shape
change on the gradient: reshape it back, transpose it back, or, for
``expand`` (a broadcast view with stride 0), sum it back with ``grad_rules.unbroadcast``.

``reshape`` returns a view when the memory layout allows it and copies
otherwise; ``view`` never copies and raises when it would have to.
``squeeze``/``unsqueeze``/``flatten`` (reshapes named by the dimensions they
drop, add or merge) are in ``ops/squeeze.py``; ``cat``/``stack``/``split`` in ``ops/join.py``.
"""

from __future__ import annotations

from minigrad.tensor import grad_rules, strided_arrays, strides
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.function import Function
from minigrad.tensor.op_table import register
from minigrad.tensor.shape_args import infer_shape as _infer_shape
from minigrad.tensor.shape_args import sizes as _sizes
from minigrad.tensor.tensor import Tensor

__all__ = ["reshape", "view", "transpose", "permute", "expand", "contiguous"]


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


def contiguous(x: Tensor) -> Tensor:
    """A row-major copy when ``x`` is not contiguous (x itself otherwise)."""
    if x._data.flags.c_contiguous:
        return x
    return Contiguous.apply(x)


# what the Tensor's methods call (see op_table.py)
register(contiguous, expand, permute, reshape, transpose, view)
