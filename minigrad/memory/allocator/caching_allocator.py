"""``CachingAllocator``: hands out blocks carved from cached segments, as PyTorch's CUDA allocator does.

Asking the device for memory (``cudaMalloc``) is slow and synchronises the
GPU, so a caching allocator asks rarely: it reserves *segments*, cuts them
into blocks, and keeps freed blocks in a pool for the next request instead
of giving them back. ``malloc(nbytes)``:

1. rounds the request (:func:`~minigrad.memory.allocator.sizes.round_size`)
   and picks its pool (small up to 1 MiB, else large);
2. asks the policy (best fit or first fit) for a free block of the pool;
3. if none fits, reserves a new segment
   (:func:`~minigrad.memory.allocator.sizes.segment_size`); if the device is
   full, it releases every wholly free segment (``empty_cache()``) and tries
   once more (``num_alloc_retries``); if that fails too it raises
   :class:`AllocatorOutOfMemoryError` (``num_ooms``): every allocation is as
   it was, only the cache has been emptied;
4. splits the block when the remainder is worth keeping
   (:func:`~minigrad.memory.allocator.sizes.should_split`): the remainder
   becomes a free block of its own.

``free(address)`` returns the block to its pool, merged with a free
neighbour on either side, so two free blocks are never adjacent.
``empty_cache()`` gives wholly free segments back to the device; a free
block that shares its segment with an allocated one stays reserved (it is
"inactive split": the fragmentation ``empty_cache`` cannot cure).
"""

from __future__ import annotations

from minigrad.memory.allocator.blocks import Block, Segment
from minigrad.memory.allocator.device import DeviceMemory
from minigrad.memory.allocator.policies import POLICIES
from minigrad.memory.allocator.pools import Pool
from minigrad.memory.allocator import sizes  # its rules are called through the module: use_exercise("8.6") swaps them
from minigrad.memory.allocator.sizes import LARGE, SMALL
from minigrad.memory.allocator.stats import MemoryStats


class AllocatorOutOfMemoryError(MemoryError):
    """The device could not give a new segment, even after the cache was emptied; no allocation has changed."""


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.2f} MiB"


class CachingAllocator:
    """A caching allocator over a device of ``capacity`` bytes (``None``: unbounded) with a fit ``policy``.

    Invariants: the blocks of a segment tile it exactly; a pool holds exactly
    the free blocks of its segments; no two free blocks are adjacent;
    ``reserved = allocated + free bytes in the pools``.
    """

    def __init__(self, capacity: int | None = None, policy: str = "best_fit", device: DeviceMemory | None = None):
        if not isinstance(policy, str) or policy not in POLICIES:
            raise ValueError(f"CachingAllocator: unknown policy {policy!r}; choose one of {sorted(POLICIES)} "
                             f"(one name, e.g. policy='best_fit')")
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0):
            raise ValueError(f"CachingAllocator: capacity must be a number of bytes (an int >= 0) or None for an "
                             f"unbounded device, got {type(capacity).__name__} {capacity!r}")
        if device is not None and capacity is not None:
            raise ValueError("CachingAllocator: give a capacity or a device, not both (the device has its capacity)")
        self.policy = policy
        self._fit = POLICIES[policy]
        self.device = device if device is not None else DeviceMemory(capacity)
        self.pools = {SMALL: Pool(SMALL), LARGE: Pool(LARGE)}
        self.segments: dict[int, Segment] = {}  # address -> segment
        self.allocated: dict[int, Block] = {}  # address -> allocated block
        self.stats = MemoryStats()

    @property
    def capacity(self) -> int | None:
        return self.device.capacity

    # ------------------------------------------------------------------ malloc

    def malloc(self, nbytes: int, tag: str | None = None) -> int:
        """Allocate ``nbytes`` (rounded up to 512); returns the block's address. ``tag`` labels it (e.g. a category)."""
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
            raise ValueError(f"CachingAllocator.malloc: nbytes must be an int >= 0, got {nbytes!r}")
        size = sizes.round_size(nbytes)
        pool = self.pools[sizes.pool_for(size)]
        block = self._fit(pool, size)
        if block is None:
            block = self._new_segment(nbytes, size, pool.name).first
        else:
            pool.remove(block)
        if sizes.should_split(block.size, size, pool.name):
            self._split(block, size, pool)
        elif block.is_split():  # an inactive split block is handed out whole
            self.stats.change("inactive_split_bytes", pool.name, -block.size)
            self.stats.change("inactive_split", pool.name, -1)
        block.allocated, block.requested, block.tag = True, nbytes, tag
        self.allocated[block.address] = block
        for name, amount in (("allocated_bytes", block.size), ("allocation", 1), ("requested_bytes", nbytes),
                             ("active_bytes", block.size), ("active", 1)):
            self.stats.change(name, pool.name, amount)
        return block.address

    def _split(self, block: Block, size: int, pool: Pool) -> None:
        """Cut ``block`` to ``size`` bytes; the rest becomes a free block right after it, in ``pool``."""
        was_split = block.is_split()
        remainder_size = block.size - size
        ### BEGIN SOLUTION 8.3 | afterwards the blocks of the segment still tile it and there is one more, free and in the pool; every block's next points back to it
        remainder = Block(block.address + size, remainder_size, block.segment)
        remainder.prev, remainder.next = block, block.next
        if block.next is not None:
            block.next.prev = remainder
        block.next = remainder
        block.size = size
        pool.add(remainder)
        ### END SOLUTION
        if was_split:  # an inactive split block shrinks by the part handed out
            self.stats.change("inactive_split_bytes", pool.name, -size)
        else:  # a whole segment's block is cut: its remainder is a new inactive split block
            self.stats.change("inactive_split_bytes", pool.name, remainder_size)
            self.stats.change("inactive_split", pool.name, 1)

    def _new_segment(self, nbytes: int, size: int, pool: str) -> Segment:
        reserve = sizes.segment_size(size)
        address = self.device.malloc(reserve)
        if address is None:
            self.stats.counters["num_alloc_retries"] += 1
            self.empty_cache()
            address = self.device.malloc(reserve)
        if address is None:
            self.stats.counters["num_ooms"] += 1
            raise AllocatorOutOfMemoryError(self._oom_message(nbytes, reserve))
        segment = Segment(address, reserve, pool)
        self.segments[address] = segment
        self.stats.counters["num_device_alloc"] += 1
        self.stats.change("reserved_bytes", pool, reserve)
        self.stats.change("segment", pool, 1)
        return segment

    def _oom_message(self, nbytes: int, reserve: int) -> str:
        reserved, allocated = self.reserved_bytes, self.allocated_bytes
        return (
            f"CachingAllocator: out of memory: tried to allocate {_mib(nbytes)} (a new segment of {_mib(reserve)}); "
            f"capacity {_mib(self.capacity or 0)}, reserved {_mib(reserved)}, allocated {_mib(allocated)}, "
            f"reserved but unallocated {_mib(reserved - allocated)} (largest free block "
            f"{_mib(self.largest_free_block())}). Free tensors you no longer need, or use a smaller batch."
        )

    # ------------------------------------------------------------------ free

    def free(self, address: int) -> None:
        """Return the block at ``address`` to its pool, merged with its free neighbours."""
        if isinstance(address, bool) or not isinstance(address, int):
            hint = (f" (an address is the int malloc returned; int({address!r}, 16) if you wrote it out in hex)"
                    if isinstance(address, str) else " (pass the int address that malloc returned)")
            raise TypeError(f"CachingAllocator.free: address must be an int, got {type(address).__name__} "
                            f"{address!r}{hint}")
        block = self.allocated.pop(address, None)
        if block is None:
            raise ValueError(f"CachingAllocator.free: no allocated block at address {address:#x} "
                             "(freed twice, or an address malloc did not return)")
        pool = self.pools[block.pool]
        for name, amount in (("allocated_bytes", -block.size), ("allocation", -1), ("requested_bytes", -block.requested),
                             ("active_bytes", -block.size), ("active", -1)):
            self.stats.change(name, pool.name, amount)
        block.allocated, block.requested, block.tag = False, 0, None
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._merge(block, neighbour, pool)
        if block.is_split():
            self.stats.change("inactive_split_bytes", pool.name, block.size)
            self.stats.change("inactive_split", pool.name, 1)
        pool.add(block)

    def _merge(self, block: Block, neighbour: Block, pool: Pool) -> None:
        """Absorb the free ``neighbour`` (just before or just after ``block``) into ``block``."""
        pool.remove(neighbour)
        self.stats.change("inactive_split_bytes", pool.name, -neighbour.size)  # a free neighbour is always split
        self.stats.change("inactive_split", pool.name, -1)
        ### BEGIN SOLUTION 8.4 | afterwards the blocks still tile the segment with one fewer, and nothing (no block, not the segment) still points at the absorbed neighbour
        if neighbour is block.prev:
            block.address = neighbour.address
            block.prev = neighbour.prev
            if block.prev is None:
                block.segment.first = block
            else:
                block.prev.next = block
        else:
            block.next = neighbour.next
            if block.next is not None:
                block.next.prev = block
        block.size += neighbour.size
        ### END SOLUTION

    # ------------------------------------------------------------------ cache

    def empty_cache(self) -> int:
        """Give every wholly free segment back to the device; returns the bytes released."""
        released = 0
        for segment in [s for s in self.segments.values() if s.is_wholly_free()]:
            self.pools[segment.pool].remove(segment.first)
            del self.segments[segment.address]
            self.device.free(segment.address)
            self.stats.counters["num_device_free"] += 1
            self.stats.change("reserved_bytes", segment.pool, -segment.size)
            self.stats.change("segment", segment.pool, -1)
            released += segment.size
        return released

    # ------------------------------------------------------------------ figures

    @property
    def allocated_bytes(self) -> int:
        return self.stats.current("allocated_bytes")

    @property
    def reserved_bytes(self) -> int:
        return self.stats.current("reserved_bytes")

    def free_bytes(self) -> int:
        """Bytes reserved but not allocated (the pools' free blocks)."""
        return self.reserved_bytes - self.allocated_bytes

    def largest_free_block(self) -> int:
        return max((pool.by_size[-1][0] for pool in self.pools.values() if pool.by_size), default=0)

    def fragmentation(self) -> float:
        """``1 - largest free block / free bytes`` in reserved segments: 0 when the free memory is one block."""
        free = self.free_bytes()
        return 0.0 if free == 0 else 1.0 - self.largest_free_block() / free

    def memory_stats(self) -> dict[str, int]:
        """The statistics, flat and named as ``torch.cuda.memory_stats()`` names them."""
        return self.stats.as_dict()

    def reset_peak_stats(self) -> None:
        self.stats.reset_peaks()

    def snapshot(self) -> list[dict]:
        """Every segment and its blocks, in the shape of ``torch.cuda.memory_snapshot()`` (address order)."""
        return [
            {
                "address": segment.address,
                "total_size": segment.size,
                "allocated_size": sum(b.size for b in segment.blocks() if b.allocated),
                "segment_type": "small" if segment.pool == SMALL else "large",
                "blocks": [
                    {"address": b.address, "size": b.size, "requested_size": b.requested,
                     "state": "active_allocated" if b.allocated else "inactive", "tag": b.tag}
                    for b in segment.blocks()
                ],
            }
            for _, segment in sorted(self.segments.items())
        ]

    def __repr__(self) -> str:
        return (f"CachingAllocator({self.policy}, reserved {_mib(self.reserved_bytes)}, allocated "
                f"{_mib(self.allocated_bytes)}, {len(self.segments)} segments, fragmentation {self.fragmentation():.2f})")
