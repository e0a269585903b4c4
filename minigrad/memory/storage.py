"""How many bytes a set of tensors really holds: every buffer once, however many views look at it.

A view (a slice, a transpose, a reshape that needs no copy) is a new tensor
over the *same* buffer: it costs no new memory, and it keeps the whole
buffer alive, not just the elements it shows. So the memory a set of tensors
holds is the sum of their distinct buffers, each counted whole and once -
the rule the tracker follows when it says "a view is never counted twice".

On the CPU a tensor's buffer is a NumPy array (``tensor.numpy()``); a NumPy
view's ``.base`` is the array that owns the memory it looks at.
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

    Invariant: adding a view of a tensor already in the list adds 0 bytes;
    a view of part of a buffer still counts the whole buffer.
    """
    ### BEGIN SOLUTION 8.1 | follow each array back to the array that owns its memory, and count each owner once, whole
    owners: dict[int, int] = {}
    for tensor in tensors:
        array = _array_of(tensor)
        while isinstance(array.base, np.ndarray):
            array = array.base
        owners[id(array)] = array.nbytes
    return sum(owners.values())
    ### END SOLUTION
