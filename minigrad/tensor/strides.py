"""Shapes, strides and broadcasting, in plain Python.

A tensor is a flat block of memory (its *storage*) plus three numbers per
dimension that say how to read it: the ``shape`` (how many elements along each
dimension), the ``strides`` (how many elements to skip in storage to move one
step along each dimension) and an ``offset`` (where element ``(0, 0, ...)``
lives). The element at index ``(i, j, k)`` is at storage position
``offset + i*strides[0] + j*strides[1] + k*strides[2]``.

Many operations only change those numbers and leave the storage alone: they are
*views*. Transposing swaps two strides; slicing moves the offset and multiplies
strides; broadcasting (``expand``) sets a stride to 0 so the same element is
read again and again.

The ``Tensor`` class lets NumPy do this work for speed, but every number it
reports (``Tensor.strides``, ``is_contiguous()``, the broadcast error messages,
whether ``view()`` is possible) agrees with the functions below, and the tests
check that they agree with NumPy. Strides here are counted in *elements*, as in
PyTorch; NumPy counts them in bytes.

Invariants
- ``shape`` and ``strides`` are tuples of ints of the same length; a 0-d tensor
  has ``shape == strides == ()``.
- ``position_to_index(index_to_position(i, strides_for_shape(s)), s) == i``.
"""

from __future__ import annotations

__all__ = [
    "strides_for_shape",
    "index_to_position",
    "position_to_index",
    "broadcast_shapes",
    "broadcast_index",
    "permute_strides",
    "is_contiguous",
    "view_strides",
    "numel",
]

Shape = tuple[int, ...]
Strides = tuple[int, ...]


def numel(shape: Shape) -> int:
    """Number of elements of a tensor with this shape (1 for a 0-d tensor)."""
    n = 1
    for size in shape:
        n *= size
    return n


def strides_for_shape(shape: Shape) -> Strides:
    """Strides of a contiguous (row-major, "C order") tensor of this shape.

    The last dimension has stride 1; each earlier one skips a whole block of
    the dimensions after it: ``strides_for_shape((2, 3, 4)) == (12, 4, 1)``.
    """
    ### BEGIN SOLUTION 3.1 | walk the shape from the last dimension to the first; stride = product of the sizes to its right
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))
    ### END SOLUTION


def index_to_position(index: Shape, strides: Strides, offset: int = 0) -> int:
    """Storage position of the element at ``index``: ``offset + sum(i * s)``."""
    ### BEGIN SOLUTION 3.2 | position = offset + index[0]*strides[0] + index[1]*strides[1] + ...
    position = offset
    for i, stride in zip(index, strides):
        position += i * stride
    return position
    ### END SOLUTION


def position_to_index(position: int, shape: Shape) -> Shape:
    """The inverse of ``index_to_position`` for a *contiguous* tensor of ``shape``.

    ``position`` counts elements in row-major order; the last dimension varies
    fastest, so peel it off first with ``divmod``.
    """
    index = []
    for size in reversed(shape):
        position, i = divmod(position, size)
        index.append(i)
    return tuple(reversed(index))


def broadcast_shapes(*shapes: Shape) -> Shape:
    """The shape that all ``shapes`` broadcast to, following NumPy/PyTorch rules.

    Align the shapes on the right; missing leading dimensions count as 1. In
    every column the sizes must be equal or 1, and the result takes the size
    that is not 1. ``broadcast_shapes((3, 1), (4,)) == (3, 4)``.
    Raises ``ValueError`` naming the offending dimension when they do not fit.
    """
    ### BEGIN SOLUTION 3.3 | pad every shape on the left with 1s to the longest length; per column sizes must be equal or 1, keep the one that isn't 1
    ndim = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    result = []
    for dim in range(ndim):
        size = 1
        for shape in padded:
            if shape[dim] == 1 or shape[dim] == size:
                continue
            if size != 1:
                raise ValueError(
                    f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast: "
                    f"dimension {dim - ndim} has sizes {size} and {shape[dim]} "
                    f"(sizes must be equal, or one of them 1)"
                )
            size = shape[dim]
        result.append(size)
    return tuple(result)
    ### END SOLUTION


def broadcast_index(big_index: Shape, big_shape: Shape, shape: Shape) -> Shape:
    """Which element of a tensor of ``shape`` is read at ``big_index`` after broadcasting to ``big_shape``.

    Leading extra dimensions are dropped; a dimension of size 1 always reads
    index 0. ``broadcast_index((2, 5), (3, 6), (1, 6)) == (0, 5)``.
    """
    extra = len(big_shape) - len(shape)
    return tuple(0 if size == 1 else i for i, size in zip(big_index[extra:], shape))


def permute_strides(shape: Shape, strides: Strides, dims: Shape) -> tuple[Shape, Strides]:
    """Shape and strides of ``tensor.permute(dims)``: the same storage, dimensions reordered.

    Dimension ``d`` of the result is dimension ``dims[d]`` of the input, so it
    takes that dimension's size *and* stride. Negative dims count from the end.
    ``dims`` must name every dimension exactly once.
    """
    ### BEGIN SOLUTION 3.4 | normalise negative dims (d % ndim), check dims is a permutation of range(ndim), then pick shape[d] and strides[d] for each d in dims
    ndim = len(shape)
    if len(dims) != ndim:
        raise ValueError(f"permute: dims {tuple(dims)} has {len(dims)} entries but the tensor has {ndim} dimensions")
    dims = tuple(d % ndim if -ndim <= d < ndim else d for d in dims)
    if sorted(dims) != list(range(ndim)):
        raise ValueError(
            f"permute: dims {tuple(dims)} must list every dimension 0..{ndim - 1} exactly once"
        )
    return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims)
    ### END SOLUTION


def is_contiguous(shape: Shape, strides: Strides) -> bool:
    """True when the elements are laid out row-major with no gaps.

    Dimensions of size 1 may have any stride (they are never stepped along),
    and a tensor with no elements is contiguous, as in PyTorch.
    """
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def view_strides(shape: Shape, strides: Strides, new_shape: Shape) -> Strides | None:
    """Strides that read the same elements, in the same order, with ``new_shape``; None if impossible.

    ``view`` needs this: reshaping a tensor without copying works when each
    group of old dimensions that is merged or split is itself laid out
    contiguously (stride[i] == stride[i+1] * size[i+1] inside the group).
    A transposed matrix cannot be flattened without a copy, for example.
    The algorithm is PyTorch's ``computeStride``.
    """
    if numel(shape) != numel(new_shape):
        return None
    if numel(shape) == 0 or not shape:
        return strides_for_shape(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    # chunk_base_stride: the stride of the last (innermost) dimension of the current chunk
    chunk_base_stride = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        # a chunk ends where the next-outer old dimension does not continue it contiguously
        if tensor_d == 0 or (shape[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)
