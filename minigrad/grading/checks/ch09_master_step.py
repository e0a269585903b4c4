"""Graded checks for chapter 09, exercise 9.3 (the master-weight step): ``exercises/09_master_step.py``.

In the child, a float16 or bfloat16 model and its float32 masters (holding
bits the model cannot) go through a few steps of the learner's
``master_weight_step`` with 16-bit gradients of a scaled loss chosen here:
gradients the scale rescued from underflow, an inf or a NaN in a later
weight, a weight without a gradient, a clipping hook. After every step the
return value, the masters, their gradients, the model (same objects, its
dtype, its bits), what the clip hook and the optimizer saw, and the model's
own gradients must equal what the library's step gives here on the same
inputs. The smallest failing scenario is reported.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe


def _reference():
    from minigrad.amp import master_step  # here, in the grader: the child's copy is the learner's

    return master_step


def _host(t) -> list:
    return None if t is None else np.asarray(t.detach().to(dtype="float32").numpy(), dtype=np.float32).tolist()


def _norm(tensors) -> float:
    grads = [np.asarray(t.grad.detach().to(dtype="float32").numpy(), np.float64) for t in tensors if t.grad is not None]
    return float(np.sqrt(sum(float((g * g).sum()) for g in grads)))


def _run(fn, scenario: dict) -> list:
    """(either side) ``scenario``'s steps through ``fn`` (a ``master_weight_step``): the state after each."""
    import minigrad.tensor as mt
    from minigrad import nn, optim

    dtype = scenario["dtype"]
    model = [nn.Parameter(mt.tensor(w, dtype=dtype)) for w in scenario["weights"]]
    masters = [nn.Parameter(m.detach().to(dtype="float32", copy=True) + mt.tensor(o, dtype="float32"))
               for m, o in zip(model, scenario["offsets"])]
    optimizer = optim.SGD(masters, lr=scenario["lr"])
    states = []
    for grads, inv_scale in scenario["steps"]:
        seen = {"step calls": 0, "master gradients at the step": None, "gradient norm the clip hook saw": None}

        def step():
            seen["step calls"] += 1
            seen["master gradients at the step"] = [_host(m.grad) for m in masters]
            optimizer.step()

        def clip(params):
            seen["gradient norm the clip hook saw"] = round(_norm(params), 4)
            nn.utils.clip_grad_norm_(params, scenario["clip"])

        for m, g in zip(model, grads):
            m.grad = None if g is None else mt.tensor(g, dtype=dtype)
        before = [m._version_counter.value for m in model]
        skipped = fn(list(model), list(masters), inv_scale, step, clip if scenario["clip"] is not None else None)
        states.append({
            "returned": skipped if type(skipped) is bool else f"{skipped!r} (not True or False)",
            "masters": [_host(m) for m in masters],
            "master gradients": [_host(m.grad) for m in masters],
            "model weights": [_host(m) for m in model],
            "model dtypes": [str(m.dtype) for m in model],
            "model weights changed in place": [m._version_counter.value != b for m, b in zip(model, before)],
            "model gradients": [_host(m.grad) for m in model],
            **seen,
        })
    return states


@probe
def run_steps(submission, state, scenario):
    """(child) The scenario through the learner's ``master_weight_step``."""
    return _run(submission.master_weight_step, scenario)


def _same(a, b) -> bool:
    """Equal, with NaN equal to NaN (and a bool never equal to a number)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is float and type(b) is float and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


def _describe(s: dict) -> str:
    shapes = ", ".join(str(tuple(np.shape(w))) for w in s["weights"])
    steps = []
    for grads, inv_scale in s["steps"]:
        bad = [f"{'NaN' if np.isnan(g).any() else 'inf'} in weight {k}" for k, g in enumerate(grads)
               if g is not None and not np.isfinite(g).all()]
        none = [f"no gradient for weight {k}" for k, g in enumerate(grads) if g is None]
        steps.append(f"inv_scale={inv_scale!r}" + "".join(f", {x}" for x in bad + none))
    clip = f", clip hook clip_grad_norm_(masters, {s['clip']})" if s["clip"] is not None else ""
    return (f"a {s['dtype']} model with weights of shapes {shapes}, SGD(lr={s['lr']}) on its masters{clip}; "
            f"steps: {'; '.join(steps)}")


def _check(learner, scenarios, why: str) -> None:
    wire = [{**s, "weights": [np.asarray(w).tolist() for w in s["weights"]],
             "offsets": [np.asarray(o).tolist() for o in s["offsets"]],
             "steps": [[[None if g is None else np.asarray(g).tolist() for g in grads], inv] for grads, inv in s["steps"]]}
            for s in scenarios]
    answers = {id(s): learner.probe("run_steps", w) for s, w in zip(scenarios, wire)}
    plain = {id(s): w for s, w in zip(scenarios, wire)}
    ref = _reference()

    def attempt(s) -> None:
        expected = _run(ref.master_weight_step, plain[id(s)])
        for k, (mine, theirs) in enumerate(zip(answers[id(s)], expected)):
            for key, value in theirs.items():
                if key == "master gradients" and theirs["returned"] is True:
                    continue  # a skipped step may leave the masters' gradients as it likes: the optimizer never reads them
                assert _same(mine.get(key), value), (
                    f"after step {k + 1}: {key}: {mine.get(key)!r}, expected {value!r}: {why}")

    first_failure(smallest_first(scenarios, lambda s: sum(np.size(w) for w in s["weights"]) * len(s["steps"])),
                  attempt, _describe)


def _scenario(gen, dtype: str, shapes, steps, clip=None, lr=0.25) -> dict:
    weights = [np.round(gen.uniform(-2, 2, shape), 3) for shape in shapes]
    offsets = [gen.uniform(-1e-4, 1e-4, shape) for shape in shapes]  # bits of the masters the 16-bit model lacks
    return {"dtype": dtype, "weights": weights, "offsets": offsets, "steps": steps, "clip": clip, "lr": lr}


def _grads(gen, shapes, scale: float, tiny: bool = True) -> list:
    """Gradients of a loss scaled by ``scale``: true values down to 1e-7 (below float16's range), scaled up."""
    out = []
    for shape in shapes:
        true = gen.standard_normal(shape) * np.where(gen.random(shape) < 0.4, 1e-7, 1e-2) if tiny else gen.standard_normal(shape)
        out.append(true * scale)
    return out


@exercise("9.3")
def test_a_clean_step_updates_the_masters_and_copies_them_down(learner, rng):
    gen = np_generator(rng)
    scenarios = []
    for shapes in ([(2,)], [(3,), (2, 2)], [(int(gen.integers(3, 7)),), (2, 3), (4,)]):
        scale = 2.0 ** int(gen.integers(10, 17))
        scenarios.append(_scenario(gen, "float16", shapes, [(_grads(gen, shapes, scale), 1 / scale)]))
    _check(learner, scenarios, "each master's gradient is its weight's gradient in float32 times inv_scale (unscaled "
                               "in float32: in 16 bits the small gradients underflow), then one optimizer step of the "
                               "masters, then each model weight becomes its master rounded to its dtype, in place")


@exercise("9.3")
def test_an_inf_or_nan_skips_the_whole_step(learner, rng):
    gen = np_generator(rng)
    scenarios = []
    for bad, where in ((np.inf, 1), (np.nan, 0), (-np.inf, 2)):
        shapes = [(2,), (3,), (2,)]
        scale = 2.0**16
        clean = _grads(gen, shapes, scale)
        broken = _grads(gen, shapes, scale)
        broken[where] = broken[where].copy()
        broken[where].flat[int(gen.integers(0, broken[where].size))] = bad
        scenarios.append(_scenario(gen, "float16", shapes, [(broken, 1 / scale), (clean, 1 / scale)]))
    _check(learner, scenarios, "an inf or NaN in any weight's gradient skips the step: it returns True, and neither "
                               "the masters nor the model change (the optimizer does not run); the next clean step "
                               "runs as usual")


@exercise("9.3")
def test_clipping_sees_the_true_gradients(learner, rng):
    gen = np_generator(rng)
    scenarios = []
    for shapes in ([(3,)], [(2,), (2, 2)]):
        scale = 2.0 ** int(gen.integers(8, 13))  # gradients of order 1 times at most 4096: finite in float16
        grads = _grads(gen, shapes, scale, tiny=False)
        scenarios.append(_scenario(gen, "float16", shapes, [(grads, 1 / scale)], clip=0.5))
    _check(learner, scenarios, "the clip hook runs on the masters after unscaling (it clips the true gradients, whose "
                               "norm does not depend on the loss scale) and before the optimizer step")


@exercise("9.3")
def test_bfloat16_models_and_weights_without_gradients(learner, rng):
    gen = np_generator(rng)
    shapes = [(3,), (2,), (2, 2)]
    grads = _grads(gen, shapes, 1.0, tiny=False)
    grads[1] = None
    more = _grads(gen, shapes, 1.0, tiny=False)
    scenarios = [_scenario(gen, "bfloat16", shapes, [(more, 1.0), (grads, 1.0)]),
                 _scenario(gen, "float16", shapes, [(grads, 2.0**-8), (more, 2.0**-8), (grads, 2.0**-8)])]
    _check(learner, scenarios, "a weight without a gradient gives its master no gradient (None) and takes no part in "
                               "the check; a bfloat16 model needs no loss scale (inv_scale 1.0) but still gets float32 "
                               "masters, rounded down to bfloat16 after the step")
