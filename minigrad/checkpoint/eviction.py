"""Which saved tensor to evict: the heuristic of Dynamic Tensor Rematerialization (exercise material).

Kirisame, Lyubomirsky, Haan, Brennan, He, Roesch, Chen and Tatlock,
"Dynamic Tensor Rematerialization", ICLR 2021 (arXiv:2006.09616), treat
memory as a cache of tensors: when a new one does not fit, evict the
resident tensor ``t`` with the lowest

    h(t) = (c(t) + sum of c(u) over e*(t)) / (m(t) * s(t))

- ``c(t)``: the compute it takes to make ``t`` again (its parent's cost);
- ``e*(t)``: its *evicted neighbourhood*, here the evicted tensors that
  remaking ``t`` would have to remake first, and theirs, and so on: evicting
  ``t`` is only as cheap as the whole chain it would drag back;
- ``m(t)``: its bytes: evicting a big tensor frees more;
- ``s(t)``: its staleness, the time since it was last used: a tensor nobody
  touched for long is unlikely to be needed soon.

Cheap to remake, big and stale goes first. This file knows nothing of
tensors: the things scored are keys, and the caller says what each costs,
which evicted things remaking it needs (:func:`remat_cost`) and how big and
stale each candidate is (:func:`choose_victim`).

Invariants
- :func:`remat_cost` counts each thing once, however many paths lead to it,
  and stops at resident things (they need no remaking).
- :func:`choose_victim` returns the candidate of lowest ``h``; a candidate
  used just now (staleness 0) is never chosen; ties go to the first
  candidate given, so the choice is deterministic.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, NamedTuple

__all__ = ["Candidate", "dtr_score", "remat_cost", "choose_victim"]


class Candidate(NamedTuple):
    """A resident tensor that could be evicted: its key, ``remat_cost`` (``c(t)`` plus its evicted neighbourhood),
    its bytes and its staleness (logical time since last use)."""

    key: Hashable
    remat_cost: float
    nbytes: int
    staleness: int


def dtr_score(remat_cost: float, nbytes: int, staleness: int) -> float:
    """``h = remat_cost / (nbytes * staleness)``: lower is a better victim; infinite if used just now or empty."""
    if staleness <= 0 or nbytes <= 0:
        return float("inf")
    return remat_cost / (nbytes * staleness)


def remat_cost(start: Hashable, cost: Callable[[Hashable], float],
               evicted_parents: Callable[[Hashable], Iterable[Hashable]]) -> float:
    """The compute to make ``start`` again: its own ``cost`` plus that of every evicted thing it needs, cascading.

    ``evicted_parents(k)``: the evicted things that remaking ``k`` needs first.
    """
    total = 0.0
    seen = {start}
    waiting = [start]
    while waiting:
        key = waiting.pop()
        total += cost(key)
        for parent in evicted_parents(key):
            if parent not in seen:
                seen.add(parent)
                waiting.append(parent)
    return total


def choose_victim(candidates: Iterable[Candidate]) -> Candidate | None:
    """The candidate with the lowest :func:`dtr_score` (the first of equals), or None if none may go."""
    best, best_score = None, float("inf")
    for candidate in candidates:
        score = dtr_score(candidate.remat_cost, candidate.nbytes, candidate.staleness)
        if score < best_score:
            best, best_score = candidate, score
    return best
