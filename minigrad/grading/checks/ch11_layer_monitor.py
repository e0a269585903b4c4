"""Graded checks for chapter 11, exercise 11.3 (the layer monitor's hooks): ``exercises/11_layer_monitor.py``.

In the child the learner's file *is* ``minigrad.training.layer_monitor``. A
run drawn here (a seed, layer widths, a batch size, 1 to 3 steps, gradient
accumulation or not, the optimizer's step hook or ``record_gradients()`` by
hand, a frozen layer or not) trains a small float64 network in the child
under the learner's ``LayerMonitor``; the same run is made here with the
library's, and the records must agree. The network is
``Linear, ReLU, Sequential(Linear, Tanh), Linear (weights 1e-12: outputs tiny
but never 0), ReLU, Linear``, with a bias of -100 on some units of the first
layer (dead ReLUs: exact zeros); after each step one forward runs in eval
mode (it must not be recorded).

Tolerances: both sides compute from the same float64 arrays (the network,
its inputs and its updates are the library's on both sides, bit for bit);
only the order of the sums may differ. An output here has ``n <= 64``
elements (a batch of at most 8, at most 8 units), and a float64 sum of
``n`` terms in any order is within ``n * 2**-53`` of ``n * max|x|``
relative, below ``1e-13 * max|x|`` for the mean and the std: they may
differ by ``1e-9 * max|x|`` (far above any order's rounding, far below any
wrong formula: a sample std differs by about ``1 / (2n)`` relative, at
least ``7e-3`` here). A gradient norm sums at most a few hundred squares:
``1e-9`` relative. ``max|x|`` is one of the elements and the share of
zeros a count over a size: both exact.
The smallest failing run is reported.
"""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe

STAT_NAMES = ("mean", "std", "zero_fraction", "max_abs")


class _Raised(Exception):
    """What the block raises in the run that checks the hooks are removed on an error."""


def _reference():
    from minigrad.training import layer_monitor  # here, in the grader: the child's copy is the learner's

    return layer_monitor


def _model(s: dict):
    import minigrad.tensor as mt
    from minigrad import nn

    mt.manual_seed(s["seed"])
    d_in, h1, h2, h3 = s["widths"]
    model = nn.Sequential(nn.Linear(d_in, h1), nn.ReLU(), nn.Sequential(nn.Linear(h1, h2), nn.Tanh()),
                          nn.Linear(h2, h3), nn.ReLU(), nn.Linear(h3, 3)).to(dtype=mt.float64)
    with mt.no_grad():
        bias = model[0].bias.detach().numpy().copy()
        bias[s["dead"]] = -100.0  # inputs are below 1 and weights below 1/sqrt(d_in): these units never fire
        model[0].bias.copy_(mt.tensor(bias))
        model[3].weight.copy_(model[3].weight * 1e-12)
        model[3].bias.copy_(model[3].bias * 1e-12)
    if s["frozen"]:
        for p in model[2][0].parameters():
            p.requires_grad_(False)
    return model


def _hooks(model, optimizer) -> int:
    """Every module hook on the model (its own, and the global ones) and every step hook of the optimizer."""
    from minigrad.nn import module_hooks

    own = sum(len(m._hooks.forward) + len(m._hooks.forward_pre) + len(m._hooks.backward)
              for m in model.modules() if m._hooks is not None)
    steps = sum(map(len, optimizer._step_hooks)) if optimizer._step_hooks is not None else 0
    return own + len(module_hooks._forward) + len(module_hooks._forward_pre) + steps


def _run(module, s: dict) -> dict:
    """(either side) Scenario ``s`` under ``module``'s LayerMonitor: its records, and what it left behind."""
    import minigrad.tensor as mt
    from minigrad import optim

    model = _model(s)
    optimizer = optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
    gen = np.random.default_rng(s["seed"])
    d_in = s["widths"][0]
    batches = [[mt.tensor(gen.uniform(-1, 1, size=(s["batch"], d_in))) for _ in range(s["accumulate"])]
               for _ in range(s["steps"])]
    probe_eval = mt.tensor(gen.uniform(-1, 1, size=(2, d_in)))
    watched: list = []  # weak references to every output and its array: the monitor must keep none alive

    def watch(m, args, output) -> None:
        watched.extend((weakref.ref(output), weakref.ref(output._data)))

    watchers = [m.register_forward_hook(watch) for m in model.modules()]
    monitor = module.LayerMonitor(model, optimizer if s["hooked"] else None)
    with monitor:
        for batch in batches:
            optimizer.zero_grad()
            for x in batch:
                ((model(x) ** 2).mean() * (1.0 / len(batch))).backward()
            if not s["hooked"]:
                monitor.record_gradients()
            optimizer.step()
            model.eval()
            with mt.no_grad():
                model(probe_eval)
            model.train()
        gc.collect()
        alive = sum(ref() is not None for ref in watched)  # while the monitor is still active
    for handle in watchers:
        handle.remove()
    out = {
        "grad_norms": {str(k): [None if v is None else float(v) for v in vs] for k, vs in monitor.grad_norms.items()},
        "activations": {str(k): [[int(r.step), *(float(getattr(r, f)) for f in STAT_NAMES)] for r in rs]
                        for k, rs in monitor.activations.items()},
        "hooks_after_exit": _hooks(model, optimizer),
        "alive": alive,
    }
    before = sum(len(rs) for rs in monitor.activations.values())
    model(probe_eval)
    out["recorded_after_exit"] = sum(len(rs) for rs in monitor.activations.values()) - before
    try:
        with module.LayerMonitor(model, optimizer):
            model(probe_eval)
            raise _Raised
    except _Raised:
        pass
    out["hooks_after_error"] = _hooks(model, optimizer)
    return out


@probe
def run(submission, state, scenario):
    """(child) The scenario under the learner's LayerMonitor."""
    return _run(submission, scenario)


# --------------------------------------------------------------------------- scenarios


def _scenario(gen, hooked=True, accumulate=1, frozen=False) -> dict:
    widths = [int(gen.integers(2, 6)), int(gen.integers(3, 9)), int(gen.integers(2, 7)), int(gen.integers(3, 8))]
    dead = sorted(int(i) for i in gen.choice(widths[1], size=int(gen.integers(1, widths[1])), replace=False))
    return {"seed": int(gen.integers(2**31)), "widths": widths, "dead": dead, "batch": int(gen.integers(2, 9)),
            "steps": int(gen.integers(1, 4)), "accumulate": accumulate, "hooked": hooked, "frozen": frozen}


def _describe(s: dict) -> str:
    d_in, h1, h2, h3 = s["widths"]
    how = "the optimizer given (its step pre-hook records the norms)" if s["hooked"] else \
        "no optimizer given (record_gradients() called after backward)"
    frozen = ", layer '2.0' frozen (requires_grad False)" if s["frozen"] else ""
    return (f"Sequential(Linear({d_in}, {h1}), ReLU(), Sequential(Linear({h1}, {h2}), Tanh()), Linear({h2}, {h3}) "
            f"scaled by 1e-12, ReLU(), Linear({h3}, 3)) in float64, units {s['dead']} of layer '0' dead{frozen}; "
            f"{s['steps']} step(s) of {s['accumulate']} batch(es) of {s['batch']}, {how}, one eval forward after "
            f"each step")


def _size(s: dict) -> int:
    return s["steps"] * s["accumulate"] * s["batch"] * sum(s["widths"])


def _check(learner, scenarios, compare) -> None:
    ref = _reference()

    def attempt(s) -> None:
        compare(learner.probe("run", s), _run(ref, s))

    first_failure(smallest_first(scenarios, _size), attempt, _describe)


def _layer(name: str) -> str:
    return "the model ('')" if name == "" else repr(name)


def _same_activations(mine: dict, expected: dict) -> None:
    assert isinstance(mine.get("activations"), dict), "activations: not a dict of records per module"
    assert sorted(mine["activations"]) == sorted(expected["activations"]), (
        f"activations are recorded for modules {sorted(mine['activations'])}, expected {sorted(expected['activations'])} "
        f"(every module of named_modules, by its name)")
    for name, records in expected["activations"].items():
        got = mine["activations"][name]
        assert len(got) == len(records), (
            f"{_layer(name)}: {len(got)} activation record(s), expected {len(records)}: one per forward in training "
            f"mode (the eval forwards are not recorded)")
        for k, (theirs, ours) in enumerate(zip(got, records)):
            scale = ours[4]
            assert theirs[0] == ours[0], f"{_layer(name)}, record {k + 1}: step {theirs[0]}, expected {ours[0]}"
            for i, (field, tol) in enumerate(zip(STAT_NAMES, (1e-9 * scale, 1e-9 * scale, 0.0, 0.0)), start=1):
                assert abs(theirs[i] - ours[i]) <= tol, (
                    f"{_layer(name)}, record {k + 1}: {field} {theirs[i]!r}, expected {ours[i]!r} (statistics of the "
                    f"module's output, in float64: population std, exact zeros only, largest absolute value)")


@exercise("11.3")
def test_activation_statistics_of_every_module_output(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen), _scenario(gen, accumulate=2), _scenario(gen, hooked=False)]
    _check(learner, scenarios, lambda mine, expected: _same_activations(mine, expected))


@exercise("11.3")
def test_zeros_are_counted_exactly(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen) for _ in range(2)]

    def compare(mine, expected) -> None:
        for name in ("1", "3", "4"):  # dead units' exact zeros; outputs near 1e-12 that are not 0; both after a ReLU
            got, ours = mine["activations"].get(name, []), expected["activations"][name]
            assert [r[3] for r in got] == [r[3] for r in ours], (
                f"{_layer(name)}: share of zeros {[r[3] for r in got]}, expected {[r[3] for r in ours]}: a zero is an "
                f"element exactly 0 (a dead ReLU's output), not one near 0; layer '3' outputs values near 1e-12")

    _check(learner, scenarios, compare)


@exercise("11.3")
def test_gradient_norm_of_each_layers_own_parameters(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen), _scenario(gen, hooked=False, accumulate=2), _scenario(gen, frozen=True)]

    def compare(mine, expected) -> None:
        norms = mine.get("grad_norms")
        assert isinstance(norms, dict) and sorted(norms) == sorted(expected["grad_norms"]), (
            f"gradient norms are recorded for {sorted(norms) if isinstance(norms, dict) else norms}, expected "
            f"{sorted(expected['grad_norms'])} (the modules that own parameters themselves)")
        for name, ours in expected["grad_norms"].items():
            theirs = norms[name]
            assert len(theirs) == len(ours), f"{_layer(name)}: {len(theirs)} norm(s), expected one per step ({len(ours)})"
            for k, (a, b) in enumerate(zip(theirs, ours)):
                ok = a is None if b is None else (a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0))
                assert ok, (f"{_layer(name)}, step {k + 1}: gradient norm {a!r}, expected {b!r} (sqrt of the sum of "
                            f"the squares of this layer's own parameters' gradients; None when none has a gradient)")

    _check(learner, scenarios, compare)


@exercise("11.3")
def test_every_hook_is_removed_on_exit_and_on_an_error(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen), _scenario(gen, hooked=False)]

    def compare(mine, expected) -> None:
        assert mine["hooks_after_exit"] == expected["hooks_after_exit"] == 0, (
            f"{mine['hooks_after_exit']} hook(s) are still on the model or the optimizer after the with block: remove "
            f"every handle on exit")
        assert mine["recorded_after_exit"] == 0, (
            f"{mine['recorded_after_exit']} activation record(s) were added by a forward after the with block")
        assert mine["hooks_after_error"] == 0, (
            f"{mine['hooks_after_error']} hook(s) are left when the with block raised: exit removes them in every case")

    _check(learner, scenarios, compare)


@exercise("11.3")
def test_no_output_is_kept_alive(learner, rng):
    gen = np_generator(rng)
    scenarios = [_scenario(gen), _scenario(gen, accumulate=2)]

    def compare(mine, expected) -> None:
        assert expected["alive"] == 0
        assert mine["alive"] == 0, (
            f"{mine['alive']} module output(s) (tensors or their arrays) are still alive after the steps: the hook "
            f"records four floats and keeps no reference to the output (activation memory would be held)")
        _same_activations(mine, expected)

    _check(learner, scenarios, compare)
