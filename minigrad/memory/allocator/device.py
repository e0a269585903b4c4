"""Device memory as the allocator sees it: ``malloc`` a range of addresses, ``free`` it, maybe run out.

This stands in for ``cudaMalloc``/``cudaFree``: ranges come from the
address space ``[base, base + capacity)``, the lowest range that fits
first; a freed range merges with free neighbours. With ``capacity=None``
the space is unbounded. On a GPU the same ranges are offsets into one
real device buffer (see :mod:`minigrad.memory.allocator.cupy_allocator`).
"""

from __future__ import annotations

from bisect import bisect_left, insort


class DeviceMemory:
    """An address space of ``capacity`` bytes (``None``: unbounded) starting at ``base``."""

    def __init__(self, capacity: int | None = None, base: int = 0):
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0):
            raise ValueError(f"DeviceMemory: capacity must be a number of bytes >= 0 or None, got {capacity!r}")
        self.capacity = capacity
        self.base = base
        self._free: list[tuple[int, int]] = [(base, capacity if capacity is not None else float("inf"))]  # (start, size)
        self._used: dict[int, int] = {}  # start -> size
        self.used_bytes = 0

    def malloc(self, nbytes: int) -> int | None:
        """The start of a fresh range of ``nbytes``, or ``None`` when no free range is big enough."""
        for index, (start, size) in enumerate(self._free):
            if size >= nbytes:
                if size == nbytes:
                    del self._free[index]
                else:
                    self._free[index] = (start + nbytes, size - nbytes)
                self._used[start] = nbytes
                self.used_bytes += nbytes
                return start
        return None

    def free(self, start: int) -> None:
        """Give back the range that ``malloc`` returned at ``start``; it merges with free neighbours."""
        size = self._used.pop(start)
        self.used_bytes -= size
        index = bisect_left(self._free, (start, 0))
        if index < len(self._free) and start + size == self._free[index][0]:
            size += self._free.pop(index)[1]
        if index > 0 and self._free[index - 1][0] + self._free[index - 1][1] == start:
            start, before = self._free.pop(index - 1)
            size += before
        insort(self._free, (start, size))
