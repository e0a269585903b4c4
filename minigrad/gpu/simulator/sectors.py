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
instructions afterwards. A thread's accesses are logged per *site* (a load
or store in the kernel's bytecode, on one array) together with its *pass*:
how many times the thread has come back around a loop since the last
barrier (an access at or before the previous one's place in the same
function starts a new pass). The ``k``-th access a thread makes at a site in
a pass belongs to the same warp instruction as the ``k``-th access the other
threads of its warp make there in the same pass. So a load inside ``if``
that some threads skip in a loop iteration still meets, in the next
iteration, the threads that made it there - as the warp does, with the
skipping threads masked off. Where threads leave a loop after different
numbers of passes, later accesses are grouped per pass count (a warp then
needs several instructions for them: an approximation). The arrays
(``arrays.py``) only log (thread, pass, byte offset); at the end of each
block :meth:`WarpAccesses.finish` rebuilds the warp instructions with NumPy,
many blocks at a time, and adds their sectors and conflict degrees to the
launch's counters.

Cost: each access adds a dictionary lookup and three appends to the
simulator's hot path, and each launch a few NumPy sorts; kernels run about
2-3 times slower than without the counts (the 64 x 64 x 64 tiled matmul:
about 0.5 s of CPU time before, 1.3 s with them; 100,000 elements of
``scaled_add``: 0.17 s before, 0.5 s).

Assumptions, stated so the numbers can be checked by hand: every global
array starts on a sector boundary (CUDA's allocations are 256-byte aligned)
and a byte's address is its offset in the array's buffer (strides
included) and no element straddles two sectors; every shared array starts
at bank 0. Atomics are not counted here.
"""

from __future__ import annotations

import array
import bisect
import dis

import numpy as np

SECTOR_BYTES = 32
BANKS = 32
BANK_BYTES = 4
WARP_SIZE = 32


_INSTRUCTION_STARTS: dict = {}  # id(code) -> sorted offsets of its instructions (codes live as long as kernels)


def instruction_start(code, offset: int) -> int:
    """The offset of the instruction that ``offset`` lies in.

    CPython's specialising interpreter can report an offset inside an
    instruction's inline cache for the same access once warm; every offset of
    one instruction is one site.
    """
    starts = _INSTRUCTION_STARTS.get(id(code))
    if starts is None:
        starts = _INSTRUCTION_STARTS[id(code)] = [instruction.offset for instruction in dis.get_instructions(code)]
    return starts[bisect.bisect_right(starts, offset) - 1]


LOAD, STORE, SHARED = 0, 1, 2  # the kinds of site
_BARRIER = -1  # a mark in the log: the block passed a barrier
_BLOCK = -2  # a mark in the log: the next block starts
_FLUSH_NUMBERS = 3 * 2**20  # count what is logged once a million accesses wait (and at the launch's last block)
_launch: "WarpAccesses | None" = None  # the log of the launch being simulated (one launch at a time)


class WarpAccesses:
    """The global and shared accesses of a launch's blocks, logged by the arrays and counted per warp instruction.

    ``sites`` maps ``(id(code), reported offset, array)`` to a site number
    (a miss goes through :meth:`site`, which files every offset CPython reports
    for one instruction under one number); ``log`` is one flat array of int64
    ``[site, thread, byte, site, thread, byte, ...]`` in the order the
    accesses ran, with a mark at each barrier and at the start of each block.
    The counting happens in :meth:`end_block`, for many blocks at once: the
    launch's last block, or whenever about a million accesses are waiting.
    """

    __slots__ = ("_stats", "sites", "log", "_by_instruction", "_info")

    def __init__(self, stats):
        self._stats = stats
        self.sites: dict = {}
        self.log = array.array("q")  # 8 bytes per number, no Python int objects: long launches stay small
        self._by_instruction: dict = {}  # (id(code), instruction offset, array) -> site number
        self._info: list = []  # site number -> (id(code), instruction offset, kind, array)

    @classmethod
    def of_launch(cls, stats) -> "WarpAccesses":
        """The log of the launch whose counters are ``stats`` (a new one for a new launch)."""
        global _launch
        if _launch is None or _launch._stats is not stats:
            _launch = cls(stats)
        return _launch

    def site(self, frame, array, kind: int) -> int:
        code = frame.f_code
        start = instruction_start(code, frame.f_lasti)
        key = (id(code), start, array)
        number = self._by_instruction.get(key)
        if number is None:
            number = self._by_instruction[key] = len(self._info)
            self._info.append((id(code), start, kind, array))
        self.sites[(id(code), frame.f_lasti, array)] = number  # id(): hashing a code object is slow
        return number

    def begin_block(self) -> None:
        self.log.extend((_BLOCK, 0, 0))

    def barrier(self) -> None:
        self.log.extend((_BARRIER, 0, 0))

    def end_block(self, last: bool = True) -> None:
        """A block is done; on the launch's ``last`` block (or a full log) count what is logged into the counters."""
        global _launch
        if last or len(self.log) >= _FLUSH_NUMBERS:
            self.finish()
        if last and _launch is self:
            _launch = None

    def finish(self) -> None:
        """Add the logged warp instructions' sectors and conflict degrees to the launch's counters; empty the log."""
        if self.log:
            _count(np.frombuffer(self.log, dtype=np.int64).reshape(-1, 3).copy(), self._info, self._stats)
        del self.log[:]
        self.sites.clear()
        self._by_instruction.clear()
        self._info.clear()


def _count(log: np.ndarray, info: list, stats) -> None:
    """Rebuild the warp instructions of the logged blocks and add their sectors and bank conflicts to ``stats``."""
    block = np.cumsum(log[:, 0] == _BLOCK)
    epoch = np.cumsum(log[:, 0] == _BARRIER)
    keep = log[:, 0] >= 0
    site, thread, offset, epoch, block = log[keep, 0], log[keep, 1], log[keep, 2], epoch[keep], block[keep]
    if site.size == 0:
        return
    warp = block * (int(thread.max()) // WARP_SIZE + 1) + thread // WARP_SIZE  # warps of different blocks differ
    thread = block * (int(thread.max()) + 1) + thread
    codes = np.array([i[0] for i in info], dtype=np.int64)
    starts = np.array([i[1] for i in info], dtype=np.int64)
    kinds = np.array([i[2] for i in info], dtype=np.int64)
    itemsizes = np.array([i[3].dtype.itemsize for i in info], dtype=np.int64)
    # Passes: per thread and epoch, in execution order, a new pass starts at an access at or before the
    # previous access's instruction in the same function (the thread came back around a loop).
    order = np.lexsort((np.arange(site.size), epoch, thread))
    t, e, sorted_site = thread[order], epoch[order], site[order]
    same_run = np.r_[False, (t[1:] == t[:-1]) & (e[1:] == e[:-1])]
    back = np.r_[False, (codes[sorted_site[1:]] == codes[sorted_site[:-1]])
                 & (starts[sorted_site[1:]] <= starts[sorted_site[:-1]])]
    back &= same_run
    counted = np.cumsum(back)
    run_start = np.flatnonzero(~same_run)
    run_of = np.cumsum(~same_run) - 1
    passes_sorted = counted - counted[run_start][run_of]
    passes = np.empty_like(passes_sorted)
    passes[order] = passes_sorted
    # The k-th access of a thread at a site in a pass: instruction (site, warp, epoch, pass, k).
    run = _group(site, thread, epoch, passes)
    by_run = np.argsort(run, kind="stable")
    ordered = run[by_run]
    firsts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    occurrence = np.empty_like(run)
    occurrence[by_run] = np.arange(ordered.size) - np.repeat(firsts, np.diff(np.r_[firsts, ordered.size]))
    instruction = _group(site, warp, epoch, passes, occurrence)
    kind = kinds[site]
    for which, prefix in ((LOAD, "global_load"), (STORE, "global_store")):
        mask = kind == which
        if mask.any():
            requests, sectors, warp_bytes = _sectors(instruction[mask], offset[mask], itemsizes[site[mask]])
            setattr(stats, f"{prefix}_requests", getattr(stats, f"{prefix}_requests") + requests)
            setattr(stats, f"{prefix}_sectors", getattr(stats, f"{prefix}_sectors") + sectors)
            setattr(stats, f"{prefix}_warp_bytes", getattr(stats, f"{prefix}_warp_bytes") + warp_bytes)
    mask = kind == SHARED
    if mask.any():
        degrees = _conflict_degrees(instruction[mask], offset[mask], itemsizes[site[mask]])
        stats.shared_requests += degrees.size
        stats.shared_wavefronts += int(degrees.sum())
        stats.shared_max_conflict = max(stats.shared_max_conflict, int(degrees.max(initial=0)))


def _group(*columns: np.ndarray) -> np.ndarray:
    """A number per distinct row of ``columns`` (0, 1, ... in sorted order of the rows)."""
    key = np.zeros(columns[0].size, dtype=np.int64)
    span = 1
    for column in columns:
        low = int(column.min())
        width = int(column.max()) - low + 1
        if span * width >= 2**62:  # too wide to pack into one int64: renumber what is packed so far
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            span = int(key.max()) + 1
            if span * width >= 2**62:
                raise OverflowError("too many warp instructions in one block to count their sectors")
        key = key * width + (column - low)
        span *= width
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def _sectors(instruction: np.ndarray, offsets: np.ndarray, itemsizes: np.ndarray) -> tuple[int, int, int]:
    """(warp instructions, distinct sectors summed over them, distinct bytes asked for summed over them)."""
    pairs = np.unique(_group(instruction, offsets // SECTOR_BYTES)).size
    elements = _group(instruction, offsets)
    _, first = np.unique(elements, return_index=True)
    return int(np.unique(instruction).size), int(pairs), int(itemsizes[first].sum())


def _conflict_degrees(instruction: np.ndarray, offsets: np.ndarray, itemsizes: np.ndarray) -> np.ndarray:
    """The conflict degree of each warp instruction: the most distinct words it asks of one bank."""
    words = offsets // BANK_BYTES
    for extra in range(1, int(itemsizes.max()) // BANK_BYTES):  # an 8-byte element spans two banks, 16 bytes four
        wide = itemsizes > extra * BANK_BYTES
        instruction = np.r_[instruction, instruction[wide]]
        words = np.r_[words, words[wide] + extra]
        itemsizes = np.r_[itemsizes, itemsizes[wide]]
    _, first = np.unique(_group(instruction, words), return_index=True)  # broadcasts of one word are free
    instruction, words = instruction[first], words[first]
    per_bank = _group(instruction, words % BANKS)
    _, where, counts = np.unique(per_bank, return_index=True, return_counts=True)
    owner = instruction[where]  # per_bank numbers sort by instruction first, so owners come in runs
    firsts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    return np.maximum.reduceat(counts, firsts)


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
