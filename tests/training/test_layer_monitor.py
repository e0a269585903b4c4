"""LayerMonitor: per-layer gradient norms and activation statistics, checked by hand in float64; hooks never leak."""

import gc
import math
import weakref

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.training import ActivationStats, LayerMonitor, activation_stats, fit


def _model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(dtype="float64")


def _hook_count(model) -> int:
    return sum(len(m._hooks.forward) + len(m._hooks.forward_pre) + len(m._hooks.backward)
               for m in model.modules() if m._hooks is not None)


def test_statistics_and_norms_match_a_hand_computation():
    model = _model()
    x = mt.tensor(np.random.default_rng(1).normal(size=(5, 3)))
    y = mt.tensor(np.array([0, 1, 1, 0, 1]))
    with LayerMonitor(model) as monitor:
        nn.CrossEntropyLoss()(model(x), y).backward()
        monitor.record_gradients()
    w0, b0 = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    hidden = x.numpy() @ w0.T + b0
    relu = np.maximum(hidden, 0)
    for name, out in (("0", hidden), ("1", relu)):
        s = monitor.activations[name][0]
        assert isinstance(s, ActivationStats)
        expected = (out.mean(), out.std(), np.count_nonzero(out == 0) / out.size, np.abs(out).max())
        assert s.step == 0 and s.zero_fraction == expected[2]  # exact zeros of max(h, 0) are exact in any order
        assert (s.mean, s.std, s.max_abs) == pytest.approx((expected[0], expected[1], expected[3]), rel=1e-12)
    for name in ("0", "2"):
        grads = [p.grad.detach().numpy() for p in model[int(name)].parameters()]
        assert monitor.grad_norms[name] == pytest.approx([math.sqrt(sum((g**2).sum() for g in grads))], rel=1e-13)
    assert set(monitor.grad_norms) == {"0", "2"} and set(monitor.activations) == {"", "0", "1", "2"}
    assert monitor.steps == 1 and monitor.activations[""][0].step == 0


def test_zero_fraction_counts_exact_zeros_only_and_empty_is_nan():
    s = activation_stats(np.array([0.0, 1e-30, -0.0, 2.0]))
    assert s.zero_fraction == 0.5 and s.max_abs == 2.0
    empty = activation_stats(np.zeros((0, 3)))
    assert all(math.isnan(v) for v in (empty.mean, empty.std, empty.zero_fraction, empty.max_abs))
    assert activation_stats(np.array([1.0, 3.0], dtype=np.float16)).std == 1.0


def test_with_an_optimizer_fit_records_one_norm_per_step_and_eval_is_not_recorded():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = mt.tensor(np.random.default_rng(2).normal(size=(12, 3)))
    y = mt.tensor(np.arange(12) % 2)
    loader = [(x[:6], y[:6]), (x[6:], y[6:])]
    with LayerMonitor(model, opt) as monitor:
        fit(model, opt, loader, nn.CrossEntropyLoss(), 2, test_loader=loader, progress=False, print_epochs=False)
    assert monitor.steps == 4 and all(len(v) == 4 for v in monitor.grad_norms.values())
    assert [s.step for s in monitor.activations["1"]] == [0, 1, 2, 3]  # the test loader's eval forwards are not kept
    assert "4 step(s) recorded" in monitor.summary()


def test_a_frozen_layer_records_none():
    model = _model()
    for p in model[0].parameters():
        p.requires_grad_(False)
    with LayerMonitor(model) as monitor:
        model(mt.randn(2, 3, dtype="float64")).sum().backward()
        monitor.record_gradients()
    assert monitor.grad_norms["0"] == [None] and monitor.grad_norms["2"][0] > 0
    assert "no gradient" in monitor.summary()


def test_every_hook_is_removed_on_exit_and_on_an_exception():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    with LayerMonitor(model, opt):
        assert _hook_count(model) == 4 and len(opt._step_hooks[0]) == 1
    assert _hook_count(model) == 0 and len(opt._step_hooks[0]) == 0
    monitor = LayerMonitor(model, opt)
    with pytest.raises(ZeroDivisionError):
        with monitor:
            model(mt.randn(2, 3, dtype="float64"))
            1 / 0
    assert _hook_count(model) == 0 and len(opt._step_hooks[0]) == 0 and not monitor.active
    model(mt.randn(2, 3, dtype="float64"))
    assert len(monitor.activations["0"]) == 1  # nothing recorded after exit


def test_no_tensor_is_kept_alive():
    model = _model()
    with LayerMonitor(model) as monitor:
        out = model(mt.randn(4, 3, dtype="float64"))
        ref = weakref.ref(out)
        del out
        gc.collect()
        assert ref() is None
    assert all(isinstance(v, float) for s in monitor.activations["1"] for v in (s.mean, s.std, s.zero_fraction))


def test_reentering_while_active_raises_and_after_exit_resumes():
    model = _model()
    monitor = LayerMonitor(model)
    with monitor:
        with pytest.raises(RuntimeError, match="already active"):
            monitor.__enter__()
        monitor.record_gradients()
    assert _hook_count(model) == 0
    with monitor:
        model(mt.randn(2, 3, dtype="float64"))
    assert monitor.activations["0"][-1].step == 1 and _hook_count(model) == 0


def test_hostile_inputs():
    with pytest.raises(TypeError, match="expected a minigrad Module"):
        LayerMonitor(object())
    with pytest.raises(TypeError, match="register_step_pre_hook"):
        LayerMonitor(_model(), optimizer=object())
    empty = nn.Sequential()
    with LayerMonitor(empty) as monitor:
        empty(mt.randn(2, 3))
        monitor.record_gradients()
    assert monitor.grad_norms == {} and monitor.steps == 1 and len(monitor.activations[""]) == 1


def test_a_broken_run_shows_in_the_norms():
    """A learning rate of 10: the gradient norms of every layer grow by orders of magnitude within a few steps."""
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = optim.SGD(model.parameters(), lr=10.0)
    x, y = mt.randn(32, 4) * 10, mt.tensor(np.arange(32) % 3)
    with LayerMonitor(model, opt) as monitor:
        for _ in range(4):
            opt.zero_grad()
            nn.CrossEntropyLoss()(model(x), y).backward()
            opt.step()
    assert monitor.grad_norms["2"][-1] > 1e3 * monitor.grad_norms["2"][0]
    assert monitor.activations["2"][-1].max_abs > 1e3 * monitor.activations["2"][0].max_abs


def test_an_error_while_registering_takes_off_the_hooks_already_on():
    class RefusingOptimizer:
        def register_step_pre_hook(self, hook):
            raise RuntimeError("no hooks here")

    model = _model()
    monitor = LayerMonitor(model, RefusingOptimizer())
    with pytest.raises(RuntimeError, match="no hooks here"):
        monitor.__enter__()
    assert _hook_count(model) == 0 and not monitor.active and monitor.handles == []
