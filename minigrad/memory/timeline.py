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

from minigrad.memory.categories import ACTIVATION, CATEGORIES, category_of

__all__ = ["TimelineEvent", "category_totals", "format_timeline", "timeline_rows"]

TimelineEvent = namedtuple(
    "TimelineEvent", "index step phase kind category nbytes total op module buffer_id from_category"
)
TimelineEvent.__doc__ = """One row of the timeline: ``index`` (0, 1, ...), ``step`` (optimizer steps finished
before it), ``phase`` ("forward", "backward", "optimizer", a hand-set label, "eval:forward" for both, or
None), ``kind`` ("alloc", "free", "retag"), ``category``, signed ``nbytes``, running ``total``, the ``op``
and ``module`` that allocated (None where none), the ``buffer_id``, and ``from_category`` for a retag."""


def timeline_rows(raw, contexts, uncounted=frozenset(), previous=None, baseline: int = 0) -> list[TimelineEvent]:
    """The rows of a tracker's raw timeline.

    ``raw``: the core's allocation events in order, each naming the module
    running as its ``scope``; ``contexts``: ``(index, (step, phase, context
    op))`` pairs, each in force from ``raw[index]`` on; ``uncounted``: indices of events the tracker did not count (left out);
    ``previous``: index of a relabelling -> the category it moved bytes from.
    The running ``total`` starts at ``baseline``; a free names the op and module
    of its allocation (None for buffers allocated before the tracker started);
    ``op`` falls back to the context op (``"backward"``, ``"Adam.step"``) where
    no op made the buffer.
    """
    previous = previous or {}
    rows = []
    total = baseline
    made_by: dict[int, tuple] = {}  # buffer_id -> (op, module) of its allocation
    marks = list(contexts) + [(len(raw), None)]
    context, next_mark = (0, None, None), 0
    for index, event in enumerate(raw):
        while marks[next_mark][0] <= index and marks[next_mark][1] is not None:
            context = marks[next_mark][1]
            next_mark += 1
        if index in uncounted:
            continue
        kind, nbytes, buffer, tag, _device, op, module = event
        step, phase, context_op = context
        from_category = None
        if kind == "alloc":
            total += nbytes
            op = op or context_op
            made_by[buffer] = (op, module)
        elif kind == "free":
            total -= nbytes
            nbytes = -nbytes
            op, module = made_by.pop(buffer, (op or context_op, None))
        else:
            from_category = previous.get(index)
            op = op or context_op
            made_op, made_module = made_by.get(buffer, (None, None))
            if category_of(tag) != ACTIVATION:  # an activation belongs to the module whose forward saved it
                module = made_module
            made_by[buffer] = (made_op, module)
        rows.append(TimelineEvent(len(rows), step, phase, kind, category_of(tag), nbytes, total, op, module, buffer,
                                  from_category))
    return rows


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
