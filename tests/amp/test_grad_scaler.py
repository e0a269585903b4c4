"""GradScaler: PyTorch's semantics, defaults and errors, the documented patterns, and a cross-check with torch's."""

import math
import warnings

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.amp import GradScaler


def model(values=(1.0, -2.0, 3.0, 0.5), dtype=mt.float32):
    return nn.Parameter(mt.tensor(list(values), dtype=dtype))


def loss_of(p, x):
    return (p * mt.tensor(x, dtype=p.dtype)).sum()


def test_defaults_are_pytorchs():
    scaler = GradScaler("cpu")
    assert scaler.is_enabled() and scaler.get_scale() == 2.0**16
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (2.0, 0.5, 2000)
    assert scaler.state_dict() == {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                   "growth_interval": 2000, "_growth_tracker": 0}


def test_cuda_without_a_gpu_warns_and_disables(monkeypatch):
    import minigrad.amp.grad_scaler as module

    monkeypatch.setattr(module, "cuda_available", lambda: False)
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        scaler = GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0


def test_a_clean_step_unscales_steps_and_counts():
    p = model()
    opt = optim.SGD([p], lr=0.1)
    scaler = GradScaler("cpu", init_scale=1024.0)
    scaled = scaler.scale(loss_of(p, [1.0, 2.0, 3.0, 4.0]))
    assert scaled.item() == 1024.0 * (1 - 4 + 9 + 2)
    scaled.backward()
    assert p.grad.tolist() == [1024.0, 2048.0, 3072.0, 4096.0]
    assert scaler.step(opt) is None  # SGD's step returns None
    assert p.grad.tolist() == [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_allclose(p.detach().cpu().numpy(), [0.9, -2.2, 2.7, 0.1], rtol=1e-6)
    scaler.update()
    assert scaler.get_scale() == 1024.0 and scaler._get_growth_tracker() == 1


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_an_inf_or_nan_gradient_skips_the_step_and_backs_off(bad):
    p = model()
    opt = optim.SGD([p], lr=0.1)
    scaler = GradScaler("cpu")
    scaler.scale(loss_of(p, [1.0, bad, 3.0, 4.0])).backward()
    assert scaler.step(opt) is None
    assert p.tolist() == [1.0, -2.0, 3.0, 0.5]  # untouched
    scaler.update()
    assert scaler.get_scale() == 32768.0 and scaler._get_growth_tracker() == 0


def test_a_nan_loss_is_a_skipped_step():
    p = model()
    opt = optim.SGD([p], lr=0.1)
    scaler = GradScaler("cpu")
    loss = loss_of(p, [1.0, 1.0, 1.0, 1.0]) * mt.tensor(math.nan)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert p.tolist() == [1.0, -2.0, 3.0, 0.5] and scaler.get_scale() == 32768.0


def test_inverse_scale_is_computed_in_float64_then_float32():
    p = model()
    scaler = GradScaler("cpu", init_scale=3.0)
    scaler.scale(loss_of(p, [3.0, 3.0, 3.0, 3.0])).backward()
    scaler.unscale_(optim.SGD([p], lr=0.1))
    expected = np.float32(9.0) * np.float32(1 / np.float64(np.float32(3.0)))
    assert p.grad.tolist() == [float(expected)] * 4


def test_clipping_after_unscale_sees_the_true_gradients():
    p = model()
    opt = optim.SGD([p], lr=1.0)
    scaler = GradScaler("cpu")
    scaler.scale(loss_of(p, [3.0, 4.0, 0.0, 0.0])).backward()
    scaler.unscale_(opt)
    total = nn.utils.clip_grad_norm_([p], 1.0)
    assert total.item() == pytest.approx(5.0)
    scaler.step(opt)  # does not unscale again
    np.testing.assert_allclose(p.detach().cpu().numpy(), [1.0 - 0.6, -2.0 - 0.8, 3.0, 0.5], rtol=1e-5)
    scaler.update()


def test_gradient_accumulation_scales_every_micro_batch_and_steps_once():
    p = model()
    opt = optim.SGD([p], lr=0.5)
    scaler = GradScaler("cpu", init_scale=256.0)
    for x in ([1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]):
        scaler.scale(loss_of(p, x) / 3).backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(p.detach().cpu().numpy(), [1.0 - 0.5 * 2 / 3, -2.0 - 0.5 * 2 / 3, 3.0, 0.5], rtol=1e-6)


def test_several_optimizers_and_losses_skip_only_their_own_step_and_share_one_update():
    a, b = model(), model()
    opt_a, opt_b = optim.SGD([a], lr=0.1), optim.SGD([b], lr=0.1)
    scaler = GradScaler("cpu")
    loss_a, loss_b = loss_of(a, [1.0] * 4), loss_of(b, [1.0, math.inf, 1.0, 1.0])
    scaler.scale(loss_a).backward(retain_graph=True)
    scaler.scale(loss_b).backward()
    scaler.step(opt_a)
    scaler.step(opt_b)
    scaler.update()
    assert a.tolist() != [1.0, -2.0, 3.0, 0.5] and b.tolist() == [1.0, -2.0, 3.0, 0.5]
    assert scaler.get_scale() == 32768.0


def test_scale_of_nested_outputs_and_the_dtype_rules():
    scaler = GradScaler("cpu", init_scale=4.0)
    outs = scaler.scale([mt.ones(2), (mt.ones(3), mt.ones(1))])
    assert isinstance(outs, list) and isinstance(outs[1], tuple)
    assert outs[1][0].tolist() == [4.0] * 3
    assert scaler.scale(mt.ones(3, dtype=mt.float16)).dtype is mt.float16  # a 0-d float32 scale does not widen
    assert scaler.scale(mt.tensor(2.0, dtype=mt.float16)).dtype is mt.float32  # both 0-d: promoted
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)


def test_float16_gradients_are_refused_with_the_master_weights_advice():
    p = model(dtype=mt.float16)
    scaler = GradScaler("cpu", init_scale=1024.0)
    scaler.scale(loss_of(p, [1.0] * 4)).backward()
    with pytest.raises(ValueError, match=r"^Attempting to unscale FP16 gradients\..*float32 master weights"):
        scaler.unscale_(optim.SGD([p], lr=0.1))
    assert p.grad.tolist() == [1024.0] * 4  # nothing unscaled


def test_bfloat16_gradients_are_unscaled_in_float32():
    p = model(dtype=mt.bfloat16)
    scaler = GradScaler("cpu", init_scale=8.0)
    scaler.scale(loss_of(p, [1.0, 2.0, 3.0, 0.25])).backward()
    scaler.unscale_(optim.SGD([p], lr=0.1))
    assert p.grad.dtype is mt.bfloat16 and p.grad.tolist() == [1.0, 2.0, 3.0, 0.25]


def test_errors_in_the_wrong_order_are_pytorchs():
    p = model()
    opt = optim.SGD([p], lr=0.1)
    scaler = GradScaler("cpu")
    for call in (lambda: scaler.unscale_(opt), lambda: scaler.step(opt), lambda: scaler.update()):
        with pytest.raises(RuntimeError, match=r"but _scale is None.  This may indicate your script did not use "
                                               r"scaler.scale\(loss or outputs\)"):
            call()
    scaler.scale(loss_of(p, [1.0] * 4)).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) has already been called on this optimizer since the "
                                           r"last update\(\)\.$"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled"):
        scaler.step(opt, closure=lambda: None)
    scaler.update()
    scaler.unscale_(opt)  # a new iteration


def test_no_gradients_means_no_inf_checks():
    p = model()
    opt = optim.SGD([p], lr=0.1)
    scaler = GradScaler("cpu")
    scaler.scale(mt.ones(1))
    with pytest.raises(RuntimeError, match="No inf checks were recorded for this optimizer"):
        scaler.step(opt)
    fresh = GradScaler("cpu")
    fresh.scale(mt.ones(1))
    with pytest.raises(RuntimeError, match="No inf checks were recorded prior to update"):
        fresh.update()
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)


@pytest.mark.parametrize("kwargs, name", [
    ({"init_scale": 0.0}, "init_scale"), ({"init_scale": -1.0}, "init_scale"), ({"init_scale": math.inf}, "init_scale"),
    ({"init_scale": math.nan}, "init_scale"), ({"growth_factor": -2.0}, "growth_factor"),
    ({"growth_factor": 1.0}, "growth_factor"), ({"backoff_factor": 1.5}, "backoff_factor"),
    ({"backoff_factor": 0.0}, "backoff_factor"), ({"growth_interval": 0}, "growth_interval"),
    ({"growth_interval": 2.5}, "growth_interval"), ({"init_scale": "big"}, "init_scale"),
])
def test_hostile_arguments_raise_value_errors_that_name_them(kwargs, name):
    with pytest.raises(ValueError, match=rf"GradScaler: {name}="):
        GradScaler("cpu", **kwargs)


def test_update_with_a_new_scale():
    scaler = GradScaler("cpu")
    scaler.scale(mt.ones(1))
    scaler.update(1024.0)
    assert scaler.get_scale() == 1024.0
    scaler.update(mt.tensor([8.0]))
    assert scaler.get_scale() == 8.0
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="new_scale"):
            scaler.update(bad)
    with pytest.raises(ValueError, match="new_scale should be a float or a 1-element"):
        scaler.update(mt.ones(2))


def test_state_dict_round_trip():
    p = model()
    opt = optim.SGD([p], lr=0.1)
    scaler = GradScaler("cpu", init_scale=512.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    for bad in (False, True, False):
        scaler.scale(loss_of(p, [1.0, math.inf if bad else 1.0, 1.0, 1.0])).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    state = scaler.state_dict()
    assert state == {"scale": 128.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 3,
                     "_growth_tracker": 1}
    fresh = GradScaler("cpu")
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    fresh.scale(mt.ones(1))
    assert fresh.get_scale() == 128.0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        fresh.load_state_dict({})
    assert GradScaler("cpu", enabled=False).state_dict() == {}


def test_disabled_is_a_pass_through():
    p = model()
    opt = optim.SGD([p], lr=0.1)
    scaler = GradScaler("cpu", enabled=False)
    loss = loss_of(p, [1.0] * 4)
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert p.grad.tolist() == [1.0] * 4 and scaler.get_scale() == 1.0 and scaler._get_growth_tracker() == 0


# --------------------------------------------------------------------------- against torch.amp.GradScaler


SEQUENCE = ["ok", "ok", "inf", "ok", "ok", "ok", "nan", "ok", "ok", "ok", "ok", "ok", "ok", "-inf", "ok", "ok",
            "ok", "ok", "ok", "ok", "ok"]
BAD = {"ok": 1.0, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def test_the_same_gradients_give_torchs_scales_and_skipped_steps(torch):
    rng = np.random.default_rng(0)
    start = rng.standard_normal((2, 5))
    ours_p = [nn.Parameter(mt.tensor(start[i], dtype=mt.float32)) for i in range(2)]
    theirs_p = [torch.nn.Parameter(torch.tensor(start[i], dtype=torch.float32)) for i in range(2)]
    ours_opt = [optim.SGD([ours_p[0]], lr=0.1, momentum=0.9), optim.Adam([ours_p[1]], lr=0.01)]
    theirs_opt = [torch.optim.SGD([theirs_p[0]], lr=0.1, momentum=0.9), torch.optim.Adam([theirs_p[1]], lr=0.01)]
    kwargs = dict(init_scale=2.0**10, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    ours, theirs = GradScaler("cpu", **kwargs), torch.amp.GradScaler("cpu", **kwargs)
    for step, kind in enumerate(SEQUENCE):
        x = rng.standard_normal((2, 5))
        which = step % 2  # the bad value lands in one optimizer's gradients
        x[which, step % 5] = BAD[kind] if kind != "ok" else x[which, step % 5]
        for o in ours_opt + theirs_opt:
            o.zero_grad()
        ours_loss = sum(((p * mt.tensor(x[i], dtype=mt.float32)) ** 2).sum() for i, p in enumerate(ours_p))
        theirs_loss = sum(((p * torch.tensor(x[i], dtype=torch.float32)) ** 2).sum() for i, p in enumerate(theirs_p))
        ours.scale(ours_loss).backward()
        theirs.scale(theirs_loss).backward()
        ours.unscale_(ours_opt[0])
        theirs.unscale_(theirs_opt[0])
        skipped = []
        for o_opt, t_opt in zip(ours_opt, theirs_opt):
            before = [p.detach().cpu().numpy().copy() for p in ours_p]
            ours.step(o_opt)
            theirs.step(t_opt)
            skipped.append(all(np.array_equal(b, p.detach().cpu().numpy()) for b, p in zip(before, ours_p)))
        ours.update()
        theirs.update()
        assert ours.get_scale() == theirs.get_scale(), f"step {step} ({kind})"
        assert ours._get_growth_tracker() == theirs._get_growth_tracker(), f"step {step} ({kind})"
        assert ours.state_dict() == theirs.state_dict()
        for o, t in zip(ours_p, theirs_p):
            np.testing.assert_allclose(o.detach().cpu().numpy(), t.detach().numpy(), rtol=2e-5, atol=1e-6,
                                       err_msg=f"step {step} ({kind})")
        assert skipped == [kind != "ok" and which == 0, kind != "ok" and which == 1]


def test_the_error_messages_are_torchs(torch):
    p = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError) as theirs:
        scaler.unscale_(opt)
    q = model()
    ours_opt = optim.SGD([q], lr=0.1)
    ours = GradScaler("cpu")
    ours.scale(q.sum()).backward()
    ours.unscale_(ours_opt)
    with pytest.raises(RuntimeError) as mine:
        ours.unscale_(ours_opt)
    assert str(mine.value) == str(theirs.value)
    half = torch.nn.Parameter(torch.ones(2, dtype=torch.float16))
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(half.sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(torch.optim.SGD([half], lr=0.1))


def test_the_state_dict_loads_into_torchs_scaler_and_back(torch):
    ours = GradScaler("cpu", init_scale=128.0, growth_interval=7)
    theirs = torch.amp.GradScaler("cpu")
    theirs.load_state_dict(ours.state_dict())
    assert theirs.state_dict() == ours.state_dict()
    again = GradScaler("cpu")
    again.load_state_dict(theirs.state_dict())
    assert again.state_dict() == ours.state_dict()


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
def test_an_overflowing_float16_autocast_step_is_skipped_without_a_numpy_warning(arch):
    from minigrad.amp import autocast

    mt.manual_seed(0)
    if arch == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    else:
        model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 10))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler("cpu")
    x = mt.tensor(np.random.default_rng(0).standard_normal((8, 1, 8, 8)).astype(np.float32))
    y = mt.tensor(np.arange(8))
    before = [p.detach().numpy().copy() for p in model.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # casts past 65504 and the inf/NaN gradients are intended: no warning
        opt.zero_grad()
        with autocast("cpu", dtype=mt.float16):
            loss = nn.functional.cross_entropy(model(x), y) * 1e4  # finite, but times 2**16 past float16's range
        scaler.scale(loss).backward()
        assert scaler.step(opt) is None
        scaler.update()
    assert np.isfinite(loss.item()) and scaler.get_scale() == 2.0**15
    assert all(np.array_equal(b, p.detach().numpy()) for b, p in zip(before, model.parameters()))
