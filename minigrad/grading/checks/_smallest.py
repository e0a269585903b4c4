"""Smallest failing input first: a check tries its cases in order of size, and reports the first that fails.

A check builds its cases (a ladder of small deterministic ones, then its
random ones), orders them with :func:`smallest_first`, and runs them with
:func:`first_failure`. The failure it reports then leads with the smallest
input that fails, as ``describe(case)`` writes it, followed by what the
learner's code returned against what was expected (the assertion's message)
and, where the learner's code raised, its ``FILE:LINE``. Grader side only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minigrad.grading.probing import LearnerError


class Counterexample(AssertionError):
    """A failing check's smallest failing input (``described``) and what went wrong on it (``reason``)."""

    def __init__(self, described: str, reason: BaseException):
        self.described, self.reason = described, reason
        text = str(reason) or "assertion failed"
        super().__init__(f"smallest failing input: {described}\n{text}")


def smallest_first(cases: Iterable, size: Callable) -> list:
    """``cases`` ordered by ``size(case)``; equal sizes keep their order (so a seed still replays)."""
    return sorted(cases, key=size)


def first_failure(cases: Iterable, attempt: Callable, describe: Callable[..., str]) -> None:
    """``attempt(case)`` for each case in order; the first that fails raises :class:`Counterexample`.

    Only wrong answers and the learner's exceptions count as a failing case;
    a dead or timed-out child still ends the check as it would have.
    """
    for case in cases:
        try:
            attempt(case)
        except (AssertionError, LearnerError) as err:
            if isinstance(err, Counterexample):
                raise
            raise Counterexample(describe(case), err) from None


def first_failure_confirmed(scaled: Iterable, full: Iterable, attempt: Callable, describe: Callable[..., str]) -> None:
    """:func:`first_failure` over ``scaled`` then ``full``, where ``scaled`` cases run the design scaled down.

    A ``scaled`` case runs the learner's code at sizes the exercise does not
    fix (a kernel whose block-size constants the grader made small), so its
    failure alone fails nothing: code written only for the exercise's sizes
    is not wrong. The verdict is the ``full`` cases'; when one fails, the
    report leads with the first failing ``scaled`` case if there is one (and
    names the full-size case that also fails), else with the full-size case.
    """
    small = None
    for case in scaled:
        try:
            attempt(case)
        except (AssertionError, LearnerError) as err:
            if isinstance(err, Counterexample):
                raise
            small = (case, err)
            break
    for case in full:
        try:
            attempt(case)
        except (AssertionError, LearnerError) as err:
            if isinstance(err, Counterexample):
                raise
            if small is None:
                raise Counterexample(describe(case), err) from None
            also = AssertionError(f"{str(small[1]) or 'assertion failed'}\nat full size it fails too: {describe(case)}")
            raise Counterexample(describe(small[0]), also) from None
