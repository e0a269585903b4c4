"""The arrays behind ``permute``, ``expand``, ``view`` and ``contiguous``, built from :mod:`strides`.

Each function here makes a backend array for a view or a copy. The clear
version builds it from the numbers of :mod:`~minigrad.tensor.strides`: the
view is ``as_strided(array, shape, strides)`` (strides in elements times the
item size, as NumPy counts bytes) and the copy is :func:`strides.strided_map`
walking every element. That is what runs whenever a function of ``strides``
has been replaced (``minigrad.grading.use_exercise("03")`` plugs a learner's
file in), so the chapter's demos run on the learner's strides.

Otherwise the *speed path* runs: NumPy's own ``transpose``, ``broadcast_to``,
``reshape`` and ``ascontiguousarray``, which compute the same strides in C
(``tests/tensor/test_strided_arrays.py`` checks both paths agree). Arrays of
other backends (CuPy) always take the speed path.

Invariants
- Both paths return arrays with the same shape, the same elements and, for
  views, memory shared with ``array``; views of ``expand`` are read-only.
- The speed path costs one identity test per call over NumPy's own op.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor import strides
from minigrad.tensor.backend import array_module

__all__ = ["strides_replaced", "element_strides", "as_view", "permuted", "expanded", "viewed", "contiguous_copy"]

_EXERCISE_FUNCTIONS = (
    "strides_for_shape", "index_to_position", "broadcast_shapes", "permute_strides",
    "expand_strides", "view_strides", "strided_map",
)
_LIBRARY_VERSIONS = tuple((name, getattr(strides, name)) for name in _EXERCISE_FUNCTIONS)
_STRIDES_NAMESPACE = vars(strides)


def strides_replaced() -> bool:
    """True while another version of one of ``strides``' exercise functions is plugged in."""
    for name, function in _LIBRARY_VERSIONS:
        if _STRIDES_NAMESPACE[name] is not function:
            return True
    return False


def _clear_path(array) -> bool:
    """Build from ``strides``? Only for NumPy arrays whose byte strides are whole elements."""
    return (
        strides_replaced()
        and type(array) is np.ndarray
        and all(s % array.itemsize == 0 for s in array.strides)
    )


def element_strides(array) -> tuple[int, ...]:
    return tuple(s // array.itemsize for s in array.strides)


def as_view(array, shape, element_strides_, writeable: bool | None = None):
    """A view of ``array``'s memory read with ``shape`` and ``element_strides_`` from ``array``'s first element."""
    byte_strides = tuple(s * array.itemsize for s in element_strides_)
    writeable = array.flags.writeable if writeable is None else writeable
    return np.lib.stride_tricks.as_strided(array, tuple(shape), byte_strides, writeable=writeable)


def permuted(array, dims):
    """``array.transpose(dims)``, with the strides of ``strides.permute_strides``."""
    if not _clear_path(array):
        return array.transpose(dims)  # speed path
    shape, new_strides = strides.permute_strides(array.shape, element_strides(array), dims)
    return as_view(array, shape, new_strides)


def expanded(array, shape):
    """``broadcast_to(array, shape)`` (read-only), with the strides of ``strides.expand_strides``."""
    if not _clear_path(array):
        return array_module(array).broadcast_to(array, shape)  # speed path
    new_strides = strides.expand_strides(array.shape, element_strides(array), shape)
    return as_view(array, shape, new_strides, writeable=False)


def viewed(array, shape, new_strides):
    """``array`` read as ``shape`` without a copy; ``new_strides`` come from ``strides.view_strides``."""
    if _clear_path(array):
        return as_view(array, shape, new_strides)
    out = array.reshape(shape)  # speed path: NumPy's own view when it finds one
    if out.base is None or not (out.base is array or out.base is array.base):  # NumPy copied: build the view
        out = array_module(array).lib.stride_tricks.as_strided(
            array, shape, tuple(s * array.itemsize for s in new_strides)
        )
    return out


def _address(array) -> int:
    return array.__array_interface__["data"][0]


def _owner(array) -> np.ndarray:
    """The array that owns the memory ``array`` reads (``.base`` links pass through NumPy's helper objects)."""
    owner, base = array, array.base
    while base is not None:
        if type(base) is np.ndarray:
            owner = base
        base = getattr(base, "base", None)
    return owner


def _storage(array) -> tuple[np.ndarray, int]:
    """The flat storage ``array`` reads and the position of its element ``(0, 0, ...)`` in it.

    The storage is the owner's whole memory, as ``Tensor.storage_offset()``
    counts it; when the owner is not one row-major block of the same dtype,
    it is the span of memory between ``array``'s lowest and highest element.
    """
    owner = _owner(array)
    skip = _address(array) - _address(owner)
    if owner.flags.c_contiguous and owner.dtype == array.dtype and skip % array.itemsize == 0:
        return owner.reshape(-1), skip // array.itemsize
    steps = element_strides(array)
    low = sum((n - 1) * s for n, s in zip(array.shape, steps) if s < 0)
    high = sum((n - 1) * s for n, s in zip(array.shape, steps) if s > 0)
    lowest = array[tuple(slice(n - 1, n) if s < 0 else slice(0, 1) for n, s in zip(array.shape, steps))]
    return as_view(lowest, (high - low + 1,), (1,), writeable=False), -low


def contiguous_copy(array):
    """A row-major copy of ``array``: ``strides.strided_map`` with the identity, from its layout to a fresh one."""
    if not _clear_path(array) or array.ndim == 0 or array.size == 0:
        return array_module(array).ascontiguousarray(array)  # speed path: NumPy's strided copy, in C
    storage, offset = _storage(array)
    out = np.empty(array.size, dtype=array.dtype)
    source_layout = strides.Layout(array.shape, element_strides(array), offset)
    out_layout = strides.Layout(array.shape, strides.strides_for_shape(array.shape), 0)
    strides.strided_map(_identity, storage, source_layout, out, out_layout)
    return out.reshape(array.shape)


def _identity(value):
    return value
