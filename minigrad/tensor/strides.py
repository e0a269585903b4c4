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
read again and again. Copying a view into fresh row-major memory
(``contiguous()``) is one walk over the view's indices: :func:`strided_map`.

The library runs on these functions: ``permute``, ``expand``, ``view`` and
``contiguous`` take their strides (and, for ``contiguous``, the copy) from
here, through :mod:`~minigrad.tensor.strided_arrays`. When nobody has plugged
other versions in (``minigrad.grading.use_exercise("03")``), that module lets
NumPy compute the same numbers, faster; the tests check that both agree.
Strides here are counted in *elements*, as in PyTorch; NumPy counts them in
bytes.

Invariants
- ``shape`` and ``strides`` are tuples of ints of the same length; a 0-d tensor
  has ``shape == strides == ()``.
- ``position_to_index(index_to_position(i, strides_for_shape(s)), s) == i``.
- Every function here only computes numbers; none of them copies a storage,
  except ``strided_map``, which writes into the ``out`` storage it is given.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

__all__ = [
    "Layout", "numel", "strides_for_shape", "index_to_position", "position_to_index", "broadcast_shapes",
    "broadcast_index", "permute_strides", "expand_strides", "is_contiguous", "view_strides", "strided_map",
]

Shape = tuple[int, ...]
Strides = tuple[int, ...]


class Layout(NamedTuple):
    """How a tensor reads its storage: element ``index`` is at ``offset + sum(index[d] * strides[d])``."""

    shape: Shape
    strides: Strides
    offset: int = 0


def numel(shape: Shape) -> int:
    """Number of elements of a tensor with this shape (1 for a 0-d tensor)."""
    n = 1
    for size in shape:
        n *= size
    return n


# ------------------------------------------------------------------ 3.1 a contiguous layout

def strides_for_shape(shape: Shape) -> Strides:
    """Strides of a contiguous (row-major, "C order") tensor of this shape.

    The last dimension has stride 1; one step along an earlier dimension skips
    everything the dimensions to its right hold (section 2 of chapter 03).
    ``strides_for_shape(()) == ()``; sizes of 0 take part like any other size.
    """
    ### BEGIN SOLUTION 3.1 | row-major strides: one step along a dimension skips a whole block of the dimensions to its right
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))
    ### END SOLUTION


def index_to_position(index: Shape, strides: Strides, offset: int = 0) -> int:
    """Storage position of the element at ``index`` of a tensor read with ``strides`` from ``offset``.

    Works for any layout (a view's strides may be 0, permuted or stepped), not
    only contiguous ones (section 3 of chapter 03).
    """
    ### BEGIN SOLUTION 3.1 | start at the offset and take index[d] steps of strides[d] along every dimension d
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


# ------------------------------------------------------------------ 3.2 broadcasting

def broadcast_shapes(*shapes: Shape) -> Shape:
    """The shape that all ``shapes`` broadcast to, following NumPy/PyTorch rules.

    ``broadcast_shapes((3, 1), (4,)) == (3, 4)``; ``broadcast_shapes() == ()``.
    Raises ``ValueError`` naming the shapes and the offending dimension when
    they do not fit (section 7 of chapter 03 states the rules).
    """
    ### BEGIN SOLUTION 3.2 | apply the three broadcasting rules column by column, starting from the aligned right ends
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


# ------------------------------------------------------------------ 3.3 views: permute and expand

def permute_strides(shape: Shape, strides: Strides, dims: Shape) -> tuple[Shape, Strides]:
    """Shape and strides of ``tensor.permute(dims)``: the same storage, dimensions reordered.

    Dimension ``d`` of the result is dimension ``dims[d]`` of the input.
    Negative dims count from the end. Raises ``ValueError`` unless ``dims``
    names every dimension exactly once.
    """
    ### BEGIN SOLUTION 3.3 | validate dims (a permutation, negatives allowed), then let every result dimension take its input dimension's size and stride
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


def expand_strides(shape: Shape, strides: Strides, new_shape: Shape) -> Strides:
    """Strides of ``tensor.expand(new_shape)``: a broadcast view that copies nothing.

    ``new_shape`` must be what ``shape`` broadcasts to (aligned on the right,
    new dimensions on the left, a size 1 may grow). Stepping along a dimension
    that was added or grown must read the same elements again. Raises
    ``ValueError`` when ``shape`` cannot be expanded to ``new_shape``.
    """
    ### BEGIN SOLUTION 3.3 | align shape with new_shape on the right as broadcasting does; a dimension that is new or grows from 1 must not move in memory
    extra = len(new_shape) - len(shape)
    if extra < 0:
        raise ValueError(f"expand: cannot expand shape {tuple(shape)} to fewer dimensions {tuple(new_shape)}")
    new_strides = [0] * extra
    for size, stride, new_size in zip(shape, strides, new_shape[extra:]):
        if size == new_size:
            new_strides.append(stride)
        elif size == 1:
            new_strides.append(0)
        else:
            raise ValueError(
                f"expand: cannot expand shape {tuple(shape)} to {tuple(new_shape)}: "
                f"size {size} would have to become {new_size} (only sizes of 1 can grow)"
            )
    return tuple(new_strides)
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


# ------------------------------------------------------------------ 3.4 view: reshape without a copy

def view_strides(shape: Shape, strides: Strides, new_shape: Shape) -> Strides | None:
    """Strides that read the same elements, in the same row-major order, with ``new_shape``; None if impossible.

    This is the rule of ``view`` (section 5 of chapter 03): merging or splitting
    dimensions is free only where the old layout already walks memory evenly.
    A transposed matrix cannot be flattened without a copy, for example.
    Dimensions of size 1 never move, so their strides are free; for a tensor
    without elements any strides do, and the row-major ones are returned.
    """
    if numel(shape) != numel(new_shape):
        return None
    if numel(shape) == 0:
        return strides_for_shape(new_shape)
    ### BEGIN SOLUTION 3.4 | group the old dimensions into runs that step evenly through memory; every new dimension must split one run, from the outermost in
    runs = []  # [number of elements, stride of the innermost dimension], outermost run first
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        if runs and runs[-1][1] == size * stride:  # the run so far continues evenly into this dimension
            runs[-1] = [runs[-1][0] * size, stride]
        else:
            runs.append([size, stride])
    new_strides = []
    for size in new_shape:
        if not runs:  # only size-1 dimensions are left
            new_strides.append(1)
            continue
        run_size, run_stride = runs[0]
        if run_size % size:
            return None  # this dimension would have to step across a jump in memory
        inner = run_size // size
        new_strides.append(inner * run_stride)
        if inner == 1:
            runs.pop(0)
        else:
            runs[0] = [inner, run_stride]
    return tuple(new_strides)
    ### END SOLUTION


# ------------------------------------------------------------------ 3.5 a strided elementwise map

def strided_map(fn: Callable[[Any], Any], source, source_layout: Layout, out, out_layout: Layout) -> None:
    """For every index of ``out_layout.shape``: write ``fn(source element)`` into ``out``.

    ``source`` and ``out`` are flat storages (lists, 1-d arrays), each read
    through its own layout; ``source_layout.shape`` broadcasts to
    ``out_layout.shape``, so the source element of an output index is the one
    ``broadcast_index`` names. Only the positions ``out_layout`` reaches are
    written. ``contiguous()`` is this map with ``fn`` the identity and a
    row-major ``out_layout``.
    """
    try:
        fits = broadcast_shapes(source_layout.shape, out_layout.shape) == tuple(out_layout.shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"strided_map: a source of shape {tuple(source_layout.shape)} does not broadcast "
            f"to the output shape {tuple(out_layout.shape)}"
        )
    ### BEGIN SOLUTION 3.5 | visit every output index once; find where it lives in out and where its (broadcast) source element lives in source
    for step in range(numel(out_layout.shape)):
        out_index = position_to_index(step, out_layout.shape)
        source_index = broadcast_index(out_index, out_layout.shape, source_layout.shape)
        value = source[index_to_position(source_index, source_layout.strides, source_layout.offset)]
        out[index_to_position(out_index, out_layout.strides, out_layout.offset)] = fn(value)
    ### END SOLUTION
