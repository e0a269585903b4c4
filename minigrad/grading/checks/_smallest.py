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
