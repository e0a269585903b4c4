"""Graded checks for chapter 10, exercise 10.1 (checkpoint as one Function): ``exercises/10_reentrant.py``.

Small blocks are drawn here (widths, batch, a dropout probability, a plain
``float`` and ``str`` argument, a second tensor input that needs no
gradient, an autocast region) and built on both sides from the same seed,
with the library's layers. In the child the learner's file *is*
``minigrad.checkpoint.reentrant``: the block runs through the learner's
``CheckpointFunction`` there, and comes back as plain data: its output, the
gradients of the input and of every parameter, random numbers drawn after
backward, how many times the block ran in forward and in backward, and what
``minigrad.memory.track()`` counted as activations at the end of the
block's first run and after the checkpointed call. Here, the same block runs
without a checkpoint (the gradients, the draws) and through the library's
``checkpoint_reentrant`` (the tracker's figures), and every answer must equal
those. The smallest failing block is reported.

What the child reports about the learner's run (counts, the tracker's
figures) is an answer like any other: it is compared with what the library
gives here on the same block, never taken as the verdict itself.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe

ACTIVATIONS = ("tanh", "relu")


def _reference():
    from minigrad.checkpoint import reentrant  # here, in the grader: the child's copy is the learner's

    return reentrant.checkpoint_reentrant


def _host(t):
    """A tensor's values as a float64 host array (exact for every float dtype: bfloat16 cannot cross the wire)."""
    return None if t is None else np.array(t.detach().double().cpu().numpy())


def _build(s: dict):
    """(either side) The block of scenario ``s``, its parameters and its arguments, all drawn from ``s["seed"]``."""
    import minigrad.tensor as mt
    from minigrad import nn
    from minigrad.nn import functional as F

    dtype = mt.float32 if s["autocast"] else mt.float64
    n_in, hidden, n_out = s["widths"]
    mt.manual_seed(s["seed"])
    first, second = nn.Linear(n_in, hidden, dtype=dtype), nn.Linear(hidden, n_out, dtype=dtype)
    norm = nn.BatchNorm1d(hidden, dtype=dtype) if s.get("batchnorm") else None
    x = mt.randn(s["batch"], n_in, dtype=dtype, requires_grad=True)
    shift = mt.randn(s["batch"], hidden, dtype=dtype) if s["shift"] else None  # a tensor that needs no gradient
    calls = []

    def block(x, scale, activation, shift):
        calls.append(s.get("_phase", "?"))
        h = first(x)
        if shift is not None:
            h = h + shift
        if norm is not None:
            h = norm(h)
        h = h.tanh() if activation == "tanh" else h.relu()
        if s["p"]:
            h = F.dropout(h, s["p"])
        return second(h * scale)

    return block, [first.weight, first.bias, second.weight, second.bias], x, shift, calls, norm


def _run(s: dict, wrap) -> dict:
    """(either side) Forward, a draw, backward of ``sum(w * y)``; ``wrap`` is a checkpoint function, None: unchecked."""
    import minigrad.tensor as mt
    from minigrad.amp.autocast import autocast

    block, params, x, shift, calls, norm = _build(s)
    args = (x, s["scale"], s["activation"], shift)
    s["_phase"] = "forward"
    with autocast("cpu", dtype=mt.bfloat16, enabled=s["autocast"]):
        y = block(*args) if wrap is None else wrap(block, *args)
    between = _host(mt.rand(3))  # the stream moves on between forward and backward
    weights = mt.tensor(np.asarray(s["upstream"], dtype=np.float64))
    s["_phase"] = "backward"
    (y.double() * weights).sum().backward()
    after = _host(mt.rand(4))
    statistics = None if norm is None else [_host(norm.running_mean), _host(norm.running_var),
                                            float(norm.num_batches_tracked.item())]
    return {"y": _host(y), "grads": [_host(x.grad)] + [_host(p.grad) for p in params],
            "calls": [calls.count("forward"), calls.count("backward")], "draws": [between, after],
            "batchnorm": statistics}


def _tracked(s: dict, wrap) -> dict:
    """(either side) The tracker's activation bytes at the end of the block's first run and after the call."""
    from minigrad.memory import track

    block, params, x, shift, _, _ = _build(s)
    figures = {}

    def measured(*args):
        out = block(*args)
        figures.setdefault("at the end of the block's first run", mem.by_category()["activation"])
        return out

    mem = track()
    with mem:
        kept = x * 1.0 if s["made_inside"] else x  # an input the tracker saw being made (an activation once kept)
        y = measured(kept, s["scale"], s["activation"], shift) if wrap is None else \
            wrap(measured, kept, s["scale"], s["activation"], shift)
        figures["after the checkpointed call returned"] = mem.by_category()["activation"]
        figures["output"] = _host(y)
    return figures


@probe
def run(submission, state, scenario):
    """(child) The scenario through the learner's ``checkpoint_reentrant``."""
    return _run(dict(scenario), submission.checkpoint_reentrant)


@probe
def tracked(submission, state, scenario):
    """(child) The tracker's figures of the learner's checkpointed call."""
    return _tracked(dict(scenario), submission.checkpoint_reentrant)


# --------------------------------------------------------------------------- scenarios


def _scenario(gen, batch=None, widths=None, p=0.0, shift=False, activation="tanh", scale=None, autocast=False,
              made_inside=False, batchnorm=False) -> dict:
    widths = widths or [int(gen.integers(1, 5)), int(gen.integers(1, 6)), int(gen.integers(1, 4))]
    batch = batch or int(gen.integers(1, 5))
    return {"seed": int(gen.integers(2**31)), "widths": widths, "batch": batch, "p": p, "shift": shift,
            "activation": activation, "scale": float(np.round(gen.uniform(0.25, 2.0), 3)) if scale is None else scale,
            "autocast": autocast, "made_inside": made_inside, "batchnorm": batchnorm,
            "upstream": np.round(gen.standard_normal((batch, widths[2])), 3).tolist()}


def _size(s: dict) -> int:
    n_in, hidden, n_out = s["widths"]
    extras = (10 if s["p"] else 0) + (20 if s["autocast"] else 0) + (40 if s.get("made_inside") else 0)
    return s["batch"] * (n_in + hidden + n_out) + extras


def _describe(s: dict) -> str:
    n_in, hidden, n_out = s["widths"]
    steps = [f"Linear({n_in}, {hidden})"]
    steps += ["+ shift (a tensor argument that needs no gradient)"] if s["shift"] else []
    steps += [f"BatchNorm1d({hidden}) in training mode"] if s.get("batchnorm") else []
    steps += [s["activation"]] + ([f"dropout(p={s['p']})"] if s["p"] else [])
    steps += ["* scale", f"Linear({hidden}, {n_out})"]
    where = " inside autocast('cpu', dtype=bfloat16)" if s["autocast"] else ""
    shift = "shift" if s["shift"] else "shift=None"
    return (f"block(x, scale={s['scale']!r}, activation={s['activation']!r}, {shift}) = {' -> '.join(steps)} on a "
            f"({s['batch']}, {n_in}) batch x requiring grad{where}, then sum(w * y).backward()")


NAMES = ["x.grad", "first Linear's weight.grad", "first Linear's bias.grad", "second Linear's weight.grad",
         "second Linear's bias.grad"]


def _same(mine, theirs, autocast: bool) -> bool:
    if mine is None or theirs is None:
        return mine is None and theirs is None
    mine, theirs = np.asarray(mine), np.asarray(theirs)
    tol = 1e-6 if autocast else 1e-12
    return mine.shape == theirs.shape and bool(np.allclose(mine, theirs, rtol=tol, atol=tol))


def _gap(mine, theirs) -> str:
    if mine is None:
        return "got None"
    mine, theirs = np.asarray(mine), np.asarray(theirs)
    if mine.shape != theirs.shape:
        return f"shape {mine.shape}, expected {theirs.shape}"
    return f"largest difference {float(np.max(np.abs(mine - theirs))):.3g}"


def _check_gradients(learner, scenarios, why: str) -> None:
    def attempt(s) -> None:
        mine, expected = learner.probe("run", s), _run(dict(s), None)
        assert _same(mine["y"], expected["y"], s["autocast"]), (
            f"the output differs from the block's own ({_gap(mine['y'], expected['y'])}): forward returns what "
            "the block computes")
        for name, g, e in zip(NAMES, mine["grads"], expected["grads"]):
            if g is None and e is not None:
                raise AssertionError(f"{name} is None after backward; without the checkpoint it is set: {why}")
            assert _same(g, e, s["autocast"]), f"{name} differs from the unchecked block's ({_gap(g, e)}): {why}"

    first_failure(smallest_first(scenarios, _size), attempt, _describe)


@exercise("10.1")
def test_gradients_equal_the_unchecked_blocks(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen, batch=1, widths=[1, 1, 1])]
    scenarios += [_scenario(gen, activation=str(gen.choice(ACTIVATIONS))) for _ in range(3)]
    _check_gradients(learner, scenarios, "backward runs the block again on leaves that require grad where the "
                                         "arguments did, with grad mode on, and sends the incoming gradient through "
                                         "it; the parameters get their .grad from that backward, the inputs' "
                                         "gradients are what it leaves in the leaves")


@exercise("10.1")
def test_plain_arguments_and_inputs_without_gradient_reach_the_recompute(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen, shift=True, activation=a, scale=float(gen.choice([0.5, 3.0]))) for a in ACTIVATIONS]
    scenarios.append(_scenario(gen, batch=1, widths=[2, 2, 1], activation="relu", scale=-1.5))
    _check_gradients(learner, scenarios, "the recompute gets every argument of the call again, in order: the "
                                         "numbers and strings as they were, the tensors (even those that need no "
                                         "gradient) as tensors")


@exercise("10.1")
def test_dropout_draws_the_same_mask_in_the_recompute(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen, p=p, batch=int(gen.integers(2, 6)), widths=[2, int(gen.integers(3, 7)), 2])
                 for p in (0.5, float(np.round(gen.uniform(0.2, 0.8), 2)))]
    _check_gradients(learner, scenarios, "the recompute starts from the random states of the first run, taken "
                                         "before the block draws its dropout mask, so it draws the same mask")

    def attempt(s) -> None:
        mine, expected = learner.probe("run", s), _run(dict(s), None)
        for name, g, e in zip(["a draw between forward and backward", "a draw after backward"], mine["draws"],
                              expected["draws"]):
            assert np.array_equal(g, e), (
                f"{name}: {np.round(g, 6).tolist()}, expected {np.round(e, 6).tolist()}: the generators outside "
                "the block must be where they would be without the checkpoint (rng_states.restored_rng puts them "
                "back after the recompute)")

    first_failure(smallest_first(scenarios, _size), attempt, _describe)


@exercise("10.1")
def test_the_recompute_runs_under_the_first_runs_autocast(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen, autocast=True, widths=[3, int(gen.integers(3, 6)), 2], batch=2)]
    _check_gradients(learner, scenarios, "backward runs outside the autocast region, so the recompute must enter "
                                         "the first run's autocast modes again (ctx.call.autocast()): the block's "
                                         "matmuls then run in bfloat16 again, as the first time")


@exercise("10.1")
def test_the_block_runs_once_in_forward_and_once_in_backward(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen), _scenario(gen, p=0.5, shift=True)]

    def attempt(s) -> None:
        forward, backward = learner.probe("run", s)["calls"]
        assert (forward, backward) == (1, 1), (
            f"the block ran {forward} time(s) during the checkpointed forward and {backward} time(s) during "
            "backward; expected once each: forward runs it once without a graph, backward recomputes it once")

    first_failure(smallest_first(scenarios, _size), attempt, _describe)


@exercise("10.1")
def test_forward_keeps_no_activation_of_the_block(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen, made_inside=inside, batch=int(gen.integers(1, 4)), p=p)
                 for inside, p in ((False, 0.0), (True, 0.0), (True, 0.5))]
    reference = _reference()

    def attempt(s) -> None:
        mine, expected, unchecked = learner.probe("tracked", s), _tracked(dict(s), reference), _tracked(dict(s), None)
        assert _same(mine["output"], expected["output"], False), "the output differs from the block's own"
        for when in ("at the end of the block's first run", "after the checkpointed call returned"):
            assert mine[when] == expected[when], (
                f"{when}, track() counts {mine[when]} bytes of activations; expected {expected[when]} (only the "
                f"block's inputs, and only those the tracker saw being made); without a checkpoint the block keeps "
                f"{unchecked[when]}: the first run must record no graph, and the node saves the inputs, not what "
                "the block computed")

    def described(s) -> str:
        made = "an input made inside track() (x * 1.0)" if s["made_inside"] else "an input made before track()"
        return f"{_describe(s)}; measured by track() around the call, {made}"

    first_failure(smallest_first(scenarios, _size), attempt, described)


@exercise("10.1")
def test_batchnorm_counts_each_batch_once(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen, batchnorm=True, batch=int(gen.integers(2, 5)), widths=[2, int(gen.integers(2, 5)), 2])
                 for _ in range(2)]
    _check_gradients(learner, scenarios, "a BatchNorm in the block normalises the recompute's batch as the first "
                                         "run did")

    def attempt(s) -> None:
        mine, expected = learner.probe("run", s)["batchnorm"], _run(dict(s), None)["batchnorm"]
        for name, g, e in zip(["running_mean", "running_var", "num_batches_tracked"], mine, expected):
            assert _same(g, e, False), (
                f"after one checkpointed forward and backward the BatchNorm's {name} is {np.round(g, 6).tolist()}, "
                f"without the checkpoint {np.round(e, 6).tolist()}: the recompute ran BatchNorm a second time and "
                "updated its running statistics again; put the modules' buffers back after the recompute "
                "(buffers_put_back)")

    first_failure(smallest_first(scenarios, _size), attempt, _describe)
