"""The tracker's engine: a stream of allocation events in, the live bytes by category, the peak and its split out.

The buffer registry (:mod:`.buffers`) tells its observers about every buffer
as an event ``(kind, nbytes, buffer_id, tag, ...)``: ``"alloc"`` when a buffer
appears, ``"free"`` when it goes, ``"retag"`` when it gets a new label. A
buffer is reported once, however many views look at it, so a stream of events
is all it takes to know where the memory is at every moment.
:func:`count_events` applies such a stream, in order, to a :class:`Counts`;
:class:`~minigrad.memory.tracker.Tracker` calls it for every event it
receives, so every table and figure of chapter 08 comes from this function.

A tag is not a category: ``category_of_tag(tag)`` sorts the tags into the
seven categories (``"output"`` is a temporary, ``"tensor"`` an input, a tag
it does not know is ``"other"``).

Invariants (after every event)
- ``current == sum(by_category.values())`` and ``current`` is the sum of
  the sizes of the buffers in ``category_of`` (the ones counted and alive).
- ``peak`` is the largest ``current`` reached; ``peak_by_category`` is the
  split at the *first* event that reached it (``peak_at``, its index), a
  copy that later events never change.
- An event about a buffer that is not counted (freed or relabelled, but
  never seen allocated: it was alive before counting began) changes
  nothing and its index goes into ``uncounted``; so does a relabelling that
  stays within one category. A relabelling that moves bytes records the
  category they left in ``previous[index]``.
"""

from __future__ import annotations

from minigrad.memory.categories import CATEGORIES, CATEGORY_OF_TAG, OTHER

__all__ = ["Counts", "count_events", "category_of_tag"]


class _CategoryOfTag(dict):
    """``CATEGORY_OF_TAG`` read with ``[tag]``: ``"other"`` for a tag it does not know (no call on the hot path)."""

    def __missing__(self, tag: str) -> str:
        return OTHER


_CATEGORY_OF_TAG = _CategoryOfTag(CATEGORY_OF_TAG)
category_of_tag = _CATEGORY_OF_TAG.__getitem__  # the category of a buffer with this tag


class Counts:
    """What :func:`count_events` keeps up to date; start it from the buffers already alive (``known``).

    ``known``: ``{buffer_id: (nbytes, category)}`` of buffers alive before the
    first event; they are counted from the start, and that is the first peak.
    """

    __slots__ = ("current", "peak", "by_category", "peak_by_category", "peak_at", "category_of", "uncounted",
                 "previous")

    def __init__(self, known: dict | None = None) -> None:
        self.by_category: dict[str, int] = dict.fromkeys(CATEGORIES, 0)
        self.category_of: dict[int, str] = {}  # buffer_id -> category, for every buffer counted and alive
        for buffer_id, (size, category) in (known or {}).items():
            self.category_of[buffer_id] = category
            self.by_category[category] += size
        self.current = self.peak = sum(self.by_category.values())
        self.peak_by_category = dict(self.by_category)
        self.peak_at: int | None = None  # index of the event that first reached the peak (None: the start)
        self.uncounted: set[int] = set()  # indices of events that changed nothing
        self.previous: dict[int, str] = {}  # index of a relabelling that moved bytes -> the category they left

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}


def count_events(counts: Counts, events, start: int = 0) -> None:
    """Apply ``events[start:]`` to ``counts``, in order; event ``i`` is ``(kind, nbytes, buffer_id, tag, ...)``.

    ``kind`` is ``"alloc"`` (a new buffer of ``nbytes`` bytes, labelled
    ``tag``), ``"free"`` (the buffer is gone) or ``"retag"`` (the buffer's
    label is now ``tag``; its bytes move to that tag's category). Indices in
    ``peak_at``, ``uncounted`` and ``previous`` are positions in ``events``.
    See the module docstring for what must hold after every event.
    """
    by_category, category_of = counts.by_category, counts.category_of
    current, peak = counts.current, counts.peak  # kept in locals while counting; written back at the end
    for index in range(start, len(events)):
        kind, nbytes, buffer, tag = events[index][:4]
        ### BEGIN SOLUTION 8.5 | an allocation adds its bytes to its tag's category (a new peak: remember its split as it is now); a free takes them from the category the buffer was counted in; a relabelling moves them; an event about a buffer you never counted changes nothing
        if kind == "alloc":
            category = category_of[buffer] = _CATEGORY_OF_TAG[tag]
            by_category[category] += nbytes
            current += nbytes
            if current > peak:
                peak = current
                counts.peak_by_category = by_category.copy()
                counts.peak_at = index
        elif kind == "free":
            category = category_of.pop(buffer, None)
            if category is None:
                counts.uncounted.add(index)
            else:
                by_category[category] -= nbytes
                current -= nbytes
        else:  # "retag"
            previous = category_of.get(buffer)
            category = _CATEGORY_OF_TAG[tag]
            if previous is None or previous == category:
                counts.uncounted.add(index)
            else:
                category_of[buffer] = category
                by_category[previous] -= nbytes
                by_category[category] += nbytes
                counts.previous[index] = previous
        ### END SOLUTION
    counts.peak, counts.current = peak, current
