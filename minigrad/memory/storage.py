"""How many bytes a set of tensors really holds: every buffer once, however many views look at it.

A view (a slice, a transpose, a reshape that needs no copy) is a new tensor
over the *same* buffer: it costs no new memory, and it keeps the whole
buffer alive, not just the elements it shows. So the memory a set of tensors
holds is the sum of their distinct buffers, each counted whole and once -
the rule the tracker follows when it says "a view is never counted twice".

On the CPU a tensor's buffer is a NumPy array (``tensor.numpy()``). A NumPy
view's ``.base`` is the object it borrows its memory from: usually another
array, but not always. ``as_strided`` and ``sliding_window_view`` views hang
off a small helper object (not an ndarray) whose own ``.base`` is the array
they read, so the chain must be followed through any object that has a
``.base``; the owner is the last *array* on it. The buffer registry follows
the chain the same way (:func:`minigrad.tensor.backend.root_array`).
"""

from __future__ import annotations

import numpy as np


def _array_of(tensor) -> np.ndarray:
    """The NumPy array behind a minigrad tensor (or the array itself)."""
    if isinstance(tensor, np.ndarray):
        return tensor
    return tensor.numpy()


def storage_bytes(tensors) -> int:
    """Bytes of the distinct buffers behind ``tensors``: each owning buffer counted whole and once.

    Invariant: adding a view of a tensor already in the list adds 0 bytes
    (``as_strided`` and sliding-window views too); a view of part of a
    buffer still counts the whole buffer; two buffers of equal size are two.
    """
    ### BEGIN SOLUTION 8.1 | follow each array's chain of .base to the last array on it (the chain may pass through objects that are not arrays), and count each such owner once, whole
    owners: dict[int, int] = {}
    for tensor in tensors:
        array = owner = _array_of(tensor)
        base = array.base
        while base is not None:
            if isinstance(base, np.ndarray):
                owner = base
            base = getattr(base, "base", None)
        owners[id(owner)] = owner.nbytes
    return sum(owners.values())
    ### END SOLUTION
