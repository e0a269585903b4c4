"""Will it fit? A step's allocations replayed through the card's caching allocator, answered in reserved bytes.

A card does not run out of memory when the tensors' bytes pass its size: it
runs out when its caching allocator (:mod:`minigrad.memory.allocator`) cannot
find a block for the next request and cannot reserve a new segment. Every
request is rounded up to 512 bytes, requests up to 1 MiB are carved from
2 MiB segments, larger ones below 10 MiB from 20 MiB segments, and a block
is split only when the remainder is worth keeping; freed blocks stay
reserved. So the *reserved* bytes - what the allocator holds from the
device - decide, and they can exceed the *allocated* bytes (what the
tensors hold, the tracker's truth) by many megabytes.

:func:`minigrad.memory.estimate` records a step's allocations and frees at
small batches, each size exact and affine in the batch; a :class:`StepTrace`
is that sequence, able to give it at any batch. :func:`replay_step` runs it
through a :class:`~minigrad.memory.allocator.CachingAllocator` configured as
the simulated card's (:mod:`.simulated_gpu`: capacity = the card's usable
bytes, the same fit policy): first the buffers the card registers when the
model and optimizer are put on it (parameters, gradients, buffers, optimizer
state, in its order), then the step. The step fits exactly when the replay
never raises the allocator's out-of-memory error - including the card's
retry after emptying its cache - which is what the simulated card decides
(``tests/memory/test_fit_reserved.py`` checks it by bisection on the card).

The card is a fresh one that holds only the model and its optimizer: a
simulated card also holds every buffer already known to the memory registry
when it is entered (a tensor some tracker saw, still alive), and then has
that much less room (:mod:`.card_check` reports those bytes as ``foreign``).

With gradient accumulation the recorded step holds two micro-batches (the
second stands for every later one); the replay runs those two, so for more
than two micro-batches it assumes a third leaves the cache as the second
did (the tests check it on the card for up to five).
"""

from __future__ import annotations

from dataclasses import dataclass

from minigrad.memory.allocator import AllocatorOutOfMemoryError, CachingAllocator
from minigrad.memory.allocator.sizes import round_size, segment_size

__all__ = ["StepTrace", "Replay", "replay_step", "largest_fitting"]

ALLOC, FREE = "alloc", "free"


@dataclass(frozen=True)
class StepTrace:
    """The allocations of one step, exact at every batch size.

    ``card``: bytes of each buffer registered when the model and optimizer go
    on the card, in order. ``events``: ``(kind, target, intercept, slope)`` per
    allocation or free of the step, in order; an allocation's bytes at batch
    ``B`` are ``intercept + slope * B`` (Python ints: exact at any size); a
    free's ``target`` is the index of the event that allocated the buffer, or
    ``("card", k)`` for the ``k``-th buffer of ``card``.
    """

    card: tuple
    events: tuple
    phases: tuple  # the phase of each event

    def at(self, batch: int) -> list[tuple]:
        """The trace at ``batch`` in :func:`minigrad.memory.allocator.replay`'s format (ids: ``("card", k)`` or ``i``)."""
        out = [(ALLOC, ("card", k), nbytes) for k, nbytes in enumerate(self.card)]
        for index, (kind, target, intercept, slope) in enumerate(self.events):
            out.append((ALLOC, index, intercept + slope * batch) if kind == ALLOC else (FREE, target))
        return out


@dataclass(frozen=True)
class Replay:
    """What the card's allocator did with a step: whether it fits, and its peaks (rounded blocks and segments)."""

    batch_size: int
    capacity: int | None
    policy: str
    fits: bool
    peak_reserved: int  # the most bytes the allocator held from the device (up to the failure, if it failed)
    peak_allocated: int  # the most bytes in allocated blocks (each rounded up to 512)
    failed_phase: str | None = None  # the phase of the request that did not fit
    failed_request: int | None = None  # its bytes


def replay_step(trace: StepTrace, batch: int, capacity: int | None = None, policy: str = "best_fit") -> Replay:
    """Run ``trace`` at ``batch`` through a fresh ``CachingAllocator(capacity, policy)``, as the card serves it."""
    if capacity is None:  # room for every request in a segment of its own: never full, and exact ints at any size
        sizes = [*trace.card, *(a + b * batch for kind, _, a, b in trace.events if kind == ALLOC)]
        room = sum(segment_size(round_size(n)) for n in sizes)
    allocator = CachingAllocator(capacity=room if capacity is None else capacity, policy=policy)
    addresses: dict = {}
    phase = request = None
    fits = True
    try:
        for k, nbytes in enumerate(trace.card):
            phase, request = "the model and optimizer put on the card", nbytes
            addresses[("card", k)] = allocator.malloc(nbytes)
        for index, (kind, target, intercept, slope) in enumerate(trace.events):
            if kind == ALLOC:
                phase, request = trace.phases[index], intercept + slope * batch
                addresses[index] = allocator.malloc(request)
            else:
                allocator.free(addresses.pop(target))
    except AllocatorOutOfMemoryError:
        fits = False
    stats = allocator.stats
    return Replay(batch, capacity, policy, fits, stats.peak("reserved_bytes"), stats.peak("allocated_bytes"),
                  None if fits else phase, None if fits else request)


def largest_fitting(fits, high: int) -> int:
    """The largest batch ``b`` in ``[1, high)`` with ``fits(b)`` found by bisection, ``high`` known not to fit.

    0 if batch 1 does not fit. The answer fits and the batch after it does not
    (a boundary; fitting is monotone in the batch except where one more
    example moves a request across a segment-size threshold, and bisection
    returns the boundary it meets).
    """
    if high <= 1 or not fits(1):
        return 0
    low = 1
    probe = 2
    while probe < high and fits(probe):  # doubling first: small answers cost few replays
        low, probe = probe, probe * 2
    high = min(high, probe)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
