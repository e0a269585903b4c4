"""Allocator statistics in the shape of ``torch.cuda.memory_stats()``.

Each statistic is kept for ``all`` blocks and per pool (``small_pool``,
``large_pool``) with four figures: ``current``, ``peak``, ``allocated``
(total ever added) and ``freed`` (total ever removed); ``current = allocated
- freed`` always. The flat dictionary names them as PyTorch does, e.g.
``"reserved_bytes.all.peak"``. The statistics:

- ``allocated_bytes`` / ``allocation``: blocks handed out (rounded sizes);
- ``requested_bytes``: what callers asked for, before rounding;
- ``reserved_bytes`` / ``segment``: memory taken from the device;
- ``active_bytes`` / ``active``: blocks in use. PyTorch also counts a freed
  block whose stream has not finished with it; without streams here it
  equals allocated;
- ``inactive_split_bytes`` / ``inactive_split``: free blocks that share
  their segment with another block - cached memory that ``empty_cache()``
  cannot give back;

and the counters ``num_alloc_retries`` (a device allocation failed and was
retried after emptying the cache), ``num_ooms``, ``num_device_alloc`` and
``num_device_free``.
"""

from __future__ import annotations

from minigrad.memory.allocator.sizes import LARGE, SMALL

STAT_TYPES = ("all", SMALL, LARGE)
ARRAY_STATS = (
    "allocated_bytes", "allocation", "requested_bytes", "reserved_bytes", "segment",
    "active_bytes", "active", "inactive_split_bytes", "inactive_split",
)
COUNTERS = ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free")


class Stat:
    """One figure's ``current``, ``peak``, ``allocated`` and ``freed``."""

    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def change(self, amount: int) -> None:
        if amount >= 0:
            self.allocated += amount
        else:
            self.freed -= amount
        self.current += amount
        if self.current > self.peak:
            self.peak = self.current

    def reset_peak(self) -> None:
        self.peak = self.current


class MemoryStats:
    """Every statistic for ``all`` and each pool, plus the counters."""

    def __init__(self):
        self.arrays = {name: {kind: Stat() for kind in STAT_TYPES} for name in ARRAY_STATS}
        self.counters = dict.fromkeys(COUNTERS, 0)

    def change(self, name: str, pool: str, amount: int) -> None:
        """Add ``amount`` (negative: remove) to statistic ``name`` for ``all`` and for ``pool``."""
        stats = self.arrays[name]
        stats["all"].change(amount)
        stats[pool].change(amount)

    def current(self, name: str, kind: str = "all") -> int:
        return self.arrays[name][kind].current

    def peak(self, name: str, kind: str = "all") -> int:
        return self.arrays[name][kind].peak

    def reset_peaks(self) -> None:
        for stats in self.arrays.values():
            for stat in stats.values():
                stat.reset_peak()

    def as_dict(self) -> dict[str, int]:
        """The flat, sorted dictionary ``torch.cuda.memory_stats()`` returns (``"allocated_bytes.all.current"``, ...)."""
        flat = dict(self.counters)
        for name, stats in self.arrays.items():
            for kind, stat in stats.items():
                for field in Stat.__slots__:
                    flat[f"{name}.{kind}.{field}"] = getattr(stat, field)
        return dict(sorted(flat.items()))
