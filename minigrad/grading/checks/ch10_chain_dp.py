"""Graded checks for chapter 10, exercise 10.4 (``plan_chain``, the planning dynamic program): ``exercises/10_chain_dp.py``.

Chains of unequal layers are made here (a ladder of hand-made ones, then
random ones of up to 8 layers and long ones of 20 to 40), each with budgets
from below the lowest peak any plan reaches (the answer must be None)
through tight ones (the peaks plans reach, and one byte under them) to
generous ones (everything stored as one segment, nothing recomputed). The
learner's ``plan_chain`` answers all of a check's chains in one call in the
child, and comes back as plain data: its segments and the peak, recomputed
FLOPs and kept bytes its ``ChainPlan`` reports.

The verdict is computed here, from the library's model (``chain_peak``,
``evaluate_plan``) and the library's optimum: ``brute_force_chain`` (every
plan tried) up to 6 layers, ``plan_chain`` beyond, both imported here in the
grader, out of the learner's reach. An answer must tile the chain in order
with inclusive ``(start, end, checkpointed)`` segments, fit the budget by
the library's model, report what the library's model says of its segments,
and equal the optimum's (recomputed FLOPs, segments, peak) exactly: any of
several plans that tie on all three is right. The smallest failing chain is
reported.
"""

from __future__ import annotations

import itertools
import math

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe

BRUTE_FORCE_UP_TO = 6  # layers; beyond, the library's plan_chain is the optimum (tests pin it to the brute force)


def _reference():
    from minigrad.checkpoint import chain_dp  # here, in the grader: the child's copy is the learner's

    return chain_dp


@probe
def plans(submission, state, chains):
    """(child) The learner's plan for each ``(saved_bytes, input_bytes, flops, budget_bytes)``, as plain data."""
    out = []
    for saved, inputs, flops, budget in chains:
        got = submission.plan_chain(list(saved), list(inputs), list(flops), math.inf if budget is None else budget)
        if got is None:
            out.append(None)
            continue
        segments = getattr(got, "segments", None)
        if type(segments) not in (list, tuple) or any(type(s) not in (list, tuple) or len(s) != 3 for s in segments):
            out.append(f"{type(got).__name__} whose segments are {segments!r:.80} (not (start, end, checkpointed) "
                       f"triples)")
            continue
        out.append({"segments": [[s[0], s[1], s[2]] for s in segments],
                    **{name: getattr(got, name, None) for name in ("peak_bytes", "recompute_flops", "kept_bytes")}})
    return out


def _describe(chain) -> str:
    saved, inputs, flops, budget = chain
    return (f"a chain of {len(saved)} layer{'s' if len(saved) != 1 else ''}: plan_chain(saved_bytes={saved}, input_bytes={inputs}, flops={flops}, "
            f"budget_bytes={'math.inf' if budget is None else budget})")


def _count(segments) -> str:
    return f"{len(segments)} segment{'s' if len(segments) != 1 else ''}"


def _plain(segments) -> str:
    return "[" + ", ".join(f"({s}, {e}, {c})" for s, e, c in segments) + "]"


def _expected(chain):
    ref = _reference()
    saved, inputs, flops, budget = chain
    solve = ref.brute_force_chain if len(saved) <= BRUTE_FORCE_UP_TO else ref.plan_chain
    return solve(saved, inputs, flops, math.inf if budget is None else budget)


def _verify(chain, answer, why: str) -> None:
    """Fail unless ``answer`` (the probe's plain data) is an optimal plan of ``chain`` by the library's model."""
    ref = _reference()
    saved, inputs, flops, budget = chain
    limit = math.inf if budget is None else budget
    n = len(saved)
    expected = _expected(chain)
    if expected is None:
        assert answer is None, (
            f"plan_chain returned a plan, expected None: no plan fits (the lowest peak any plan reaches is "
            f"{_lowest_peak(chain):,} bytes); {why}")
        return
    best = f"{_count(expected.segments)} {_plain(expected.segments)}, {expected.recompute_flops:,} FLOPs recomputed, " \
           f"peak {expected.peak_bytes:,} bytes"
    assert answer is not None, f"plan_chain returned None, but a plan fits: e.g. {best}; {why}"
    assert type(answer) is dict, f"plan_chain returned {answer}, expected a ChainPlan"
    segments = answer["segments"]
    assert all(type(s) is int and type(e) is int and type(c) is bool for s, e, c in segments), (
        f"plan_chain's segments {segments} must be (start, end, checkpointed) with int bounds and a bool flag")
    starts = [0] + [e + 1 for _, e, _ in segments[:-1]]
    assert segments and [s for s, _, _ in segments] == starts and all(s <= e for s, e, _ in segments) \
        and segments[-1][1] == n - 1, (
        f"plan_chain's segments {_plain(segments)} do not tile layers 0 .. {n - 1} in order: each (start, end, "
        f"checkpointed) is inclusive and starts where the previous one ended + 1")
    mine = ref.evaluate_plan(segments, saved, inputs, flops)
    reported = {"peak_bytes": mine.peak_bytes, "recompute_flops": mine.recompute_flops, "kept_bytes": mine.kept_bytes}
    for name, value in reported.items():
        assert answer[name] == value and type(answer[name]) in (int, float), (
            f"plan_chain's plan {_plain(segments)} reports {name}={answer[name]!r}; its segments give {value!r} "
            f"(chain_peak and evaluate_plan say what the model gives)")
    assert mine.peak_bytes <= limit, (
        f"plan_chain's plan {_plain(segments)} peaks at {mine.peak_bytes:,} bytes, over the budget {limit:,}")
    key = (mine.recompute_flops, len(segments), mine.peak_bytes)
    assert key == (expected.recompute_flops, len(expected.segments), expected.peak_bytes), (
        f"plan_chain returned {_count(segments)} {_plain(segments)}, {mine.recompute_flops:,} FLOPs recomputed, "
        f"peak {mine.peak_bytes:,} bytes; the best plan within the budget has {best}; {why}")


def _check(learner, chains, why: str) -> None:
    got = learner.probe("plans", [list(c) for c in chains])
    assert type(got) is list and len(got) == len(chains), "plan_chain: the answers did not come back"
    answers = dict(zip(map(_key, chains), got))
    first_failure(smallest_first(chains, lambda c: (len(c[0]), sum(c[0]) + sum(c[1]))),
                  lambda chain: _verify(chain, answers[_key(chain)], why), _describe)


def _key(chain) -> tuple:
    return tuple(tuple(part) if type(part) is list else part for part in chain)


# ----------------------------------------------------------------------------- the chains and their budgets


def _all_peaks(saved, inputs) -> list[int]:
    """Every peak some plan of the chain reaches (the budgets where the answer can change), for short chains."""
    ref, n = _reference(), len(saved)
    peaks = set()
    for cuts in itertools.product((False, True), repeat=n - 1):
        ends = [i for i, cut in enumerate(cuts) if cut] + [n - 1]
        bounds = list(zip([0] + [e + 1 for e in ends[:-1]], ends))
        for flags in itertools.product((False, True), repeat=len(bounds)):
            peaks.add(ref.chain_peak([(s, e, c) for (s, e), c in zip(bounds, flags)], saved, inputs))
    return sorted(peaks)


def _lowest_peak(chain) -> int:
    """The lowest peak any plan of ``chain`` reaches: the smallest budget plan_chain answers (found by bisection)."""
    ref = _reference()
    saved, inputs, flops, _ = chain
    low, high = 0, sum(saved)  # storing everything peaks at sum(saved)
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if ref.plan_chain(saved, inputs, flops, middle) is not None else (middle + 1, high)
    return low


def _with_budgets(layers, budgets) -> list:
    saved, inputs, flops = (list(part) for part in layers)
    return [(saved, inputs, flops, b) for b in budgets]


def _random_layers(gen, n: int, scale: int = 1):
    saved = [int(v) * scale for v in gen.integers(1, 41, n)]
    inputs = [int(v) * scale for v in gen.integers(1, 16, n)]
    flops = [int(v) for v in gen.integers(0, 60, n)]
    return saved, inputs, flops


HAND_MADE = [  # (saved_bytes, input_bytes, flops): unequal layers, a free layer, a huge one, cheap boundaries
    ([8], [2], [5]),
    ([10, 30], [4, 6], [7, 3]),
    ([30, 10], [6, 4], [3, 7]),
    ([5, 40, 5], [2, 3, 3], [4, 50, 4]),
    ([20, 20, 20], [1, 9, 1], [10, 10, 10]),
    ([12, 6, 24, 6], [3, 3, 3, 8], [0, 9, 5, 9]),
    ([16, 16, 16, 16, 16], [4, 4, 4, 4, 4], [8, 1, 8, 1, 8]),
]


@exercise("10.4")
def test_hand_made_chains_at_every_budget_that_matters(learner, rng):
    chains = []
    for layers in HAND_MADE:
        peaks = _all_peaks(layers[0], layers[1])
        chains += _with_budgets(layers, [*sorted({0, *peaks, *(p - 1 for p in peaks)}), None])
    _check(learner, chains, "the least recomputed FLOPs among the plans whose peak (chain_peak) fits the budget, "
                            "then the fewest segments, then the lowest peak; None when no plan fits")


@exercise("10.4")
def test_budgets_below_the_lowest_peak_return_none(learner, rng):
    gen = np_generator(rng)
    chains = []
    for n in range(1, 9):
        for _ in range(2):
            layers = _random_layers(gen, n)
            lowest = _lowest_peak((*layers, None))
            chains += _with_budgets(layers, [lowest - 1, lowest // 2, lowest])
    _check(learner, chains, "under the lowest peak no plan fits (None), at it the plans that reach it do: every "
                            "checkpointed segment still keeps its input, and rebuilds its saved bytes on top of it")


@exercise("10.4")
def test_generous_budgets_store_everything(learner, rng):
    gen = np_generator(rng)
    chains = []
    for n in range(1, 9):
        layers = _random_layers(gen, n)
        chains += _with_budgets(layers, [sum(layers[0]), sum(layers[0]) + int(gen.integers(1, 100)), None])
    _check(learner, chains, "when storing every layer fits, that plan is the answer: one stored segment, "
                            "nothing recomputed")


@exercise("10.4")
def test_tight_budgets_on_random_chains(learner, rng):
    gen = np_generator(rng)
    chains = []
    for n in range(2, 9):
        for _ in range(3):
            layers = _random_layers(gen, n)
            lowest, everything = _lowest_peak((*layers, None)), sum(layers[0])
            budgets = {lowest, lowest + 1, everything - 1, *(int(b) for b in gen.integers(lowest, everything + 1, 3))}
            chains += _with_budgets(layers, sorted(budgets))
    _check(learner, chains, "a prefix's plans are summed up by the bytes they keep: for each such figure only "
                            "the cheapest plan matters, and every segment may be stored or checkpointed")


@exercise("10.4")
def test_ties_go_to_fewer_segments_then_the_lower_peak(learner, rng):
    gen = np_generator(rng)
    chains = []
    for n in range(2, 8):
        equal = ([24] * n, [6] * n, [10] * n)  # equal layers: many plans recompute the same FLOPs
        free = ([int(v) for v in gen.integers(5, 30, n)], [int(v) for v in gen.integers(1, 8, n)], [0] * n)
        for layers in (equal, free):
            lowest, everything = _lowest_peak((*layers, None)), sum(layers[0])
            chains += _with_budgets(layers, sorted({lowest, (lowest + everything) // 2, everything - 1}))
    _check(learner, chains, "among plans that recompute the same FLOPs the one with the fewest segments wins, "
                            "and among those the lowest peak (free layers make recomputing cost nothing)")


@exercise("10.4")
def test_long_chains(learner, rng):
    gen = np_generator(rng)
    chains = []
    for n in (20, 27, 33, 40):
        layers = _random_layers(gen, n, scale=1000)
        lowest, everything = _lowest_peak((*layers, None)), sum(layers[0])
        chains += _with_budgets(layers, [lowest - 1, lowest, int(lowest * 1.3), (lowest + everything) // 2,
                                         everything])
    _check(learner, chains, "a dynamic program over prefixes answers long chains (trying every plan does not): "
                            "the plan must fit the budget and recompute as little as the library's")
