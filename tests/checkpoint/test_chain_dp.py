"""plan_chain, the checkpointing dynamic program: the brute force's optimum on short chains, never worse than
checkpoint_sequential's uniform segments, its model stated once, and wrong variants caught."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.checkpoint.chain_dp import (
    ChainPlan, brute_force_chain, chain_peak, evaluate_plan, plan_chain, uniform_segments,
)


@st.composite
def chains(draw, max_layers=8):
    """Chains of unequal layers and a budget between nothing and storing everything."""
    n = draw(st.integers(1, max_layers))
    layer = st.integers(0, 1000)
    saved = draw(st.lists(layer, min_size=n, max_size=n))
    inputs = draw(st.lists(layer, min_size=n, max_size=n))
    flops = draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    budget = draw(st.integers(0, sum(saved) + max(inputs) + 1))
    return saved, inputs, flops, budget


def key(plan: ChainPlan | None):
    return None if plan is None else (plan.recompute_flops, len(plan.segments), plan.peak_bytes)


def first_disagreement(planner, examples):
    """The first chain where ``planner`` misses the brute force's optimum or breaks the budget (None: none)."""
    for saved, inputs, flops, budget in examples:
        found, best = planner(saved, inputs, flops, budget), brute_force_chain(saved, inputs, flops, budget)
        if key(found) != key(best) or (found is not None and chain_peak(found.segments, saved, inputs) > budget):
            return saved, inputs, flops, budget
    return None


@settings(max_examples=60)
@given(chains())
def test_the_dynamic_program_finds_the_brute_force_optimum(chain):
    saved, inputs, flops, budget = chain
    found = plan_chain(saved, inputs, flops, budget)
    assert key(found) == key(brute_force_chain(saved, inputs, flops, budget))
    if found is not None:  # what it reports is what the model says of its segments
        assert found == evaluate_plan(found.segments, saved, inputs, flops)
        assert found.peak_bytes <= budget


@settings(max_examples=40)
@given(chains(max_layers=24))
def test_never_worse_than_uniform_segments_that_fit(chain):
    saved, inputs, flops, budget = chain
    found = plan_chain(saved, inputs, flops, budget)
    for count in range(1, len(saved) + 1):
        uniform = evaluate_plan(uniform_segments(len(saved), count), saved, inputs, flops)
        if uniform.peak_bytes <= budget:
            assert found is not None and found.recompute_flops <= uniform.recompute_flops


# ------------------------------------------------------------------ the model, on examples worked by hand


def test_the_model_counts_kept_bytes_and_each_recompute_with_what_precedes_it():
    saved, inputs = [10, 20, 30, 40], [5, 6, 7, 8]
    # store 0-1 (keeps 30); checkpoint 2-3 (keeps its input, 7; recomputing it holds 30 + 7 + 70)
    assert chain_peak([(0, 1, False), (2, 3, True)], saved, inputs) == 107
    # checkpoint 0-1 first: recomputing it holds only its input and its saves, 5 + 30; the end of forward 5 + 70
    assert chain_peak([(0, 1, True), (2, 3, False)], saved, inputs) == 75
    assert chain_peak([(0, 3, False)], saved, inputs) == 100
    plan = evaluate_plan([(0, 1, True), (2, 3, False)], saved, inputs, [1, 2, 3, 4])
    assert (plan.recompute_flops, plan.kept_bytes, plan.checkpointed) == (3, 75, [(0, 1)])


def test_no_limit_stores_everything_in_one_segment_and_too_little_gives_none():
    saved, inputs, flops = [4, 4, 4, 4], [4, 4, 4, 4], [1, 1, 1, 1]
    plan = plan_chain(saved, inputs, flops, math.inf)
    assert plan.segments == ((0, 3, False),) and plan.recompute_flops == 0
    assert plan_chain(saved, inputs, flops, 3) is None is brute_force_chain(saved, inputs, flops, 3)
    assert "store 0-3" in str(plan) and "0 FLOPs recomputed" in str(plan)


def test_it_recomputes_the_cheap_layers_and_keeps_the_expensive_ones():
    saved, inputs, budget = [2, 2, 10, 2, 10], [0, 10, 10, 10, 2], 25
    cheap = plan_chain(saved, inputs, [1, 1, 1, 1, 1], budget)
    assert cheap.segments == ((0, 0, True), (1, 4, False))  # recomputing layer 0 is enough
    costly = plan_chain(saved, inputs, [100, 1, 1, 1, 1], budget)  # ... unless layer 0 costs 100 times more
    assert costly.segments == ((0, 0, False), (1, 2, True), (3, 4, False)) and costly.recompute_flops == 2


def test_ties_go_to_fewer_segments():
    plan = plan_chain([1, 1, 1], [1, 1, 1], [0, 0, 0], 100)  # recomputing is free: still one stored segment
    assert plan.segments == ((0, 2, False),)


def test_uniform_segments_are_checkpoint_sequentials():
    assert uniform_segments(10, 3) == ((0, 2, True), (3, 5, True), (6, 9, False))
    assert uniform_segments(4, 1) == ((0, 3, False),)


# ------------------------------------------------------------------ wrong planners are caught

HAND_EXAMPLES = [([0, 100, 0, 100], [100, 0, 100, 0], [1, 1, 1, 1], 150),
                 ([10, 10, 10, 10], [5, 5, 5, 5], [1, 1, 1, 1], 30),
                 ([10, 10, 10, 10], [50, 50, 50, 50], [1, 1, 1, 1], 30)]


def ignoring_boundaries(saved, inputs, flops, budget):
    """A DP that thinks a checkpointed segment keeps nothing: its plans break the budget."""
    return plan_chain(saved, [0] * len(saved), flops, budget)


def ignoring_recomputes(saved, inputs, flops, budget):
    """A DP that checks only the end of forward: recomputing a segment needs room too."""
    plan = plan_chain([0] * len(saved), inputs, flops, budget)  # kept bytes of checkpointed segments only
    return plan_chain(saved, inputs, flops, math.inf) if plan is None else plan


def every_segment_alone(saved, inputs, flops, budget):
    """Layer by layer, checkpoint what does not fit: no tie-breaking, no optimum."""
    segments = [(i, i, True) for i in range(len(saved))]
    plan = evaluate_plan(segments, saved, inputs, flops)
    return plan if plan.peak_bytes <= budget else None


@pytest.mark.parametrize("wrong", [ignoring_boundaries, ignoring_recomputes, every_segment_alone])
def test_wrong_planners_are_caught(wrong):
    assert first_disagreement(wrong, HAND_EXAMPLES) is not None
    assert first_disagreement(plan_chain, HAND_EXAMPLES) is None


def test_a_planner_ignoring_boundary_bytes_breaks_the_budget():
    saved, inputs, flops, budget = HAND_EXAMPLES[2]  # the inputs are large: checkpointing cannot help
    assert plan_chain(saved, inputs, flops, budget) is None
    plan = ignoring_boundaries(saved, inputs, flops, budget)
    assert chain_peak(plan.segments, saved, inputs) > budget  # what the mistake costs on the card


# ------------------------------------------------------------------ hostile input


@pytest.mark.parametrize("args, message", [
    (([1, 2], [1], [1, 1], 10), "one entry per layer"),
    (([], [], [], 10), "non-empty chain"),
    (([1, -2], [1, 1], [1, 1], 10), r"saved_bytes\[1\] must be a whole number of bytes >= 0, got -2"),
    (([1, 2.5], [1, 1], [1, 1], 10), r"saved_bytes\[1\] must be a whole number"),
    (([1, 2], [1, math.nan], [1, 1], 10), r"input_bytes\[1\] must be"),
    (([1, 2], [1, 1], [1, math.inf], 10), r"flops\[1\] must be a finite number >= 0"),
    (([1, True], [1, 1], [1, 1], 10), r"saved_bytes\[1\]"),
    (([1, 2], [1, 1], [1, 1], math.nan), "budget_bytes must be a number of bytes >= 0"),
    (([1, 2], [1, 1], [1, 1], -1), "budget_bytes must be"),
])
def test_bad_chains_are_refused_with_the_reason(args, message):
    for function in (plan_chain, brute_force_chain):
        with pytest.raises(ValueError, match=message):
            function(*args)


def test_other_refusals():
    with pytest.raises(TypeError, match="plan_chain: saved_bytes, input_bytes and flops must be sequences"):
        plan_chain(3, [1], [1], 10)
    with pytest.raises(ValueError, match="brute_force_chain: 17 layers"):
        brute_force_chain([1] * 17, [1] * 17, [1] * 17, 100)
    with pytest.raises(ValueError, match="do not tile layers 0..2"):
        evaluate_plan([(0, 0, True), (2, 2, False)], [1, 1, 1], [1, 1, 1], [1, 1, 1])
    with pytest.raises(ValueError, match="cover layers 0..1, the chain has 3"):
        evaluate_plan([(0, 1, True)], [1, 1, 1], [1, 1, 1], [1, 1, 1])
    assert plan_chain([1.0, 2.0], [1, 1], [0.5, 1], 10).recompute_flops == 0  # integral floats are bytes
