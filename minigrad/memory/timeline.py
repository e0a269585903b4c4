"""The tracker's timeline: one row per allocation, free or relabelling, in the order they happened.

Rows are :class:`TimelineEvent` tuples. ``nbytes`` is signed: ``+n`` for an
allocation, ``-n`` for a free; a relabelling (``kind == "retag"``, e.g. an op
output that a later op saves for backward) moves ``n`` bytes from
``from_category`` into ``category`` and leaves ``total`` unchanged.

Invariant: ``total`` is the running sum of the allocations and frees so far,
starting from the tracker's ``baseline``; the per-category running sums
(:func:`category_totals`) add up to it at every row.
"""

from __future__ import annotations

from collections import namedtuple

from minigrad.memory.categories import CATEGORIES

__all__ = ["TimelineEvent", "category_totals", "format_timeline"]

TimelineEvent = namedtuple(
    "TimelineEvent", "index step phase kind category nbytes total op module buffer_id from_category"
)
TimelineEvent.__doc__ = """One row of the timeline: ``index`` (0, 1, ...), ``step`` (optimizer steps finished
before it), ``phase`` ("forward", "backward", "optimizer", a hand-set label, "eval:forward" for both, or
None), ``kind`` ("alloc", "free", "retag"), ``category``, signed ``nbytes``, running ``total``, the ``op``
and ``module`` that allocated (None where none), the ``buffer_id``, and ``from_category`` for a retag."""


def category_totals(events, baseline_by_category: dict[str, int] | None = None) -> list[dict[str, int]]:
    """The bytes in each category after each event (for a stacked area plot); starts from ``baseline_by_category``."""
    running = dict.fromkeys(CATEGORIES, 0)
    running.update(baseline_by_category or {})
    rows = []
    for e in events:
        if e.kind == "retag":
            running[e.from_category] -= e.nbytes
        running[e.category] += e.nbytes
        rows.append(dict(running))
    return rows


def format_timeline(events, limit: int = 40) -> str:
    """The first ``limit`` events as a text table (signed bytes, running total in bytes)."""
    lines = [f"{'#':>5} {'step':>4} {'phase':<16} {'kind':<5} {'category':<26} {'bytes':>13} {'total':>13}  where"]
    for e in list(events)[:limit]:
        where = " / ".join(w for w in (e.module, e.op) if w) or "-"
        category = e.category if e.kind != "retag" else f"{e.from_category}>{e.category}"
        lines.append(f"{e.index:>5} {e.step:>4} {str(e.phase or '-'):<16} {e.kind:<5} {category:<26} "
                     f"{e.nbytes:>+13,} {e.total:>13,}  {where}")
    if len(events) > limit:
        lines.append(f"... {len(events) - limit} more events")
    return "\n".join(lines)
