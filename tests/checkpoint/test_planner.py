"""plan(): the chain measured, planned for what the fixed bytes leave, checked by measuring the planned step;
its prediction against a tracked run, and the simulated card it makes fit."""

from contextlib import nullcontext

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.checkpoint.planner import PlannedChain, plan
from minigrad.memory import GPUProfile, estimate, track
from minigrad.memory.card_check import train_on_card

BATCH, WIDTH = 1024, 64  # activations dominate: 32 layers of 256 KiB outputs against 266 KiB of parameters


def deep_mlp(depth=16):
    mt.manual_seed(0)
    return nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(WIDTH, WIDTH), nn.ReLU())])


@pytest.fixture(scope="module")
def mlp_and_peak():
    model = deep_mlp()
    return model, estimate(model, WIDTH, BATCH).peak


def tracked_step(model, forward):
    """One steady-state step as fit() runs it (the logits held through backward), tracked; Adam's state exists."""
    opt = optim.Adam(model.parameters())
    y = mt.randint(0, WIDTH, (BATCH,))
    for tracked in (False, True):
        opt.zero_grad(set_to_none=True)
        x = mt.randn(BATCH, WIDTH)
        with track(model, opt) if tracked else nullcontext() as mem:
            output = forward(x)
            loss = nn.functional.cross_entropy(output, y)
            loss.backward()
        if not tracked:
            opt.step()
    return mem.peak


def test_the_plan_fits_and_its_prediction_agrees_with_a_tracked_run(mlp_and_peak):
    model, unplanned_peak = mlp_and_peak
    budget = int(0.7 * unplanned_peak)
    p = plan(model, WIDTH, budget_bytes=budget, batch_size=BATCH)
    assert p.fits and p.planned.peak <= budget < p.unplanned.peak and p.chain.checkpointed
    tracked = tracked_step(model, p.apply(model))
    one_output = BATCH * WIDTH * 4
    # the chain model leaves out what backward holds while it recomputes (a gradient and a layer output in flight)
    assert abs(p.predicted_peak - tracked) <= one_output
    assert tracked == pytest.approx(p.planned.peak, abs=one_output)  # the estimate measured the same step
    text = str(p)
    assert "checkpoint layers 0-" in text and "predicted peak" in text and "recomputed" in text


def test_the_applied_plan_computes_the_same_gradients(mlp_and_peak):
    model, unplanned_peak = mlp_and_peak
    p = plan(model, WIDTH, budget_bytes=int(0.7 * unplanned_peak), batch_size=BATCH)
    planned = p.apply(model)
    assert isinstance(planned, PlannedChain) and list(planned.parameters()) == list(model.parameters())
    x = mt.randn(8, WIDTH)
    grads = []
    for forward in (model, planned):
        for q in model.parameters():
            q.grad = None
        forward(x).sum().backward()
        grads.append([q.grad.numpy().copy() for q in model.parameters()])
    assert all(np.array_equal(a, b) for a, b in zip(*grads))


def test_no_more_recompute_than_uniform_segments_that_fit(mlp_and_peak):
    model, unplanned_peak = mlp_and_peak
    p = plan(model, WIDTH, budget_bytes=int(0.7 * unplanned_peak), batch_size=BATCH)
    room = p.budget_bytes - p.fixed_bytes - p.outside_chain
    for segments in range(1, len(p.costs) + 1):
        uniform = p.uniform(segments)
        if uniform.peak_bytes <= room:
            assert p.chain.recompute_flops <= uniform.recompute_flops
    assert p.uniform().segments == p.uniform(6).segments  # round(sqrt(32))


def test_on_a_simulated_card_the_plan_fits_where_the_plain_step_does_not(mlp_and_peak):
    model, _ = mlp_and_peak
    card = GPUProfile("small", "small", 5_000_000, 100.0, 1.0, 1.0, 0, (6, 1), context_bytes=0, pcie_gb_s=15.75)
    p = plan(model, WIDTH, card=card, batch_size=BATCH)
    assert p.fits and p.planned.fits(card) and not p.unplanned.fits(card)
    assert not train_on_card(model, WIDTH, BATCH, card).fits  # the card itself agrees
    assert train_on_card(model, WIDTH, BATCH, card, checkpoint=p.run).fits
    assert "on the small: fits" in str(p) and "without the plan: does NOT fit" in str(p)


def test_a_budget_nothing_fits_is_refused_with_what_takes_the_memory(mlp_and_peak):
    model, _ = mlp_and_peak
    with pytest.raises(ValueError, match="no checkpointing plan of Sequential fits .* parameters, gradients, "
                                         "optimizer state and batch take"):
        plan(model, WIDTH, budget_bytes=1_500_000, batch_size=BATCH)


def test_hostile_input():
    model = deep_mlp(depth=1)
    with pytest.raises(TypeError, match="plan: expected a non-empty nn.Sequential"):
        plan(nn.Linear(3, 3), 3, budget_bytes=10**6, batch_size=2)
    with pytest.raises(TypeError, match="batch_size is required"):
        plan(model, WIDTH, budget_bytes=10**6)
    with pytest.raises(TypeError, match="give budget_bytes .* or card"):
        plan(model, WIDTH, batch_size=2)
    for bad in (0, -5, float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="budget_bytes must be a positive number of bytes"):
            plan(model, WIDTH, budget_bytes=bad, batch_size=2)
    p = plan(model, WIDTH, budget_bytes=10**8, batch_size=2)
    assert p.segments == ((0, 1, False),) and p.recompute_fraction == 0 and p.planned is p.unplanned
    with pytest.raises(ValueError, match="Plan.run: the plan is for a Sequential of 2 layers, got Sequential of 4"):
        p.run(deep_mlp(depth=2), mt.randn(2, WIDTH))
    with pytest.raises(ValueError, match="Plan.apply: the plan is for a Sequential of 2 layers, got Linear"):
        p.apply(nn.Linear(3, 3))
