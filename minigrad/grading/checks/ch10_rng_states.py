"""Graded checks for chapter 10, exercise 10.2 (capture and restore the random states): ``exercises/10_rng_states.py``.

In the child the learner's file *is* ``minigrad.checkpoint.rng_states``, so
the library's ``checkpoint`` (and ``checkpoint_reentrant``) replay their blocks
with the learner's ``capture_rng`` and ``restored_rng``. A replay drawn here
(a seed, draws before the capture, a dropout mask, draws between the first
run and the replay, the replay itself, possibly raising, then draws after
it) runs in the child on the CPU or on the strict test device (a second
device type with its own generator, as a GPU has); the masks and every draw
come back and must equal, bit for bit, what the library's functions give
here on the same replay. Then a block with dropout is checkpointed with the
library's ``checkpoint`` in the child, and its gradients must equal, bit for
bit, the unchecked block's computed here. The smallest failing replay is
reported.
"""

from __future__ import annotations

import contextlib

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe


class _Raised(Exception):
    """What a replayed block raises in the scenarios that test putting the generators back after an error."""


def _reference():
    from minigrad.checkpoint import rng_states  # here, in the grader: the child's copy is the learner's

    return rng_states


@contextlib.contextmanager
def _strict_device():
    """The strict test device, registered for the length of the block (left as found)."""
    from minigrad.tensor.backend import registered_backends
    from minigrad.testing import strict_backend

    known = strict_backend.DEVICE_TYPE in registered_backends()
    device = strict_backend.register()
    try:
        yield device
    finally:
        if not known:
            strict_backend.unregister()


def _device(name: str):
    return _strict_device() if name == "strict" else contextlib.nullcontext("cpu")


def _host(t):
    return np.array(t.detach().cpu().numpy())


def _replay(module, s: dict) -> dict:
    """(either side) Scenario ``s`` with ``module``'s capture_rng and restored_rng: masks and draws, as host arrays."""
    import minigrad.tensor as mt
    from minigrad.nn import functional as F

    out = {}
    with _device(s["device"]) as device:
        mt.manual_seed(s["seed"])
        x = mt.ones(*s["shape"], device=device)
        mt.rand(s["before"])  # the CPU stream is somewhere in the middle when the block starts
        mt.rand(s["before"], device=device)
        states = module.capture_rng((x, s["scale"])) if s["preserve"] else None

        def block():
            masks = [_host(F.dropout(x, s["p"]))]  # on the argument's device
            if s["cpu_too"]:
                masks.append(_host(F.dropout(mt.ones(*s["shape"]), s["p"])))  # and on the CPU
            return masks

        out["first run"] = block()
        out["draws between"] = [_host(mt.rand(s["between"])), _host(mt.rand(s["between"], device=device))]
        try:
            with module.restored_rng(states):
                out["replay"] = block()
                if s["raises"]:
                    raise _Raised
        except _Raised:
            pass
        out["draws after"] = [_host(mt.rand(3)), _host(mt.rand(3, device=device))]
    return out


def _checkpointed(s: dict, checkpointed: bool) -> dict:
    """(either side) Gradients of a dropout block run through the library's ``checkpoint`` (or not at all)."""
    import minigrad.tensor as mt
    from minigrad import nn
    from minigrad.checkpoint import checkpoint
    from minigrad.checkpoint.reentrant import checkpoint_reentrant
    from minigrad.nn import functional as F

    with _device(s["device"]) as device:
        mt.manual_seed(s["seed"])
        layer = nn.Linear(s["width"], s["width"], dtype=mt.float64).to(device)
        x = mt.randn(s["batch"], s["width"], dtype=mt.float64, device=device, requires_grad=True)

        def block(x):
            return F.dropout(layer(x).tanh(), s["p"]) * 2.0

        wrap = {"checkpoint": checkpoint, "checkpoint_reentrant": checkpoint_reentrant}[s["via"]]
        y = wrap(block, x) if checkpointed else block(x)
        mt.rand(5, device=device)  # another block draws before backward
        y.sum().backward()
        return {"grads": [_host(x.grad), _host(layer.weight.grad), _host(layer.bias.grad)],
                "draw after": [_host(mt.rand(2)), _host(mt.rand(2, device=device))]}


@probe
def replay(submission, state, scenario):
    """(child) The replay with the learner's functions."""
    return _replay(submission, scenario)


@probe
def checkpointed(submission, state, scenario):
    """(child) The library's checkpoint on the learner's functions."""
    return _checkpointed(scenario, checkpointed=True)


# --------------------------------------------------------------------------- scenarios


def _scenario(gen, device="cpu", preserve=True, raises=False, cpu_too=False) -> dict:
    shape = [int(gen.integers(1, 4)), int(gen.integers(1, 5))]
    return {"seed": int(gen.integers(2**31)), "device": device, "shape": shape, "p": float(gen.choice([0.5, 0.3])),
            "before": int(gen.integers(0, 4)), "between": int(gen.integers(1, 4)), "scale": 0.5,
            "preserve": preserve, "raises": raises, "cpu_too": cpu_too}


def _describe(s: dict) -> str:
    device = "on the strict test device (a second device type, with its own generator)" if s["device"] == "strict" \
        else "on the CPU"
    masks = "a dropout mask of shape " + str(tuple(s["shape"])) + f" (p={s['p']}) {device}"
    if s["cpu_too"]:
        masks += " and one on the CPU"
    states = "states = capture_rng((x, 0.5)) for x " + device if s["preserve"] else "states = None"
    raised = ", and the replayed block raises" if s["raises"] else ""
    return (f"{states}; the block draws {masks}; {s['between']} draws on each generator; then "
            f"`with restored_rng(states):` runs the block again{raised}; 3 draws on each generator after")


def _size(s: dict) -> int:
    return int(np.prod(s["shape"])) * (2 if s["cpu_too"] else 1) + s["before"] + s["between"]


def _shown(key: str, arrays) -> str:
    """Masks as 1 (kept) and 0 (dropped), draws rounded."""
    if key in ("first run", "replay"):
        return " and ".join(str((np.asarray(a) != 0).astype(int).tolist()) for a in arrays)
    return " and ".join(str(np.round(np.asarray(a, dtype=np.float64), 6).tolist()) for a in arrays)


def _check(learner, scenarios, keys, why: str) -> None:
    ref = _reference()

    def attempt(s) -> None:
        mine, expected = learner.probe("replay", s), _replay(ref, s)
        for key in keys:
            theirs, ours = mine.get(key), expected[key]
            if key == "replay" and theirs is None:
                raise AssertionError("the replayed block never ran")
            assert len(theirs) == len(ours) and all(np.array_equal(a, b) for a, b in zip(theirs, ours)), (
                f"{key}: {_shown(key, theirs)}, expected {_shown(key, ours)}: {why}")

    first_failure(smallest_first(scenarios, _size), attempt, _describe)


@exercise("10.2")
def test_a_replay_from_the_captured_states_draws_the_same_mask(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen) for _ in range(3)]
    _check(learner, scenarios, ("first run", "replay"),
           "inside restored_rng(capture_rng(args)) the block starts from the states captured before its first run, "
           "so dropout keeps exactly the elements it kept the first time")


@exercise("10.2")
def test_generators_outside_are_left_where_they_were(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen), _scenario(gen, raises=True), _scenario(gen, cpu_too=True)]
    _check(learner, scenarios, ("draws after",),
           "after the with block every generator continues from where it was before it, as if the replay had never "
           "drawn anything, also when the block raised")


@exercise("10.2")
def test_every_device_of_a_tensor_argument_is_covered(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen, device="strict"), _scenario(gen, device="strict", cpu_too=True),
                 _scenario(gen, device="strict", raises=True)]
    _check(learner, scenarios, ("first run", "replay", "draws after"),
           "a tensor argument on another device draws from that device's generator: capture its state too (and the "
           "CPU's, always), and put both back afterwards")


@exercise("10.2")
def test_no_states_means_no_restore(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen, preserve=False), _scenario(gen, device="strict", preserve=False)]
    _check(learner, scenarios, ("replay", "draws after"),
           "restored_rng(None) (checkpoint(..., preserve_rng_state=False)) runs the block from the generators as "
           "they are, and its draws count: nothing is put back afterwards")


@exercise("10.2")
def test_a_checkpointed_dropout_block_gets_the_unchecked_gradients(learner, rng):
    gen = np_generator(rng)
    scenarios = [{"seed": int(gen.integers(2**31)), "device": device, "via": via, "p": 0.5,
                  "width": int(gen.integers(2, 5)), "batch": int(gen.integers(1, 4))}
                 for device, via in (("cpu", "checkpoint"), ("strict", "checkpoint"), ("cpu", "checkpoint_reentrant"))]
    names = ["x.grad", "weight.grad", "bias.grad"]

    def attempt(s) -> None:
        mine, expected = learner.probe("checkpointed", s), _checkpointed(s, checkpointed=False)
        for name, a, b in zip(names, mine["grads"], expected["grads"]):
            assert np.array_equal(a, b), (
                f"{name} differs from the unchecked block's (largest difference "
                f"{float(np.max(np.abs(np.asarray(a) - b))):.3g}): the recompute must draw the dropout mask of the "
                "first run")
        for which, a, b in zip(("the CPU's", "the device's"), mine["draw after"], expected["draw after"]):
            assert np.array_equal(a, b), (
                f"after backward {which} generator draws {_shown('draws', [a])}, expected {_shown('draws', [b])}: "
                "the recompute must leave the generators where backward found them")

    def described(s) -> str:
        where = "on the strict test device" if s["device"] == "strict" else "on the CPU"
        return (f"{s['via']}(block, x) with block = dropout(p={s['p']}) of tanh(Linear({s['width']}, {s['width']})(x)) "
                f"{where}, x of shape ({s['batch']}, {s['width']}); 5 draws on the device before backward")

    first_failure(smallest_first(scenarios, lambda s: s["width"] * s["batch"] + (s["device"] == "strict")),
                  attempt, described)
