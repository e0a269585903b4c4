"""What a warp's access costs: 32-byte sectors of global memory and bank conflicts of shared memory.

A GPU does not serve threads one by one. The 32 threads of a warp (32
consecutive threads of a block, counted x fastest, then y, then z) execute
each load or store instruction together, and the hardware serves the whole
warp at once:

- **Global memory** moves whole 32-byte *sectors*. One warp instruction costs
  the number of distinct sectors its threads touch: 32 adjacent float32 are
  4 sectors (128 bytes moved for 128 requested: 100 % efficiency); every
  other float32 (stride 2) is 8 sectors (50 %); one float32 from each of 32
  rows of a row-major matrix is 32 sectors (12.5 %).
- **Shared memory** is split into 32 *banks* of 4-byte words (word ``w`` is
  in bank ``w % 32``); each bank serves one word per pass. The *conflict
  degree* of a warp instruction is the largest number of distinct words it
  asks of one bank: 1 is conflict-free, 32 means 32 passes one after another.
  Threads asking for the same word share it (a broadcast costs nothing).

The simulator runs one thread at a time, so it rebuilds the warp
instructions afterwards: the ``k``-th access a thread makes on a given line of
the kernel belongs to the same warp instruction as the ``k``-th access the
other threads of its warp make on that line (``x[i] + y[i]`` is two
instructions: every thread reads ``x`` first).
That is how a warp executes when its threads agree on the path through the
kernel; where they diverge, the grouping is an approximation. The arrays
(``arrays.py``) only log each access - thread and byte offset, under its
array and line - and at the end of each block :meth:`WarpAccesses.finish`
rebuilds the warp instructions with NumPy and adds their sectors and
conflict degrees to the launch's counters.

Assumptions, stated so the numbers can be checked by hand: every global
array starts on a sector boundary (CUDA's allocations are 256-byte aligned)
and a byte's address is its offset in the array's buffer (strides
included) and no element straddles two sectors; every shared array starts
at bank 0. Atomics are not counted here.
"""

from __future__ import annotations

import numpy as np

SECTOR_BYTES = 32
BANKS = 32
BANK_BYTES = 4
WARP_SIZE = 32


class AccessLog(dict):
    """One kind of access of one block: ``(id(code), bytecode offset, array)`` -> the line's flat list
    ``[thread, byte, thread, byte, ...]``, in the order the accesses ran.

    The arrays look the list up by bytecode offset (cheap) and append to it;
    :meth:`entries` makes the list on a miss and files it under the source
    line too, so that every offset of one line (CPython's specialising
    interpreter reports another offset for the same access once warm) shares
    one list.
    """

    __slots__ = ("by_line",)

    def __init__(self):
        super().__init__()
        self.by_line: dict = {}  # (code, line, array) -> list

    def entries(self, frame, array) -> list:
        line_key = (frame.f_code, frame.f_lineno, array)
        found = self.by_line.get(line_key)
        if found is None:
            found = self.by_line[line_key] = []
        self[(id(frame.f_code), frame.f_lasti, array)] = found  # id(): hashing a code object is slow
        return found

    def reset(self) -> None:
        self.clear()
        self.by_line.clear()


class WarpAccesses:
    """The global and shared accesses of one block, logged by the arrays and counted per warp instruction."""

    __slots__ = ("_stats", "loads", "stores", "shared")

    def __init__(self, stats):
        self._stats = stats
        self.loads = AccessLog()
        self.stores = AccessLog()
        self.shared = AccessLog()

    def finish(self) -> None:
        """The block is done: add its warp instructions' sectors and conflict degrees to the launch's counters."""
        stats = self._stats
        for log, kind in ((self.loads, "load"), (self.stores, "store")):
            requests = sectors = 0
            for entries in log.by_line.values():
                if not entries:
                    continue
                groups, offsets = _warp_instructions(entries)
                r, s = _sectors(groups, offsets)
                requests += r
                sectors += s
            if kind == "load":
                stats.global_load_requests += requests
                stats.global_load_sectors += sectors
            else:
                stats.global_store_requests += requests
                stats.global_store_sectors += sectors
        for (_code, _line, array), entries in self.shared.by_line.items():
            if not entries:
                continue
            groups, offsets = _warp_instructions(entries)
            degrees = _conflict_degrees(groups, offsets, array.dtype.itemsize)
            stats.shared_requests += degrees.size
            stats.shared_wavefronts += int(degrees.sum())
            stats.shared_max_conflict = max(stats.shared_max_conflict, int(degrees.max(initial=0)))
        self.loads.reset()
        self.stores.reset()
        self.shared.reset()


def _warp_instructions(entries: list) -> tuple[np.ndarray, np.ndarray]:
    """For one line's accesses to one array: each access's warp instruction (an int) and its byte offset.

    The k-th access of a thread belongs to instruction (warp of the thread, k).
    """
    pairs = np.asarray(entries, dtype=np.int64).reshape(-1, 2)
    threads, offsets = pairs[:, 0], pairs[:, 1]
    order = np.argsort(threads, kind="stable")
    ordered = threads[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    lengths = np.diff(np.r_[starts, ordered.size])
    occurrence = np.empty_like(threads)
    occurrence[order] = np.arange(ordered.size) - np.repeat(starts, lengths)
    return (threads // WARP_SIZE) * (int(occurrence.max()) + 1) + occurrence, offsets


def _sectors(groups: np.ndarray, offsets: np.ndarray) -> tuple[int, int]:
    """(warp instructions, distinct sectors summed over them)."""
    sectors = offsets // SECTOR_BYTES
    sectors = sectors - sectors.min()
    pairs = np.unique(groups * (int(sectors.max()) + 1) + sectors)
    return int(np.unique(groups).size), int(pairs.size)


def _conflict_degrees(groups: np.ndarray, offsets: np.ndarray, itemsize: int) -> np.ndarray:
    """The conflict degree of each warp instruction: the most distinct words it asks of one bank."""
    words = offsets // BANK_BYTES
    if itemsize > BANK_BYTES:  # an 8-byte element spans two banks
        span = itemsize // BANK_BYTES
        words = (words[:, None] + np.arange(span)).ravel()
        groups = np.repeat(groups, span)
    word_ids = np.unique(groups * (int(words.max()) + 1) + words)  # distinct (instruction, word): broadcasts are free
    instruction, word = np.divmod(word_ids, int(words.max()) + 1)
    per_bank, counts = np.unique(instruction * BANKS + word % BANKS, return_counts=True)
    instruction = per_bank // BANKS
    starts = np.flatnonzero(np.r_[True, instruction[1:] != instruction[:-1]])
    return np.maximum.reduceat(counts, starts)


def conflict_degree(words) -> int:
    """The passes one warp instruction needs: the most distinct 4-byte words it asks of one bank (1 if none)."""
    banks: dict[int, int] = {}
    for word in set(words):
        banks[word % BANKS] = banks.get(word % BANKS, 0) + 1
    return max(banks.values(), default=1)


def sectors_touched(byte_offsets, nbytes: int = 4) -> int:
    """The distinct 32-byte sectors a warp touches when its threads access ``nbytes`` at each of these offsets."""
    touched = set()
    for first in byte_offsets:
        touched.update(range(first // SECTOR_BYTES, (first + nbytes - 1) // SECTOR_BYTES + 1))
    return len(touched)
