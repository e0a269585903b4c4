"""``OutOfMemoryError``: what a simulated card says when an allocation does not fit, and what would make it fit.

The message starts the way PyTorch's ``torch.OutOfMemoryError`` does ("Tried
to allocate X. GPU has a total capacity of Y of which Z is free ...") and
goes further:

- capacity, the CUDA context and what is left for tensors (usable);
- the live bytes by category, exact (they sum to the tracked total);
- reserved but unallocated bytes (the allocator's cache) and the
  fragmentation figure;
- the three largest live tensors and the op that made each;
- suggestions ranked by their estimated saving, each estimated from the live
  categories (the step's state at the moment it failed, so a lower bound of
  what the step's peak would need).

Invariant: ``sum(error.by_category.values()) == error.allocated``.
"""

from __future__ import annotations

from dataclasses import dataclass

from minigrad.memory.allocator import AllocatorOutOfMemoryError
from minigrad.memory.categories import ACTIVATION, CATEGORIES, GRADIENT, INPUT, OPTIMIZER_STATE
from minigrad.memory.estimate import format_bytes

__all__ = ["OutOfMemoryError", "OOMReport", "Suggestion", "suggestions"]


@dataclass(frozen=True)
class Suggestion:
    """One way to need less memory and about how many bytes it saves, judged from the live categories."""

    saving: int
    advice: str


def suggestions(by_category: dict[str, int]) -> list[Suggestion]:
    """The fixes that would save memory here, largest saving first (those that would save nothing are left out)."""
    activations, inputs = by_category.get(ACTIVATION, 0), by_category.get(INPUT, 0)
    batch_bound = activations + inputs
    candidates = [
        Suggestion(batch_bound * 3 // 4, "gradient accumulation: 4 micro-batches of a quarter of the batch, same "
                                         "effective batch (activations and inputs scale with the micro-batch)"),
        Suggestion(batch_bound // 2, "halve the batch size (activations and inputs scale with it)"),
        Suggestion(activations // 2, "mixed precision (minigrad.amp): float16 activations take half the bytes"),
        Suggestion(activations // 2, "activation checkpointing: keep every other layer's activations, "
                                     "recompute the rest in backward"),
        Suggestion(by_category.get(GRADIENT, 0), "optimizer.zero_grad(set_to_none=True) before the forward pass: "
                                                 "gradients are not kept between steps"),
        Suggestion(by_category.get(OPTIMIZER_STATE, 0), "SGD instead of Adam: no moment estimates "
                                                        "(plain SGD keeps no optimizer state)"),
    ]
    return sorted((s for s in candidates if s.saving > 0), key=lambda s: -s.saving)


@dataclass(frozen=True)
class OOMReport:
    """Everything the message states, as numbers (kept on the error as ``error.report``)."""

    card: str
    requested: int
    request_category: str
    request_op: str | None
    capacity: int
    context: int
    usable: int
    reserved: int
    allocated: int  # exact bytes of the live tensors
    allocated_rounded: int  # the same blocks as the allocator sees them (rounded up to 512 bytes)
    by_category: dict
    largest_free_block: int
    fragmentation: float
    largest_tensors: list  # (nbytes, category, op), largest first, at most three
    segment: int | None = None  # the new segment the request needed (no cached block fitted it), if known
    pool: str | None = None  # the pool it would have come from

    @property
    def free(self) -> int:
        """Bytes of the card neither reserved nor taken by the CUDA context."""
        return self.usable - self.reserved

    def suggestions(self) -> list[Suggestion]:
        return suggestions(self.by_category)

    def _segment_lines(self) -> list[str]:
        if self.segment is None:
            return []
        from minigrad.memory.allocator.sizes import round_size

        rule = _segment_rule(round_size(self.requested), self.pool)
        bigger = self.segment > self.requested
        return [
            "",
            f"No cached block fits it, so the allocator needed a whole new segment of {format_bytes(self.segment)}"
            + (f", more than the {format_bytes(self.requested)} asked for ({rule})" if bigger else f" ({rule})")
            + f"; the card has {format_bytes(self.free)} left to reserve."
            + (" The tensor itself would fit: it is the segment that does not." if self.requested <= self.free < self.segment
               else ""),
        ]

    def message(self) -> str:
        made_by = f" made by {self.request_op}" if self.request_op else ""
        unallocated = self.reserved - self.allocated_rounded
        lines = [
            f"{self.card} (simulated): Tried to allocate {format_bytes(self.requested)} "
            f"(a {self.request_category} buffer{made_by}). GPU has a total capacity of {format_bytes(self.capacity)} "
            f"of which {format_bytes(self.free)} is free. The CUDA context takes {format_bytes(self.context)}, "
            f"leaving {format_bytes(self.usable)} usable. Of the usable memory {format_bytes(self.allocated)} is "
            f"allocated by live tensors and {format_bytes(unallocated)} is reserved but unallocated "
            f"(fragmentation {self.fragmentation:.2f}: the largest free block is "
            f"{format_bytes(self.largest_free_block)}; blocks are rounded up to 512 bytes and carved from segments).",
            *self._segment_lines(),
            "",
            f"Allocated by category (sums to {format_bytes(self.allocated)} = {self.allocated:,} bytes):",
        ]
        for category in CATEGORIES:
            if self.by_category.get(category, 0):
                lines.append(f"  {category:<16} {format_bytes(self.by_category[category]):>11}  "
                             f"({self.by_category[category]:,} bytes)")
        if self.largest_tensors:
            lines += ["", "Largest live tensors:"]
            for rank, (nbytes, category, op) in enumerate(self.largest_tensors, 1):
                lines.append(f"  {rank}. {format_bytes(nbytes):>11}  {category}, made by {op or 'a factory or data'}")
        advice = self.suggestions()
        if advice:
            lines += ["", "What would make it fit, largest estimated saving first:"]
            for rank, suggestion in enumerate(advice, 1):
                lines.append(f"  {rank}. saves about {format_bytes(suggestion.saving)}: {suggestion.advice}")
        return "\n".join(lines)


def _segment_rule(size_needed: int, pool: str | None) -> str:
    from minigrad.memory.allocator.sizes import MIN_LARGE_ALLOC, SMALL

    if pool == SMALL:
        return "a request of up to 1 MiB gets a 2 MiB segment of the small pool"
    if size_needed < MIN_LARGE_ALLOC:
        return "a large request below 10 MiB gets a 20 MiB segment, room for the next few such requests"
    return "a request of 10 MiB or more gets its own segment, rounded up to a multiple of 2 MiB"


class OutOfMemoryError(AllocatorOutOfMemoryError):
    """A simulated card ran out of memory. ``error.report`` holds the figures; the message explains them.

    A ``MemoryError`` (and an ``AllocatorOutOfMemoryError``): code that
    catches either catches this. Nothing was allocated for the request.
    """

    def __init__(self, report: OOMReport):
        super().__init__(report.message())
        self.report = report
