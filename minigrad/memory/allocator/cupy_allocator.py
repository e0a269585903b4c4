"""Serving CuPy from a ``CachingAllocator``: every CuPy array's memory is a block carved from one device buffer.

``CupyCachingAllocator(capacity)`` takes one buffer of ``capacity`` bytes
from the GPU (a single ``cudaMalloc``) and lets a ``CachingAllocator``
manage it: the allocator's addresses are real device pointers inside that
buffer. Inside ``with pool.serving():`` CuPy asks it for every array
(``cupy.cuda.set_allocator``); the block goes back to the allocator when
CuPy frees the array. Exceeding the buffer raises
:class:`~minigrad.memory.allocator.AllocatorOutOfMemoryError`. Importing
this module never needs CuPy; making a ``CupyCachingAllocator`` does.
"""

from __future__ import annotations

from contextlib import contextmanager

from minigrad.memory.allocator.caching_allocator import CachingAllocator
from minigrad.memory.allocator.device import DeviceMemory


def _import_cupy():
    try:
        import cupy
    except ImportError as error:
        raise ImportError(
            'CupyCachingAllocator needs CuPy and an NVIDIA GPU: pip install "minigrad[gpu]" '
            "(CachingAllocator itself works without them)"
        ) from error
    return cupy


class CupyCachingAllocator:
    """A ``CachingAllocator`` (``self.allocator``) over one device buffer of ``capacity`` bytes on the current GPU."""

    def __init__(self, capacity: int, policy: str = "best_fit"):
        cupy = _import_cupy()
        self._cupy = cupy
        self.device_id = cupy.cuda.runtime.getDevice()
        self.buffer = cupy.cuda.memory.Memory(capacity)  # one cudaMalloc, outside any memory pool
        self.allocator = CachingAllocator(device=DeviceMemory(capacity, base=self.buffer.ptr), policy=policy)
        self._python_allocator = cupy.cuda.memory.PythonFunctionAllocator(self._malloc, self._free)

    def _malloc(self, nbytes: int, device_id: int) -> int:
        if device_id != self.device_id:
            raise ValueError(f"CupyCachingAllocator: its buffer is on GPU {self.device_id}, "
                             f"CuPy asked for memory on GPU {device_id}; make one allocator per GPU")
        return self.allocator.malloc(nbytes)

    def _free(self, address: int, device_id: int) -> None:
        self.allocator.free(address)

    @contextmanager
    def serving(self):
        """CuPy allocates through this allocator inside the block (the previous allocator comes back after)."""
        previous = self._cupy.cuda.get_allocator()
        self._cupy.cuda.set_allocator(self._python_allocator.malloc)
        try:
            yield self
        finally:
            self._cupy.cuda.set_allocator(previous)
