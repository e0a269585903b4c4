"""Trace replay: run a recorded sequence of allocations and frees through a ``CachingAllocator``.

A *trace* is a list of events, each ``("alloc", id, nbytes)`` (optionally
``("alloc", id, nbytes, tag)``, the tag labelling the block) or
``("free", id)``; ``id`` names a buffer from its allocation to its free.
(:mod:`minigrad.memory.trace_recording` records one from a real training
step.) Replaying the same trace under each policy shows what the policy
alone changes: how much memory must be reserved and how fragmented the
free memory becomes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minigrad.memory.allocator import CachingAllocator

ALLOC, FREE = "alloc", "free"


@dataclass
class ReplayResult:
    """What a replay measured. The timelines have one entry per event (the state after it)."""

    policy: str
    stats: dict[str, int]
    reserved: list[int] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    fragmentation: list[float] = field(default_factory=list)

    @property
    def peak_reserved(self) -> int:
        return self.stats["reserved_bytes.all.peak"]

    @property
    def peak_allocated(self) -> int:
        return self.stats["allocated_bytes.all.peak"]

    @property
    def peak_fragmentation(self) -> float:
        return max(self.fragmentation, default=0.0)

    @property
    def mean_fragmentation(self) -> float:
        return sum(self.fragmentation) / len(self.fragmentation) if self.fragmentation else 0.0

    def fragmentation_at_peak_reserved(self) -> float:
        """The fragmentation when reserved memory first reached its peak."""
        if not self.reserved:
            return 0.0
        return self.fragmentation[self.reserved.index(max(self.reserved))]


def replay(trace, policy: str = "best_fit", capacity: int | None = None) -> ReplayResult:
    """Run ``trace`` through a fresh ``CachingAllocator(capacity, policy)``; returns its stats and timelines.

    Raises ``ValueError`` naming the event for an id allocated twice or freed
    before it was allocated; an ``AllocatorOutOfMemoryError`` goes through.
    """
    allocator = CachingAllocator(capacity=capacity, policy=policy)
    addresses: dict = {}
    result = ReplayResult(policy, {})
    for index, event in enumerate(trace):
        kind, buffer = event[0], event[1]
        if kind == ALLOC:
            if buffer in addresses:
                raise ValueError(f"replay: event {index} {event!r} allocates id {buffer!r}, which is still allocated")
            addresses[buffer] = allocator.malloc(event[2], tag=event[3] if len(event) > 3 else None)
        elif kind == FREE:
            if buffer not in addresses:
                raise ValueError(f"replay: event {index} {event!r} frees id {buffer!r}, which is not allocated")
            allocator.free(addresses.pop(buffer))
        else:
            raise ValueError(f"replay: event {index} {event!r}: expected ('alloc', id, nbytes) or ('free', id)")
        result.reserved.append(allocator.reserved_bytes)
        result.allocated.append(allocator.allocated_bytes)
        result.fragmentation.append(allocator.fragmentation())
    result.stats = allocator.memory_stats()
    return result


def compare_policies(trace, capacity: int | None = None, policies=("best_fit", "first_fit")) -> dict[str, ReplayResult]:
    """Replay ``trace`` under each policy."""
    return {policy: replay(trace, policy, capacity) for policy in policies}


def format_comparison(results: dict[str, ReplayResult]) -> str:
    """A small table: peak allocated, peak reserved, fragmentation (at the reserved peak, mean, worst) per policy."""
    lines = [f"{'policy':<10} {'peak allocated':>15} {'peak reserved':>14} {'frag@peak':>10} {'frag mean':>10} "
             f"{'frag max':>9} {'segments':>9}"]
    for policy, r in results.items():
        lines.append(
            f"{policy:<10} {r.peak_allocated / 2**20:>11.2f} MiB {r.peak_reserved / 2**20:>10.2f} MiB "
            f"{r.fragmentation_at_peak_reserved():>10.3f} {r.mean_fragmentation:>10.3f} {r.peak_fragmentation:>9.3f} "
            f"{r.stats['segment.all.peak']:>9}"
        )
    return "\n".join(lines)
