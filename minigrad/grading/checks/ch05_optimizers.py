"""Graded checks for chapter 05, exercises 5.3 (Adam) and 5.4 (SGD with momentum): ``exercises/05_optimizers.py``.

Each check runs the learner's update rule for several steps on fresh random
parameters and gradients (float64 NumPy arrays, a new gradient every step) and
compares every step with the formulas written out by hand below, option by
option. It also checks the contract of the rules (in place, ``grad`` never
modified, dtype kept) and plugs the rule into ``minigrad.optim``'s optimizer
(in the sandboxed child the learner's file *is* ``minigrad.optim.functional``,
so ``minigrad.optim``'s optimizers run the learner's rule). 5.3 calls only
``adam_update`` and 5.4 only ``sgd_update``, so each exercise is graded on its
own. The rules run in the child on arrays chosen here; every step's arrays
come back and are compared here with the formulas.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.probing import exercise, probe


@probe
def adam_steps(submission, state, p, m, v, vmax, grads, options):
    """Run ``adam_update`` once per gradient on the same arrays; a snapshot of every array after each step."""
    snapshots = []
    for t, g in enumerate(grads, start=1):
        result = submission.adam_update(p, g, m, v, vmax, step=t, **options)
        snapshots.append({"result": result, "p": p.copy(), "m": m.copy(), "v": v.copy(), "g": g.copy(),
                          "vmax": None if vmax is None else vmax.copy()})
    return snapshots


@probe
def sgd_steps(submission, state, p, grads, options):
    """Run ``sgd_update`` with a new grad array on odd steps and the same array again on even ones."""
    snapshots, buf, g = [], None, None
    for t in range(1, 2 * len(grads) + 1):
        if t % 2:  # every other step reuses the same grad array: a buffer that aliases grad would change it
            g = grads[t // 2].copy()
        returned = submission.sgd_update(p, g, buf, **options)
        snapshots.append({
            "p": p.copy(), "g": g.copy(), "returned": None if returned is None else np.array(returned),
            "same_buffer": buf is None or returned is buf,
            "shares_grad": isinstance(returned, np.ndarray) and np.shares_memory(returned, g),
            "returned_dtype": str(returned.dtype) if isinstance(returned, np.ndarray) else None,
        })
        if options.get("momentum"):
            buf = returned
    return snapshots


@probe
def optimizer_steps(submission, state, kind, start, grads, options):
    """minigrad.optim's optimizer ``kind`` (running the learner's rule); the parameters after each step."""
    import minigrad.tensor as mt
    from minigrad import optim

    params = [mt.tensor(a.copy(), requires_grad=True) for a in start]
    opt = getattr(optim, kind)(params, **options)
    history = []
    for step in grads:
        for p, g in zip(params, step):
            p.grad = mt.tensor(g.copy())
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _shape(gen) -> tuple[int, ...]:
    return tuple(int(s) for s in gen.integers(1, 6, size=int(gen.integers(1, 3))))


def _close(actual, expected, what: str, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    if not np.allclose(actual, expected, rtol=rtol, atol=atol):
        worst = np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape) if actual.ndim else ()
        raise AssertionError(f"{what}: worst at {worst}: got {actual[worst]:.12g}, expected {expected[worst]:.12g}")


# ------------------------------------------------------------------ 5.3 Adam


class AdamByHand:
    """Adam / AdamW written straight from the paper's formulas, for one parameter."""

    def __init__(self, p, lr, beta1, beta2, eps, weight_decay=0.0, decoupled=False, amsgrad=False, maximize=False):
        self.p = np.array(p, dtype=np.float64)
        self.m = np.zeros_like(self.p)
        self.v = np.zeros_like(self.p)
        self.v_max = np.zeros_like(self.p)
        self.t = 0
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.decoupled, self.amsgrad, self.maximize = weight_decay, decoupled, amsgrad, maximize

    def step(self, g):
        self.t += 1
        g = -g if self.maximize else g
        if self.weight_decay and self.decoupled:
            self.p = self.p * (1 - self.lr * self.weight_decay)
        elif self.weight_decay:
            g = g + self.weight_decay * self.p
        self.m = self.beta1 * self.m + (1 - self.beta1) * g
        self.v = self.beta2 * self.v + (1 - self.beta2) * g * g
        self.v_max = np.maximum(self.v_max, self.v)
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = (self.v_max if self.amsgrad else self.v) / (1 - self.beta2**self.t)
        self.p = self.p - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


ADAM_CASES = [
    dict(),
    dict(eps=0.1),  # a large eps: catches eps in the wrong place (inside the sqrt, before the bias correction)
    dict(beta1=0.5, beta2=0.7),  # small betas: catches swapped betas and missing bias corrections
    dict(weight_decay=0.1),
    dict(weight_decay=0.1, decoupled=True),
    dict(amsgrad=True, beta2=0.6),
    dict(maximize=True, weight_decay=0.05),
]


def _adam_run(learner, gen, steps=6, **options):
    defaults = dict(lr=float(gen.uniform(1e-3, 1e-1)), beta1=0.9, beta2=0.999, eps=1e-8)
    hyper = {**defaults, **{k: v for k, v in options.items() if k in ("lr", "beta1", "beta2", "eps")}}
    flags = {k: v for k, v in options.items() if k not in hyper}
    shape = _shape(gen)
    p0 = gen.standard_normal(shape)
    ref = AdamByHand(p0, **hyper, **flags)
    grads = [gen.uniform(0.01, 10.0) * gen.standard_normal(shape) for _ in range(steps)]  # gradients of changing size
    zeros = np.zeros(shape)
    snapshots = learner.probe(
        "adam_steps", p0, zeros, zeros, zeros if flags.get("amsgrad") else None, grads,
        dict(lr=hyper["lr"], beta1=hyper["beta1"], beta2=hyper["beta2"], eps=hyper["eps"],
             weight_decay=flags.get("weight_decay", 0.0), decoupled_weight_decay=flags.get("decoupled", False),
             amsgrad=flags.get("amsgrad", False), maximize=flags.get("maximize", False)),
    )
    assert len(snapshots) == steps
    for t, (g, after) in enumerate(zip(grads, snapshots), start=1):
        ref.step(g)
        assert np.array_equal(after["g"], g), "adam_update changed grad; never modify the gradient"
        what = f"Adam {options or '(defaults)'} after step {t}"
        _close(after["p"], ref.p, f"{what}: param")
        _close(after["m"], ref.m, f"{what}: exp_avg (updated in place)")
        _close(after["v"], ref.v, f"{what}: exp_avg_sq (updated in place)")


def _step_by_step_checks(exercise_id: str, name: str, cases: list, run) -> None:
    """One check per hyperparameter case: three fresh runs of ``run`` compared with the formulas step by step."""
    for number, options in enumerate(cases):

        @exercise(exercise_id)
        def check(learner, rng, options=options):
            gen = _np(rng)
            for _ in range(3):
                run(learner, gen, **options)

        check.__name__ = f"test_{name}_matches_the_formulas_step_by_step[{'-'.join(options) or 'plain'}]"
        globals()[f"check_{name}_case_{number}"] = check


_step_by_step_checks("5.3", "adam", ADAM_CASES, _adam_run)


@exercise("5.3")
def test_adam_first_step_has_size_lr(learner, rng):
    """At t = 1 the bias corrections make m_hat = g and v_hat = g**2: every weight moves by lr, against its gradient."""
    gen = _np(rng)
    shape = _shape(gen)
    for scale in (1e-4, 1.0, 1e3):  # whatever the size of the gradient
        p0 = gen.standard_normal(shape)
        g = scale * gen.standard_normal(shape)
        zeros = np.zeros(shape)
        [after] = learner.probe("adam_steps", p0, zeros, zeros, None, [g], dict(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-20))
        _close(p0 - after["p"], 0.01 * np.sign(g), f"the first Adam step with gradients of size {scale:g}", rtol=1e-6, atol=1e-9)


@exercise("5.3")
def test_adam_updates_in_place_and_keeps_the_dtype(learner, rng):
    gen = _np(rng)
    shape = _shape(gen)
    p = gen.standard_normal(shape).astype(np.float32)
    m, v, vmax = (np.zeros(shape, np.float32) for _ in range(3))
    before = [p, m, v, vmax]
    g = gen.standard_normal(shape).astype(np.float32)
    [after] = learner.probe("adam_steps", p, m, v, vmax, [g], dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, amsgrad=True))
    assert after["result"] is None, "adam_update returns None: it changes its arrays in place"
    arrays = [after["p"], after["m"], after["v"], after["vmax"]]
    for name, a, b in zip(("param", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"), arrays, before):
        assert a.dtype == np.float32, f"{name} changed dtype to {a.dtype}"
        assert not np.array_equal(a, b), f"{name} was not updated in place (use x *= a, x += b, np.maximum(..., out=x))"


@exercise("5.3")
def test_adam_inside_the_optimizer(learner, rng):
    """The rule plugged into minigrad.optim.Adam/AdamW: several steps on a small model's parameters."""
    gen = _np(rng)
    for name, decoupled in (("Adam", False), ("AdamW", True)):
        shapes = [_shape(gen), _shape(gen)]
        start = [gen.standard_normal(s) for s in shapes]
        refs = [AdamByHand(a, 0.05, 0.8, 0.9, 1e-8, weight_decay=0.1, decoupled=decoupled) for a in start]
        grads = [[gen.standard_normal(s) for s in shapes] for _ in range(5)]
        history = learner.probe("optimizer_steps", name, start, grads, dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1))
        assert len(history) == 5
        for t, (step_grads, params) in enumerate(zip(grads, history), start=1):
            for p, ref, g in zip(params, refs, step_grads):
                ref.step(g)
                _close(p, ref.p, f"{name}(weight_decay=0.1) through the optimizer, step {t}")


# ------------------------------------------------------------------ 5.4 SGD


class SGDByHand:
    def __init__(self, p, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
        self.p = np.array(p, dtype=np.float64)
        self.b = None
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov, self.maximize = weight_decay, nesterov, maximize

    def step(self, g):
        g = -g if self.maximize else g
        g = g + self.weight_decay * self.p
        if self.momentum:
            self.b = g.copy() if self.b is None else self.momentum * self.b + (1 - self.dampening) * g
            g = g + self.momentum * self.b if self.nesterov else self.b
        self.p = self.p - self.lr * g


SGD_CASES = [
    dict(),
    dict(momentum=0.9),
    dict(momentum=0.5, dampening=0.3),
    dict(momentum=0.9, nesterov=True),
    dict(momentum=0.8, weight_decay=0.1),
    dict(weight_decay=0.2),
    dict(momentum=0.7, maximize=True),
]


def _sgd_run(learner, gen, steps=6, **options):
    lr = float(gen.uniform(1e-3, 0.5))
    shape = _shape(gen)
    p0 = gen.standard_normal(shape)
    ref = SGDByHand(p0, lr, **options)
    grads = [gen.standard_normal(shape) for _ in range(steps // 2)]
    snapshots = learner.probe("sgd_steps", p0, grads, dict(lr=lr, **options))
    assert len(snapshots) == steps
    for t, after in enumerate(snapshots, start=1):
        g = grads[(t - 1) // 2]
        ref.step(g)
        what = f"SGD {options or '(plain)'} after step {t}"
        assert np.array_equal(after["g"], g), f"{what}: sgd_update changed grad (the first momentum buffer must be a copy)"
        _close(after["p"], ref.p, f"{what}: param")
        if options.get("momentum"):
            assert after["returned"] is not None, f"{what}: return the momentum buffer"
            _close(after["returned"], ref.b, f"{what}: the returned momentum buffer")
            assert after["same_buffer"] is True, f"{what}: update the momentum buffer in place and return the same array"
        else:
            assert after["returned"] is None, f"{what}: without momentum there is no buffer: return None"


_step_by_step_checks("5.4", "sgd", SGD_CASES, _sgd_run)


@exercise("5.4")
def test_sgd_updates_in_place_and_keeps_the_dtype(learner, rng):
    gen = _np(rng)
    shape = _shape(gen)
    p = gen.standard_normal(shape).astype(np.float32)
    g = gen.standard_normal(shape).astype(np.float32)
    after = learner.probe("sgd_steps", p, [g], dict(lr=0.1, momentum=0.9))[0]
    assert after["p"].dtype == np.float32 and not np.array_equal(after["p"], p), "param must be updated in place (param -= ...)"
    buf = after["returned"]
    assert buf is not None and after["returned_dtype"] == "float32" and buf.shape == shape
    assert after["shares_grad"] is False, "the first momentum buffer must be a copy of the gradient, not the gradient itself"


@exercise("5.4")
def test_momentum_builds_speed_on_a_constant_gradient(learner, rng):
    """With a constant gradient g the buffer tends to g / (1 - momentum): momentum 0.9 gives steps ten times larger."""
    gen = _np(rng)
    g = gen.standard_normal(4)
    snapshots = learner.probe("sgd_steps", np.zeros(4), [g] * 150, dict(lr=0.01, momentum=0.9))
    previous, p = snapshots[-2]["p"], snapshots[-1]["p"]
    _close(previous - p, 0.01 * g / (1 - 0.9), "the step after 300 steps of momentum 0.9", rtol=1e-6, atol=1e-9)


@exercise("5.4")
def test_sgd_inside_the_optimizer(learner, rng):
    gen = _np(rng)
    shapes = [_shape(gen), _shape(gen)]
    start = [gen.standard_normal(s) for s in shapes]
    refs = [SGDByHand(a, 0.1, momentum=0.9, nesterov=True, weight_decay=0.01) for a in start]
    grads = [[gen.standard_normal(s) for s in shapes] for _ in range(5)]
    history = learner.probe("optimizer_steps", "SGD", start, grads, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01))
    assert len(history) == 5
    for t, (step_grads, params) in enumerate(zip(grads, history), start=1):
        for p, ref, g in zip(params, refs, step_grads):
            ref.step(g)
            _close(p, ref.p, f"SGD(momentum=0.9, nesterov=True) through the optimizer, step {t}")
