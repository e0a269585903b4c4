"""Master weights: the arithmetic of one step (unscale, inf/NaN check, skip, float32 update, copy down) and the tracked bytes."""

import gc

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.amp import GradScaler, MasterWeights, autocast, step_memory
from minigrad.amp.master_step import master_weight_step


def small_model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))


def batch(n=8):
    rng = np.random.default_rng(1)
    return mt.from_numpy(rng.standard_normal((n, 6)).astype(np.float32)), mt.from_numpy(rng.integers(0, 3, n))


def test_the_model_becomes_float16_and_the_masters_float32_copies():
    model = small_model()
    before = [p.detach().numpy().copy() for p in model.parameters()]
    mw = MasterWeights(model, lambda ps: optim.SGD(ps, lr=0.1))
    assert all(p.dtype == mt.float16 for p in model.parameters())
    for b, m, p in zip(before, mw.masters, model.parameters()):
        assert m.dtype == mt.float32 and np.array_equal(m.detach().numpy(), b)
        assert np.array_equal(p.detach().numpy(), b.astype(np.float16))
    assert mw.optimizer.param_groups[0]["params"] == mw.masters


def test_one_step_is_sgd_on_the_unscaled_float32_gradients_then_rounded_down():
    model = small_model()
    mw = MasterWeights(model, lambda ps: optim.SGD(ps, lr=0.1), loss_scale=1024.0)
    x, y = batch()
    loss = nn.functional.cross_entropy(model(x.half()), y)
    mw.scale(loss).backward()
    grads = [p.grad.numpy().astype(np.float32) for p in model.parameters()]
    old = [m.detach().numpy().copy() for m in mw.masters]
    assert mw.step()
    for g, o, m, p in zip(grads, old, mw.masters, model.parameters()):
        expected = o - np.float32(0.1) * (g * np.float32(1 / 1024))
        np.testing.assert_allclose(m.detach().numpy(), expected, rtol=1e-6, atol=1e-7)
        assert np.array_equal(p.detach().numpy(), m.detach().numpy().astype(np.float16))
        assert m.grad is None


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_an_overflowing_gradient_skips_the_step_and_backs_off_the_scale(bad):
    model = small_model()
    mw = MasterWeights(model, lambda ps: optim.Adam(ps, lr=0.1), loss_scale=GradScaler("cpu", init_scale=256.0))
    x, y = batch()
    mw.scale(nn.functional.cross_entropy(model(x.half()), y)).backward()
    params = list(model.parameters())
    params[0].grad._data[0, 0] = bad
    old = [p.detach().numpy().copy() for p in params] + [m.detach().numpy().copy() for m in mw.masters]
    assert not mw.step()
    new = [p.detach().numpy() for p in params] + [m.detach().numpy() for m in mw.masters]
    assert all(np.array_equal(a, b) for a, b in zip(old, new))
    assert mw.get_scale() == 128.0 and mw.skipped == 1 and not mw.optimizer.state


def test_the_step_function_on_its_own_and_the_dynamic_scale_grows():
    model = small_model()
    mw = MasterWeights(model, lambda ps: optim.SGD(ps, lr=0.01), loss_scale=GradScaler("cpu", init_scale=8.0,
                                                                                         growth_interval=2))
    x, y = batch()
    for _ in range(2):
        mw.zero_grad()
        mw.scale(nn.functional.cross_entropy(model(x.half()), y)).backward()
        assert mw.step()
    assert mw.get_scale() == 16.0
    assert not master_weight_step(mw.params, mw.masters, 1 / 16.0, mw.optimizer.step)  # gradients still there: steps again


def test_training_a_few_steps_lowers_the_loss():
    model = small_model()
    mw = MasterWeights(model, lambda ps: optim.Adam(ps, lr=0.05))
    x, y = batch(32)
    losses = []
    for _ in range(15):
        mw.zero_grad()
        loss = nn.functional.cross_entropy(model(x.half()), y)
        mw.scale(loss).backward()
        mw.step()
        losses.append(float(loss.item()))
    assert losses[-1] < 0.8 * losses[0]


def test_bad_arguments():
    with pytest.raises(TypeError, match="optimizer_factory"):
        MasterWeights(small_model(), "adam")
    with pytest.raises(ValueError, match="loss_scale"):
        MasterWeights(small_model(), lambda ps: optim.SGD(ps, lr=0.1), loss_scale=0)


def _mlp_step(kind):
    """``(step, model, optimizer)``: a 784-256-128-10 MLP with Adam, batch 128, in float32, under float16
    autocast + GradScaler, or float16 with master weights."""
    from minigrad.training.recipes import mnist_mlp

    rng = np.random.default_rng(0)
    x = mt.from_numpy(rng.standard_normal((128, 1, 28, 28)).astype(np.float32))
    y = mt.from_numpy(rng.integers(0, 10, 128))
    mt.manual_seed(0)
    model = mnist_mlp()
    if kind == "master":
        mw = MasterWeights(model, lambda ps: optim.Adam(ps, lr=1e-3))
        xh = x.half()

        def step():
            mw.zero_grad()
            mw.scale(nn.functional.cross_entropy(model(xh), y)).backward()
            mw.step()
        return step, model, mw.optimizer
    opt = optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler("cpu")

    def step():
        opt.zero_grad()
        with autocast("cpu", dtype=mt.float16, enabled=kind == "autocast"):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step, model, opt


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_tracked_model_state_is_16_bytes_per_parameter_either_way_and_activations_halve():
    n = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10
    figures = {}
    for kind in ("float32", "autocast", "master"):
        gc.collect()  # the previous model's buffers are gone before this one is tracked
        step, model, opt = _mlp_step(kind)
        step()  # Adam's state exists
        figures[kind] = step_memory(step, model, opt)
        assert figures[kind]["model_state"] == 16 * n, kind  # 4 + 4 + 8, or 2 + 2 + 4 + 8
        del step, model, opt
    fp32 = figures["float32"]["activation"]
    assert 0 <= fp32 - (128 * (256 + 128) * 4 + 128 * 10 * 4) <= 16  # the ReLU outputs, the loss's softmax, a scalar
    for kind in ("autocast", "master"):
        assert figures[kind]["activation"] <= 0.55 * fp32, kind


def test_the_scale_trace_is_the_grad_scalers_on_the_same_sequence_of_overflows():
    overflows = [False, False, False, True, False, True, True, False, False, False, False, False, True, False]
    x, y = batch()

    def run_master_weights():
        model = small_model()
        scaler = GradScaler("cpu", init_scale=2.0**10, growth_interval=3)
        mw = MasterWeights(model, lambda ps: optim.SGD(ps, lr=0.01), loss_scale=scaler)
        trace = []
        for bad in overflows:
            mw.zero_grad()
            mw.scale(nn.functional.cross_entropy(model(x.half()), y)).backward()
            if bad:
                next(model.parameters()).grad._data[0, 0] = np.inf
            assert mw.step() is not bad
            trace.append((scaler.get_scale(), scaler._get_growth_tracker()))
        return trace

    def run_grad_scaler():
        model = small_model()
        opt = optim.SGD(model.parameters(), lr=0.01)
        scaler = GradScaler("cpu", init_scale=2.0**10, growth_interval=3)
        trace = []
        for bad in overflows:
            opt.zero_grad()
            scaler.scale(nn.functional.cross_entropy(model(x), y)).backward()
            if bad:
                next(model.parameters()).grad._data[0, 0] = np.inf
            scaler.step(opt)
            scaler.update()
            trace.append((scaler.get_scale(), scaler._get_growth_tracker()))
        return trace

    trace = run_master_weights()
    assert trace == run_grad_scaler()
    assert trace[2] == (2048.0, 0) and trace[3] == (1024.0, 0) and trace[6] == (256.0, 0) and trace[-1] == (256.0, 1)


def test_a_master_weights_step_before_any_scaled_loss_names_the_fix():
    mw = MasterWeights(small_model(), lambda ps: optim.SGD(ps, lr=0.1))
    with pytest.raises(RuntimeError, match="scaler.scale"):
        mw.step()
