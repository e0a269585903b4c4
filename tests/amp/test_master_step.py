"""master_weight_step: float32 masters of a 16-bit model, unscaled in float32, skipped on inf/NaN, copied down in place."""

import numpy as np

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.amp.master_step import master_weight_step


def setup(dtype="float16", scale=1024.0):
    model = [nn.Parameter(mt.tensor([1.0, -2.0, 0.5], dtype=dtype)), nn.Parameter(mt.tensor([[0.25, 3.0]], dtype=dtype))]
    masters = [nn.Parameter(p.detach().to(dtype=mt.float32, copy=True)) for p in model]
    model[0].grad = mt.tensor(np.array([1e-7, 2e-3, -1.0]) * scale, dtype=dtype)
    model[1].grad = mt.tensor(np.array([[0.5, -4e-8]]) * scale, dtype=dtype)
    return model, masters, optim.SGD(masters, lr=0.5)


def test_a_clean_step_updates_the_masters_in_float32_and_copies_them_down_in_place():
    model, masters, opt = setup()
    grad_before = model[0].grad.numpy().copy()
    versions = [p._version_counter.value for p in model]
    assert master_weight_step(model, masters, 1 / 1024.0, opt.step) is False
    unscaled = grad_before.astype(np.float32) * np.float32(1 / 1024.0)
    assert masters[0].grad.dtype is mt.float32 and np.array_equal(masters[0].grad.numpy(), unscaled)
    assert masters[0].grad.numpy()[0] != 0  # 1e-7 survives: it was unscaled in float32
    assert np.array_equal(masters[0].detach().numpy(), np.float32([1.0, -2.0, 0.5]) - np.float32(0.5) * unscaled)
    for p, m, v in zip(model, masters, versions):
        assert p.dtype is mt.float16 and p._version_counter.value > v
        assert np.array_equal(p.detach().numpy(), m.detach().numpy().astype(np.float16))
    assert np.array_equal(model[0].grad.numpy(), grad_before)  # the model's own gradients are left alone


def test_an_inf_anywhere_skips_the_step_and_changes_nothing():
    model, masters, opt = setup()
    model[1].grad = mt.tensor([[np.inf, 1.0]], dtype="float16")
    before = [p.detach().numpy().copy() for p in model + masters]
    clipped = []
    assert master_weight_step(model, masters, 1 / 1024.0, opt.step, clip=clipped.append) is True
    assert not clipped and all(np.array_equal(p.detach().numpy(), b) for p, b in zip(model + masters, before))


def test_the_clip_hook_sees_the_unscaled_gradients_and_a_missing_gradient_stays_none():
    model, masters, opt = setup("bfloat16", scale=1.0)
    model[1].grad = None
    norms = []
    master_weight_step(model, masters, 1.0, opt.step, clip=lambda ps: norms.append(float(nn.utils.clip_grad_norm_(ps, 0.1))))
    assert masters[1].grad is None and abs(norms[0] - np.linalg.norm([1e-7, 2e-3, -1.0])) < 1e-2
    assert np.array_equal(masters[1].detach().numpy(), np.float32([[0.25, 3.0]]))
