"""Trace replay: run a recorded sequence of allocations and frees through a ``CachingAllocator``.

A *trace* is a list of events, each ``("alloc", id, nbytes)`` (optionally
``("alloc", id, nbytes, tag)``, the tag labelling the block) or
``("free", id)``; ``id`` names a buffer from its allocation to its free.
(:mod:`minigrad.memory.allocator.trace_recording` records one from a real training
step.) Replaying the same trace under each policy shows what the policy
alone changes: how much memory must be reserved and how fragmented the
free memory becomes. To look at the allocator itself along the way,
``replay(..., snapshot_at=[...])`` keeps its ``snapshot()`` after chosen
events, and ``replay_states`` yields the live allocator after every event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minigrad.memory.allocator.caching_allocator import CachingAllocator

ALLOC, FREE = "alloc", "free"


@dataclass
class ReplayResult:
    """What a replay measured. The timelines have one entry per event (the state after it)."""

    policy: str
    stats: dict[str, int]
    reserved: list[int] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    fragmentation: list[float] = field(default_factory=list)
    snapshots: dict[int, list[dict]] = field(default_factory=dict)  # event index -> allocator.snapshot() after it

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


def replay_states(trace, policy: str = "best_fit", capacity: int | None = None):
    """Yield ``(index, event, allocator)`` after each event of ``trace``, run through a fresh ``CachingAllocator``.

    The allocator is the same live object every time: read what you need
    (``snapshot()``, ``fragmentation()``, ...) before asking for the next
    state. Errors as for :func:`replay`, raised when the bad event is reached.
    """
    allocator = CachingAllocator(capacity=capacity, policy=policy)
    addresses: dict = {}
    for index, event in enumerate(trace):
        _apply(allocator, addresses, index, event)
        yield index, event, allocator


class TraceError(ValueError):
    """A trace event that is not ``("alloc", id, nbytes[, tag])`` or ``("free", id)``, or does not fit the trace."""


_SHAPES = "expected ('alloc', id, nbytes), ('alloc', id, nbytes, tag) or ('free', id)"


def _check_event(index: int, event) -> None:
    """Raise :class:`TraceError` naming the event if it is malformed."""
    def bad(problem: str):
        return TraceError(f"replay: event {index} {event!r}: {problem}; {_SHAPES}")

    if not isinstance(event, (tuple, list)):
        raise bad(f"an event is a tuple, not {type(event).__name__}")
    if not event or event[0] not in (ALLOC, FREE):
        raise bad("its first item must be 'alloc' or 'free'")
    wanted = (3, 4) if event[0] == ALLOC else (2,)
    if len(event) not in wanted:
        raise bad(f"{event[0]!r} takes {' or '.join(map(str, wanted))} items, this has {len(event)}")
    try:
        hash(event[1])
    except TypeError:
        raise bad(f"the id {event[1]!r} is a {type(event[1]).__name__}, which cannot name a buffer "
                  "(use an int or a str)") from None
    if event[0] == ALLOC and (isinstance(event[2], bool) or not isinstance(event[2], int) or event[2] < 0):
        raise bad(f"nbytes must be an int >= 0, got {type(event[2]).__name__} {event[2]!r}")


def _apply(allocator: CachingAllocator, addresses: dict, index: int, event) -> None:
    """Run one event; ``addresses`` maps the ids alive so far to their blocks' addresses."""
    _check_event(index, event)
    kind, buffer = event[0], event[1]
    if kind == ALLOC:
        if buffer in addresses:
            raise TraceError(f"replay: event {index} {event!r} allocates id {buffer!r}, which is still allocated")
        addresses[buffer] = allocator.malloc(event[2], tag=event[3] if len(event) > 3 else None)
    elif kind == FREE:
        if buffer not in addresses:
            raise TraceError(f"replay: event {index} {event!r} frees id {buffer!r}, which is not allocated")
        allocator.free(addresses.pop(buffer))


def replay(trace, policy: str = "best_fit", capacity: int | None = None, snapshot_at=()) -> ReplayResult:
    """Run ``trace`` through a fresh ``CachingAllocator(capacity, policy)``; returns its stats and timelines.

    ``snapshot_at`` lists event indices (``>= 0``) after which the
    allocator's ``snapshot()`` is kept in ``result.snapshots``. Raises
    :class:`TraceError` (a ``ValueError``) naming the event for a malformed
    event, an id allocated twice or freed before it was allocated;
    ``ValueError`` for a ``snapshot_at`` index the trace does not reach; an
    ``AllocatorOutOfMemoryError`` goes through.
    """
    wanted = set()
    for index in snapshot_at:
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise ValueError(f"replay: snapshot_at must hold event indices (ints >= 0), got {index!r}")
        wanted.add(index)
    result = ReplayResult(policy, {})
    allocator = None
    for index, _, allocator in replay_states(trace, policy, capacity):
        result.reserved.append(allocator.reserved_bytes)
        result.allocated.append(allocator.allocated_bytes)
        result.fragmentation.append(allocator.fragmentation())
        if index in wanted:
            result.snapshots[index] = allocator.snapshot()
    missing = sorted(wanted - result.snapshots.keys())
    if missing:
        raise ValueError(f"replay: snapshot_at asks for events {missing[:5]} but the trace has only "
                         f"{len(result.reserved)} events (indices 0 to {len(result.reserved) - 1})")
    result.stats = (allocator or CachingAllocator(capacity=capacity, policy=policy)).memory_stats()
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
