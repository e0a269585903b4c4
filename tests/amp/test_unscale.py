"""The unscale + inf check of one gradient: the clear version, and the fused kernel through the per-device registry."""

import math

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.amp import GradScaler, register_unscale_kernel
from minigrad.amp.unscale import unscale_grad_, unscale_kernel
from minigrad.gpu.kernels import unscale_and_check


def test_the_check_reads_the_gradient_before_the_multiply_and_accumulates():
    g = mt.tensor([1.0, 2.0, 3.0])
    version = g._version_counter.value
    found = unscale_grad_(g, 0.5)
    assert g.tolist() == [0.5, 1.0, 1.5] and found.tolist() == [0.0]
    assert g._version_counter.value > version
    found = unscale_grad_(mt.tensor([math.nan, 1.0]), 0.5, found)
    found = unscale_grad_(mt.tensor([1.0]), 0.5, found)
    assert found.tolist() == [1.0]  # one flag collects a whole step
    big = mt.tensor([3e38])
    assert unscale_grad_(big, 4.0).tolist() == [0.0] and big.tolist() == [math.inf]  # PyTorch checks the input
    same = mt.tensor([1.0, math.inf])
    assert unscale_grad_(same, 1.0).tolist() == [1.0] and same.tolist() == [1.0, math.inf]


def test_sixteen_bit_and_double_gradients_keep_their_dtype():
    for dtype in (mt.bfloat16, mt.float64):
        g = mt.tensor([2.0, 4.0], dtype=dtype)
        unscale_grad_(g, 0.25)
        assert g.dtype is dtype and g.tolist() == [0.5, 1.0]


@pytest.mark.host_only
def test_a_registered_fused_kernel_takes_contiguous_float32_gradients():
    """The GPU stage's fused kernel, run on the kernel simulator (NumPy arrays) through the registry for "cpu"."""
    calls = []

    def fused(grads, inv_scale, found_inf):
        calls.append(grads.shape)
        return unscale_and_check(grads, inv_scale, found_inf)

    register_unscale_kernel("cpu", fused)
    try:
        assert unscale_kernel("cpu") is fused
        p, q = nn.Parameter(mt.zeros(40)), nn.Parameter(mt.zeros(3, dtype=mt.float64))
        p.grad = mt.tensor(np.arange(40.0) * 1024.0, dtype=mt.float32)
        q.grad = mt.tensor([1024.0, math.inf, 0.0], dtype=mt.float64)
        scaler = GradScaler("cpu", init_scale=1024.0)
        scaler.scale(mt.ones(1))
        opt = optim.SGD([p, q], lr=0.1)
        assert scaler.step(opt) is None  # q's inf skips the step
        assert calls == [(40,)]  # the float64 gradient took the clear version
        np.testing.assert_array_equal(p.grad.cpu().numpy(), np.arange(40.0, dtype=np.float32))
        scaler.update()
        assert scaler.get_scale() == 512.0
    finally:
        register_unscale_kernel("cpu", None)
    assert unscale_kernel("cpu") is None
    assert unscale_kernel("cuda") is unscale_and_check
    with pytest.raises(TypeError, match="register_unscale_kernel: expected a callable"):
        register_unscale_kernel("cpu", 3)


@pytest.mark.gpu
def test_a_step_on_cuda_uses_the_fused_kernel(cupy):
    dev = mt.device("cuda")
    p = nn.Parameter(mt.tensor([1.0, -2.0, 3.0], device=dev))
    opt = optim.SGD([p], lr=0.5)
    scaler = GradScaler("cuda", init_scale=2.0**12)
    scaler.scale((p * mt.tensor([1.0, 2.0, 4.0], device=dev)).sum()).backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(p.detach().cpu().numpy(), [0.5, -3.0, 1.0])
    scaler.scale((p * mt.tensor([math.inf, 2.0, 4.0], device=dev)).sum()).backward()
    assert scaler.step(opt) is None
    scaler.update()
    assert scaler.get_scale() == 2.0**11
