"""Where a saved array sits in its buffer, so that the same view can be cut from the buffer made again.

A node often saves a view (``x.reshape``, a transposed im2col matrix), not
the buffer itself. The budget mode evicts and remakes whole buffers, so it
remembers each saved array as its :class:`Geometry` in the buffer (its shape,
its strides in bytes, the byte offset of its first element) and cuts the
view out of the remade buffer with ``as_strided``.

Invariants
- ``cut(buffer, geometry_of(view, root))`` reads the same elements of
  ``buffer`` as ``view`` reads of ``root``, for any ``buffer`` with ``root``'s
  shape, dtype and memory order.
- :func:`geometry_of` returns None for a view it cannot describe (another
  dtype than its buffer, or a buffer that is not one contiguous block):
  such a saved array is kept as it is, outside the budget.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from minigrad.tensor.backend import array_module

__all__ = ["Geometry", "geometry_of", "cut"]


class Geometry(NamedTuple):
    shape: tuple
    strides: tuple  # in bytes, as NumPy counts them
    offset: int  # in elements, from the buffer's first element in memory
    writeable: bool


def _address(array) -> int:
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.__cuda_array_interface__["data"][0]  # CuPy (and the strict test device)


def geometry_of(view, root) -> Geometry | None:
    """How ``view`` sits in ``root``, the array owning its memory (None if it cannot be cut back out)."""
    if view.dtype != root.dtype or not (root.flags.c_contiguous or root.flags.f_contiguous):
        return None
    skip = _address(view) - _address(root)
    if skip % root.itemsize:
        return None
    return Geometry(tuple(view.shape), tuple(view.strides), skip // root.itemsize, bool(view.flags.writeable))


def cut(buffer, geometry: Geometry | None):
    """The view ``geometry`` describes, cut from ``buffer`` (``buffer`` itself when ``geometry`` is None)."""
    if geometry is None:
        return buffer
    flat = buffer.ravel(order="K")[geometry.offset:]  # a view, in memory order, of a contiguous buffer
    if isinstance(buffer, np.ndarray):
        return np.lib.stride_tricks.as_strided(flat, geometry.shape, geometry.strides, writeable=geometry.writeable)
    return array_module(buffer).lib.stride_tricks.as_strided(flat, geometry.shape, geometry.strides)
