"""Graded checks for chapter 10, exercise 10.3 (``segment_bounds``): ``exercises/10_segments.py``.

The learner's ``segment_bounds(n_functions, segments)`` is asked, in the
child, for every chain of 1 to 12 functions cut into every allowed number
of segments, and for chains drawn here (up to 200 functions, any number of
segments, ``sqrt(n)`` among them); each answer must be the list of inclusive
``(start, end)`` pairs PyTorch's ``checkpoint_sequential`` uses, as the
library gives it here. The smallest failing chain is reported. The last
check asks for segment counts below 1 and above ``n_functions``, which must
raise ``ValueError``.
"""

from __future__ import annotations

import math

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, must_raise, probe


def _reference():
    from minigrad.checkpoint import segments  # here, in the grader: the child's copy is the learner's

    return segments


@probe
def bounds(submission, state, cases):
    """(child) The learner's bounds for each ``(n_functions, segments)``, as lists of pairs."""
    out = []
    for n, k in cases:
        got = submission.segment_bounds(n, k)
        out.append([list(pair) if type(pair) in (list, tuple) else pair for pair in got]
                   if type(got) in (list, tuple) else f"{type(got).__name__} (not a list)")
    return out


def _check(learner, cases, why: str) -> None:
    got = learner.probe("bounds", [list(c) for c in cases])
    assert type(got) is list and len(got) == len(cases), "segment_bounds: the answers did not come back"
    mine = dict(zip(cases, got))
    ref = _reference()

    def attempt(case) -> None:
        n, k = case
        expected = [list(pair) for pair in ref.segment_bounds(n, k)]
        answer = mine[case]
        assert answer == expected, (
            f"segment_bounds({n}, {k}) returned {_plain(answer)}, expected {_plain(expected)}: {why}")

    first_failure(smallest_first(cases, lambda c: (c[0], c[1])), attempt, lambda c: f"segment_bounds({c[0]}, {c[1]})")


def _plain(answer) -> str:
    if type(answer) is not list:
        return str(answer)
    return "[" + ", ".join(f"({p[0]}, {p[1]})" if type(p) is list and len(p) == 2 else repr(p) for p in answer) + "]"


@exercise("10.3")
def test_equal_segments_when_the_count_divides_the_chain(learner, rng):
    cases = [(n, k) for n in range(1, 13) for k in range(1, n + 1) if n % k == 0]
    _check(learner, cases, "every segment has n // segments functions; the bounds are inclusive and tile 0 .. n-1")


@exercise("10.3")
def test_the_last_segment_takes_the_rest(learner, rng):
    cases = [(n, k) for n in range(1, 13) for k in range(1, n + 1) if n % k]
    _check(learner, cases, "every segment but the last has n // segments functions, and the last one takes all the "
                           "rest (PyTorch's checkpoint_sequential), so it is the longest")


@exercise("10.3")
def test_long_chains(learner, rng):
    gen = np_generator(rng)
    cases = set()
    for _ in range(25):
        n = int(gen.integers(13, 201))
        cases.add((n, int(gen.integers(1, n + 1))))
        cases.add((n, max(1, math.isqrt(n))))
    _check(learner, sorted(cases), "the library's bounds (PyTorch's rule) for long chains, sqrt(n) segments among them")


@exercise("10.3")
def test_impossible_segment_counts_raise(learner, rng):
    gen = np_generator(rng)
    n = int(gen.integers(2, 9))
    for k, what in ((0, "no segment"), (-int(gen.integers(1, 4)), "a negative count"),
                    (n + 1, "more segments than functions"), (n + int(gen.integers(2, 5)), "far more segments")):
        must_raise(lambda k=k: learner.segment_bounds(n, k), ("ValueError",),
                   f"segment_bounds({n}, {k}) ({what}; a segment must hold at least one function)")
