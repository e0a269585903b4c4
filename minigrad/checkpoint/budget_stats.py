"""What a memory budget did: its figures, its log of evictions and rematerializations, and its error.

:class:`BudgetStats` is live: the budget mode (:mod:`.budget`) updates it as
it goes, so it can be read inside or after the ``with`` block. Invariants:
``high_water`` is the largest ``live`` ever seen and stays at most ``budget``
(a module that needs more goes on to its end, to measure all it needs, and
raises :class:`BudgetError` there); ``live`` is the exact bytes of the saved
buffers the budget holds, each buffer once however many views of it the
graph keeps; ``saved_buffers`` counts the buffers it ever held. The overhead figures compare what backward recomputed with
what the forward passes computed: ``recompute_fraction`` in FLOPs (counted
as :mod:`.budget_cost` does), ``recomputed_calls / forward_calls`` in
module calls, ``recompute_seconds`` in time measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from minigrad.memory.estimate import format_bytes

__all__ = ["BudgetError", "BudgetEvent", "BudgetStats"]


class BudgetError(MemoryError):
    """A module needs more saved-activation bytes at once than the budget allows (the message says how many)."""


class BudgetEvent(NamedTuple):
    """One entry of the log: ``kind`` is "save" (a buffer joins the budget), "evict", "remat" (a module call ran
    again) or "release" (nothing needs the buffer any more); ``name`` says which module call (and which of its
    buffers); ``nbytes`` the bytes involved; ``live`` the bytes held after it; ``clock`` the logical time."""

    kind: str
    name: str
    nbytes: int
    live: int
    clock: int


@dataclass
class BudgetStats:
    """The figures of one budget (see the module docstring)."""

    budget: int
    live: int = 0
    high_water: int = 0
    saved_buffers: int = 0
    evictions: int = 0
    evicted_bytes: int = 0
    rematerializations: int = 0
    recomputed_flops: int = 0
    recompute_seconds: float = 0.0
    forward_calls: int = 0
    forward_flops: int = 0
    events: list[BudgetEvent] | None = field(default=None, repr=False)

    @property
    def recompute_fraction(self) -> float:
        """Recomputed FLOPs as a fraction of the FLOPs the forward passes counted (0.25: a quarter of a forward)."""
        return self.recomputed_flops / self.forward_flops if self.forward_flops else 0.0

    @property
    def recomputed_calls(self) -> int:
        """How many module calls backward ran again (one per rematerialization)."""
        return self.rematerializations

    def report(self) -> str:
        """A few lines for the chapter: the budget, what was held at most, and what it cost to stay under it."""
        calls = f"{self.rematerializations} of {self.forward_calls} module calls" if self.forward_calls else "none"
        return "\n".join([
            f"budget            {format_bytes(self.budget)} ({self.budget:,} bytes)",
            f"high-water mark   {format_bytes(self.high_water)} ({self.high_water:,} bytes, "
            f"{self.high_water / self.budget:.0%} of the budget)",
            f"evictions         {self.evictions} ({format_bytes(self.evicted_bytes)})",
            f"recomputed        {calls}, {self.recompute_fraction:.0%} of the forward FLOPs, "
            f"{self.recompute_seconds * 1000:.1f} ms",
        ])

    def _record(self, kind: str, name: str, nbytes: int, clock: int) -> None:
        if self.events is not None:
            self.events.append(BudgetEvent(kind, name, nbytes, self.live, clock))
