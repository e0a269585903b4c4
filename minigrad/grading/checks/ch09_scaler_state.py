"""Graded checks for chapter 09, exercise 9.4 (the loss scaler's state machine): ``exercises/09_scaler_state.py``.

The learner's ``update_scale`` is driven through sequences of clean and
overflowing steps drawn here (growth intervals of 1 to 5 steps, several
growth and backoff factors, scales near float32's limits); after every step
its ``(scale, growth_tracker)`` must equal the library's. The shortest
failing sequence is reported, step by step. The last checks run the
library's ``GradScaler`` in the child on the learner's state machine through
a few real training steps, and ask ``needs_loss_scaling`` which formats need
a loss scale at all.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe


def _reference():
    from minigrad.amp import scaler_state  # here, in the grader: the child's copy is the learner's

    return scaler_state


def _trace(update_scale, scale, tracker, steps, factors) -> list:
    out = []
    for found_inf in steps:
        scale, tracker = update_scale(scale, tracker, found_inf, *factors)
        out.append((float(scale), int(tracker)))
    return out


@probe
def traces(submission, state, cases):
    """(child) The learner's ``(scale, tracker)`` after each step of each case (start, steps, factors)."""
    out = []
    for scale, tracker, steps, factors in cases:
        out.append(_trace(submission.update_scale, scale, tracker, steps, factors))
    return out


def _describe(case) -> str:
    scale, tracker, steps, (growth, backoff, interval) = case
    shown = ", ".join("inf" if s else "clean" for s in steps)
    return (f"growth_factor={growth!r}, backoff_factor={backoff!r}, growth_interval={interval}, starting at "
            f"scale={scale!r}, growth_tracker={tracker}; steps: {shown}")


def _check_cases(learner, cases, why: str) -> None:
    got = learner.probe("traces", [[c[0], c[1], list(c[2]), list(c[3])] for c in cases])
    assert isinstance(got, list) and len(got) == len(cases), "update_scale: the traces did not come back"
    mine = {id(c): g for c, g in zip(cases, got)}
    ref = _reference()

    def attempt(case) -> None:
        expected = _trace(ref.update_scale, case[0], case[1], case[2], case[3])
        trace = mine[id(case)]
        for k, (theirs, ours) in enumerate(zip(trace, expected)):
            assert type(theirs) in (list, tuple) and len(theirs) == 2, (
                f"step {k + 1}: update_scale returned {theirs!r}; it returns the pair (scale, growth_tracker)")
            assert (float(theirs[0]), theirs[1]) == ours, (
                f"after step {k + 1} ({'inf' if case[2][k] else 'clean'}): (scale, growth_tracker) = "
                f"({theirs[0]!r}, {theirs[1]!r}), expected {ours!r}: {why}")

    first_failure(smallest_first(cases, lambda c: len(c[2])), attempt, _describe)


def _steps(gen, length: int, p_inf: float) -> tuple:
    return tuple(bool(b) for b in gen.random(length) < p_inf)


@exercise("9.4")
def test_overflows_back_off_and_clean_runs_grow(learner, rng):
    gen = np_generator(rng)
    interval = int(gen.integers(2, 5))
    cases = [
        (65536.0, 0, (True,), (2.0, 0.5, interval)),
        (65536.0, 0, (False,), (2.0, 0.5, interval)),
        (65536.0, 0, (False,) * interval, (2.0, 0.5, interval)),
        (65536.0, 0, (False,) * (interval - 1) + (True,) + (False,) * interval, (2.0, 0.5, interval)),
        (1024.0, 0, (False,) * (2 * interval + 1), (2.0, 0.5, interval)),
        (1024.0, 0, (False, True, True, False, False), (2.0, 0.5, 1)),
    ]
    _check_cases(learner, cases, "an overflow multiplies the scale by backoff_factor and resets the tracker to 0; "
                                 "a clean step adds 1 to the tracker, and the growth_interval-th clean step in a "
                                 "row multiplies the scale by growth_factor and resets the tracker to 0")


@exercise("9.4")
def test_the_step_that_reaches_the_interval_can_overflow(learner, rng):
    gen = np_generator(rng)
    cases = []
    for interval in (1, 2, 3, int(gen.integers(4, 7))):
        cases.append((4096.0, interval - 1, (True, False), (2.0, 0.5, interval)))
        cases.append((4096.0, 0, (False,) * (interval - 1) + (True,) + (False,) * (interval + 1), (2.0, 0.5, interval)))
    _check_cases(learner, cases, "an overflowing step never grows the scale, even when the clean steps before it "
                                 "reach growth_interval - 1: it backs off and the count starts again")


@exercise("9.4")
def test_random_sequences_of_steps(learner, rng):
    gen = np_generator(rng)
    cases = []
    for _ in range(30):
        factors = (float(gen.choice([2.0, 1.5, 4.0, 1.1])), float(gen.choice([0.5, 0.25, 0.7])), int(gen.integers(1, 6)))
        start = float(np.float32(gen.choice([65536.0, 1.0, 3.0, 1000.1, 2.0**20])))
        cases.append((start, 0, _steps(gen, int(gen.integers(3, 40)), float(gen.uniform(0.05, 0.4))), factors))
    _check_cases(learner, cases, "the library's state machine (PyTorch's _amp_update_scale_)")


@exercise("9.4")
def test_the_scale_stays_a_float32_number(learner, rng):
    gen = np_generator(rng)
    top = 2.0**127
    cases = [
        (top, 0, (False,), (2.0, 0.5, 1)),  # 2**128 is not a float32 number: the scale stays
        (top, 1, (False, True, False), (2.0, 0.5, 2)),
        (float(np.float32(1000.1)), 0, (False,) * 3, (1.1, 0.5, 1)),
        (float(np.float32(3.0)), 0, (True, True, False), (1.1, 0.3, 1)),
        (float(np.float32(2.0**100)), 0, (False,) * int(gen.integers(30, 40)), (2.0, 0.5, 1)),
        (2.0**-140, 0, (True,) * 12, (2.0, 0.5, 3)),
    ]
    _check_cases(learner, cases, "each new scale is the product rounded to float32 (float32(x) does it), and a "
                                 "growth whose float32 product is not finite keeps the old scale (the tracker still "
                                 "resets)")


def _training(module_scaler, plan, interval: int):
    """(either side) The library's GradScaler through real steps: scale, tracker and the weight after each."""
    import minigrad.tensor as mt
    from minigrad import nn, optim

    p = nn.Parameter(mt.tensor([1.0, -2.0, 0.5], dtype="float32"))
    opt = optim.SGD([p], lr=0.125)
    scaler = module_scaler("cpu", init_scale=1024.0, growth_interval=interval)
    rows = []
    for overflow in plan:
        opt.zero_grad()
        scaler.scale((p * p).sum()).backward()
        if overflow:
            p.grad._data[1] = np.inf
        scaler.step(opt)
        scaler.update()
        rows.append([float(scaler.get_scale()), int(scaler._get_growth_tracker()), [float(v) for v in p.detach().numpy()]])
    return rows


@probe
def grad_scaler_run(submission, state, plan, interval):
    """(child) The library's GradScaler, whose scaler_state is the learner's file here."""
    from minigrad.amp.grad_scaler import GradScaler

    return _training(GradScaler, plan, interval)


@exercise("9.4")
def test_the_grad_scaler_runs_on_your_state_machine(learner, rng):
    gen = np_generator(rng)
    interval = int(gen.integers(2, 4))
    plan = [False] * interval + [True] + [False] * (interval - 1) + [True, False] + [False] * interval
    from minigrad.amp.grad_scaler import GradScaler

    got = learner.probe("grad_scaler_run", plan, interval)
    expected = _training(GradScaler, plan, interval)
    for k, (mine, theirs) in enumerate(zip(got, expected)):
        steps = ", ".join("inf" if s else "clean" for s in plan[:k + 1])
        assert mine == theirs, (
            f"GradScaler('cpu', init_scale=1024.0, growth_interval={interval}) on your update_scale, after the steps "
            f"{steps}: [scale, growth_tracker, weight] = {mine}, expected {theirs}")


@probe
def scaling_needed(submission, state, names):
    """(child) The learner's ``needs_loss_scaling`` for each dtype name."""
    from minigrad.tensor.dtypes import as_dtype

    return [submission.needs_loss_scaling(as_dtype(name)) for name in names]


@exercise("9.4")
def test_which_formats_need_a_loss_scale(learner, rng):
    names = ["float16", "bfloat16", "float32", "float64"]
    order = list(range(len(names)))
    rng.shuffle(order)
    asked = [names[i] for i in order]
    got = learner.probe("scaling_needed", asked)
    ref = _reference()
    for name, mine in zip(asked, got):
        theirs = ref.needs_loss_scaling(name)
        assert type(mine) in (bool, np.bool_) and bool(mine) == theirs, (
            f"needs_loss_scaling({name}) returned {mine!r}, expected {theirs}: a loss scale lifts gradients that "
            f"would underflow; bfloat16 has float32's exponent range (its smallest normal number is float32's), "
            f"float16 stops near 6e-5 (normal) and 6e-8 (subnormal)")
