"""Optimizers against hand-written reference updates, and against torch.optim step by step."""

import warnings

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import optim
import minigrad.memory as mm

SHAPES = [(4, 3), (3,), ()]
STEPS = 6


def make_problem(seed, dtype=np.float64, shapes=SHAPES, steps=STEPS):
    """Initial parameter values and a sequence of gradients for each step."""
    rng = np.random.default_rng(seed)
    init = [rng.normal(size=s).astype(dtype) for s in shapes]
    grads = [[rng.normal(size=s).astype(dtype) for s in shapes] for _ in range(steps)]
    return init, grads


def run_minigrad(cls, kwargs, init, grads):
    params = [mt.tensor(x, requires_grad=True) for x in init]
    opt = cls(params, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = mt.tensor(g)
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history


# ----------------------------------------------------------------------------- hand-written references
# Textbook forms, one step at a time, written independently of minigrad.optim.functional.


def ref_sgd(init, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    params = [x.copy() for x in init]
    bufs = [None] * len(params)
    history = []
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            d = -g if maximize else g.copy()
            d = d + weight_decay * params[i]
            if momentum:
                bufs[i] = d.copy() if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * d
                d = d + momentum * bufs[i] if nesterov else bufs[i]
            params[i] = params[i] - lr * d
        history.append([p.copy() for p in params])
    return history


def ref_adam(init, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
             maximize=False, decoupled=False):
    b1, b2 = betas
    params = [x.copy() for x in init]
    m = [np.zeros_like(x) for x in init]
    v = [np.zeros_like(x) for x in init]
    vmax = [np.zeros_like(x) for x in init]
    history = []
    for t, step_grads in enumerate(grads, start=1):
        for i, g in enumerate(step_grads):
            g = -g if maximize else g
            if decoupled:
                params[i] = params[i] - lr * weight_decay * params[i]
            else:
                g = g + weight_decay * params[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g**2
            vmax[i] = np.maximum(vmax[i], v[i])
            m_hat = m[i] / (1 - b1**t)
            v_hat = (vmax[i] if amsgrad else v[i]) / (1 - b2**t)
            params[i] = params[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
        history.append([p.copy() for p in params])
    return history


def ref_rmsprop(init, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                maximize=False):
    params = [x.copy() for x in init]
    sq = [np.zeros_like(x) for x in init]
    ga = [np.zeros_like(x) for x in init]
    buf = [np.zeros_like(x) for x in init]
    history = []
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            g = (-g if maximize else g) + weight_decay * params[i]
            sq[i] = alpha * sq[i] + (1 - alpha) * g * g
            if centered:
                ga[i] = alpha * ga[i] + (1 - alpha) * g
                s = np.sqrt(sq[i] - ga[i] ** 2) + eps
            else:
                s = np.sqrt(sq[i]) + eps
            if momentum > 0:
                buf[i] = momentum * buf[i] + g / s
                params[i] = params[i] - lr * buf[i]
            else:
                params[i] = params[i] - lr * g / s
        history.append([p.copy() for p in params])
    return history


CASES = [
    # (minigrad class, torch class name, reference, kwargs)
    (optim.SGD, "SGD", ref_sgd, dict(lr=0.1)),
    (optim.SGD, "SGD", ref_sgd, dict(lr=0.05, momentum=0.9)),
    (optim.SGD, "SGD", ref_sgd, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (optim.SGD, "SGD", ref_sgd, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    (optim.SGD, "SGD", ref_sgd, dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    (optim.SGD, "SGD", ref_sgd, dict(lr=0.2, weight_decay=0.5, maximize=True)),
    (optim.Adam, "Adam", ref_adam, dict()),
    (optim.Adam, "Adam", ref_adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    (optim.Adam, "Adam", ref_adam, dict(lr=0.01, weight_decay=0.1)),
    (optim.Adam, "Adam", ref_adam, dict(lr=0.01, amsgrad=True)),
    (optim.Adam, "Adam", ref_adam, dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True)),
    (optim.Adam, "Adam", ref_adam, dict(lr=0.01, betas=(0.0, 0.0))),
    (optim.AdamW, "AdamW", ref_adam, dict(lr=0.01)),
    (optim.AdamW, "AdamW", ref_adam, dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    (optim.AdamW, "AdamW", ref_adam, dict(lr=0.01, weight_decay=0.1, maximize=True)),
    (optim.RMSprop, "RMSprop", ref_rmsprop, dict()),
    (optim.RMSprop, "RMSprop", ref_rmsprop, dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    (optim.RMSprop, "RMSprop", ref_rmsprop, dict(lr=0.01, momentum=0.9)),
    (optim.RMSprop, "RMSprop", ref_rmsprop, dict(lr=0.01, centered=True)),
    (optim.RMSprop, "RMSprop", ref_rmsprop, dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.01, maximize=True)),
]
IDS = [f"{c[1]}-{'-'.join(f'{k}={v}' for k, v in c[3].items()) or 'defaults'}" for c in CASES]


def _ref_kwargs(cls, kwargs):
    if cls is optim.AdamW:
        return dict(kwargs, weight_decay=kwargs.get("weight_decay", 1e-2), decoupled=True)
    return kwargs


@pytest.mark.parametrize("cls, torch_name, ref, kwargs", CASES, ids=IDS)
def test_matches_reference_formula(cls, torch_name, ref, kwargs):
    init, grads = make_problem(0)
    got = run_minigrad(cls, kwargs, init, grads)
    want = ref(init, grads, **_ref_kwargs(cls, kwargs))
    for step, (g, w) in enumerate(zip(got, want)):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"step {step + 1}")


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.parametrize("cls, torch_name, ref, kwargs", CASES, ids=IDS)
def test_matches_torch_step_by_step(cls, torch_name, ref, kwargs, dtype, rtol):
    torch = pytest.importorskip("torch")
    init, grads = make_problem(1, dtype)
    got = run_minigrad(cls, kwargs, init, grads)
    tparams = [torch.tensor(x, requires_grad=True) for x in init]
    topt = getattr(torch.optim, torch_name)(tparams, foreach=False, **kwargs)
    for step, step_grads in enumerate(grads):
        for p, g in zip(tparams, step_grads):
            p.grad = torch.tensor(g)
        topt.step()
        for i, (mine, theirs) in enumerate(zip(got[step], tparams)):
            assert mine.dtype == theirs.detach().numpy().dtype
            np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=rtol, atol=rtol * 1e-2,
                                       err_msg=f"step {step + 1}, parameter {i}")


def test_param_groups_with_their_own_hyperparameters_match_torch():
    torch = pytest.importorskip("torch")
    init, grads = make_problem(2)
    params = [mt.tensor(x, requires_grad=True) for x in init]
    tparams = [torch.tensor(x, requires_grad=True) for x in init]

    def groups(ps):
        return [{"params": ps[:1], "lr": 0.1, "momentum": 0.5}, {"params": ps[1:], "nesterov": True, "weight_decay": 0.1}]

    opt = optim.SGD(groups(params), lr=0.01, momentum=0.9)
    topt = torch.optim.SGD(groups(tparams), lr=0.01, momentum=0.9, foreach=False)
    assert opt.param_groups[0]["momentum"] == 0.5 and opt.param_groups[1]["lr"] == 0.01
    for step_grads in grads:
        for p, q, g in zip(params, tparams, step_grads):
            p.grad, q.grad = mt.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    for p, q in zip(params, tparams):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop])
def test_trains_a_real_model_through_autograd(cls):
    """End to end: backward fills .grad, step lowers the loss of least squares."""
    rng = np.random.default_rng(3)
    X = mt.tensor(rng.normal(size=(64, 5)))
    w_true = rng.normal(size=(5, 1))
    Y = mt.tensor(X.numpy() @ w_true)
    W = mt.zeros(5, 1, dtype=mt.float64, requires_grad=True)
    opt = cls([W], lr=0.05, **({"momentum": 0.9} if cls is optim.SGD else {}))
    losses = []
    for _ in range(150):
        opt.zero_grad()
        loss = ((X @ W - Y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-2 * losses[0]


def test_parameters_without_grad_are_skipped_and_get_no_state():
    a = mt.tensor([1.0, 2.0], requires_grad=True)
    b = mt.tensor([3.0, 4.0], requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = mt.tensor([1.0, -1.0])
    opt.step()
    assert b.tolist() == [3.0, 4.0] and b not in opt.state
    assert opt.state[a]["step"] == 1
    # b gets a gradient later: its own step count starts at 1 (its bias correction too)
    b.grad = mt.tensor([0.5, 0.5])
    opt.step()
    assert opt.state[a]["step"] == 2 and opt.state[b]["step"] == 1
    np.testing.assert_allclose(b.detach().numpy(), [2.9, 3.9], rtol=1e-6)


def test_zero_grad_sets_to_none_or_zeros():
    a = mt.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    opt.zero_grad()  # no gradient yet: nothing to do
    (a * a).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and a.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert a.grad is None


def test_gradients_accumulate_between_zero_grads_as_in_pytorch():
    a = mt.tensor([1.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a * 3).sum().backward()
    (a * 3).sum().backward()
    opt.step()
    assert a.item() == pytest.approx(1.0 - 0.1 * 6)


def test_step_changes_parameters_in_place_and_bumps_versions():
    a = mt.tensor(np.ones((3, 2)), requires_grad=True)
    view_before = a.detach()
    memory = a._data
    opt = optim.Adam([a], lr=0.1)
    a.grad = mt.ones(3, 2, dtype=mt.float64)
    v0 = a._version
    opt.step()
    assert a._data is memory and view_before.tolist() == a.tolist()  # same memory, changed
    assert a._version == v0 + 1
    assert opt.state[a]["exp_avg"]._version == 1


def test_autograd_catches_a_saved_parameter_changed_by_step():
    """The version bump lets backward notice that step() changed a tensor the graph saved."""
    a = mt.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    a.grad = mt.tensor([1.0, 1.0])
    y = (a * a).sum()  # Mul saves a
    opt.step()
    with pytest.raises(RuntimeError):
        y.backward()


def test_step_records_nothing_and_closure_runs_with_grad_enabled():
    a = mt.tensor([2.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with mt.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 4.0
    assert a.item() == pytest.approx(2.0 - 0.25 * 4.0)
    assert a.grad_fn is None and a.is_leaf


def test_state_buffers_are_tagged_optimizer_state():
    events = []
    a = mt.zeros(100, 10, requires_grad=True)
    b = mt.zeros(10, requires_grad=True)
    with mm.add_allocation_observer(events.append):
        opt = optim.Adam([a, b], amsgrad=True)
        a.grad, b.grad = mt.ones(100, 10), mt.ones(10)
        opt.step()
        opt.step()
        state_bytes = sum(e.nbytes for e in events if e.event == "alloc" and e.tag == "optimizer_state")
        assert state_bytes == 3 * (a.nbytes + b.nbytes)  # exp_avg, exp_avg_sq, max_exp_avg_sq
        del opt


def test_sgd_momentum_buffer_is_tagged_optimizer_state():
    events = []
    a = mt.zeros(50, requires_grad=True)
    with mm.add_allocation_observer(events.append):
        opt = optim.SGD([a], lr=0.1, momentum=0.9)
        a.grad = mt.ones(50)
        opt.step()
        buf = opt.state[a]["momentum_buffer"]
        assert mm.live_buffers()[mm.buffer_id(buf)][1] == "optimizer_state"


def test_step_keeps_float32():
    a = mt.randn(5, requires_grad=True)
    for cls in (optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop):
        opt = cls([a], lr=0.01, **({"momentum": 0.9} if cls in (optim.SGD, optim.RMSprop) else {}))
        a.grad = mt.randn(5)
        opt.step()
        assert a.dtype == np.float32
        assert all(v.dtype == np.float32 for v in opt.state[a].values() if isinstance(v, mt.Tensor))


def test_add_param_group_uses_defaults_and_validates():
    a = mt.tensor([1.0], requires_grad=True)
    b = mt.tensor([1.0], requires_grad=True)
    opt = optim.Adam([a], lr=0.1, betas=(0.5, 0.6))
    opt.add_param_group({"params": b, "lr": 0.2})
    assert opt.param_groups[1]["lr"] == 0.2 and opt.param_groups[1]["betas"] == (0.5, 0.6)
    assert len(opt.param_groups[1]["params"]) == 1 and opt.param_groups[1]["params"][0] is b
    with pytest.raises(ValueError, match="already in parameter group 0"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match=r"Adam: invalid lr=-1"):
        opt.add_param_group({"params": [mt.tensor([1.0], requires_grad=True)], "lr": -1})
    assert len(opt.param_groups) == 2


def test_hyperparameters_can_change_between_steps():
    """Schedulers work by writing group["lr"]; the next step must use it."""
    a = mt.tensor([1.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    a.grad = mt.tensor([1.0])
    opt.step()
    opt.param_groups[0]["lr"] = 0.5
    opt.step()
    assert a.item() == pytest.approx(1.0 - 0.1 - 0.5)


def test_register_update_kernel_plugs_in_a_custom_rule():
    calls = []

    def my_sgd(param, grad, buf, **kw):
        calls.append(kw["lr"])
        param -= 2 * kw["lr"] * grad
        return buf

    previous = optim.register_update_kernel("sgd", "cpu", my_sgd)
    try:
        a = mt.tensor([1.0], requires_grad=True)
        opt = optim.SGD([a], lr=0.1)
        a.grad = mt.tensor([1.0])
        opt.step()
        assert calls == [0.1] and a.item() == pytest.approx(0.8)
    finally:
        optim.register_update_kernel("sgd", "cpu", previous)
    assert optim.update_kernel("sgd", mt.cpu, optim.functional.sgd_update) is optim.functional.sgd_update


def _scratch_reported_by_a_step(kernel) -> list[int]:
    """Bytes of each scratch block (temporary, made by no op) reported by one SGD step with ``kernel`` registered
    (None: the default rule)."""
    events = []
    previous = optim.register_update_kernel("sgd", "cpu", kernel)
    try:
        a = mt.zeros(10, requires_grad=True)
        opt = optim.SGD([a], lr=0.1, momentum=0.9)
        a.grad = mt.ones(10)
        opt.step()  # allocates the momentum buffer
        with mm.add_allocation_observer(events.append):
            opt.step()
    finally:
        optim.register_update_kernel("sgd", "cpu", previous)
    return [e.nbytes for e in events if e.event == "alloc" and e.tag == "temporary" and e.op is None]


def test_a_registered_kernel_reports_the_scratch_it_declares_and_none_without_a_declaration():
    def declaring_sgd(param, grad, buf, **kw):
        return optim.functional.sgd_update(param, grad, buf, **kw)

    declaring_sgd.scratch_arrays = lambda nesterov=False, **kw: 3 + bool(nesterov)  # takes the keyword arguments

    def silent_sgd(param, grad, buf, **kw):
        return optim.functional.sgd_update(param, grad, buf, **kw)

    assert _scratch_reported_by_a_step(declaring_sgd) == [3 * 10 * 4]
    assert _scratch_reported_by_a_step(silent_sgd) == []
    assert _scratch_reported_by_a_step(None) == [1 * 10 * 4]  # the default rule (None restores it): lr * d


def test_functional_updates_do_not_touch_grad():
    rng = np.random.default_rng(4)
    p, g = rng.normal(size=5), rng.normal(size=5)
    g0 = g.copy()
    optim.functional.sgd_update(p, g, None, lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True, maximize=True)
    optim.functional.adam_update(p, g, np.zeros(5), np.zeros(5), np.zeros(5), step=1, lr=0.1, beta1=0.9,
                                 beta2=0.99, eps=1e-8, weight_decay=0.1, amsgrad=True, maximize=True)
    optim.rmsprop.rmsprop_update(p, g, np.zeros(5), np.zeros(5), np.zeros(5), lr=0.1, alpha=0.9, eps=1e-8,
                                 weight_decay=0.1, momentum=0.9, centered=True, maximize=True)
    np.testing.assert_array_equal(g, g0)


def test_repr_lists_groups():
    a = mt.tensor([1.0], requires_grad=True)
    text = repr(optim.SGD([a], lr=0.1, momentum=0.9))
    assert text.startswith("SGD (") and "Parameter Group 0" in text and "momentum: 0.9" in text


def test_accepts_a_generator_of_parameters():
    params = [mt.tensor([1.0], requires_grad=True) for _ in range(3)]
    opt = optim.RMSprop(p for p in params)
    assert len(opt.param_groups[0]["params"]) == 3


def test_hypothesis_random_adam_hyperparameters_match_torch():
    torch = pytest.importorskip("torch")
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=25, deadline=None, derandomize=True)
    @given(
        lr=st.floats(1e-4, 1.0),
        b1=st.floats(0.0, 0.99),
        b2=st.floats(0.0, 0.9999),
        eps=st.floats(1e-10, 1e-2),
        wd=st.floats(0.0, 0.5),
        amsgrad=st.booleans(),
        decoupled=st.booleans(),
        seed=st.integers(0, 2**16),
    )
    def check(lr, b1, b2, eps, wd, amsgrad, decoupled, seed):
        init, grads = make_problem(seed, shapes=[(3, 2)], steps=4)
        kwargs = dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, amsgrad=amsgrad)
        cls, name = (optim.AdamW, "AdamW") if decoupled else (optim.Adam, "Adam")
        got = run_minigrad(cls, kwargs, init, grads)
        tp = torch.tensor(init[0], requires_grad=True)
        topt = getattr(torch.optim, name)([tp], foreach=False, **kwargs)
        for step_grads in grads:
            tp.grad = torch.tensor(step_grads[0])
            topt.step()
        np.testing.assert_allclose(got[-1][0], tp.detach().numpy(), rtol=1e-10, atol=1e-12)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check()


def test_update_kernel_without_a_registered_kernel_is_the_default_rule():
    rule = optim.rmsprop.rmsprop_update
    assert optim.update_kernel("rmsprop", mt.cpu, rule) is rule
    with pytest.raises(TypeError, match="register_update_kernel: expected a callable"):
        optim.register_update_kernel("rmsprop", "cpu", 3)
