"""On an NVIDIA GPU, every kernel wrapper given CuPy arrays returns CuPy arrays that match the simulator.

Marked ``gpu``; skips without CuPy or without a device. Tolerances: the
simulator and the GPU round float32 sums and exp/log differently (and on
the GPU the order of atomics varies), so rtol 1e-4, atol 1e-5.
"""

import numpy as np
import pytest

from minigrad.gpu import kernels

pytestmark = pytest.mark.gpu
RTOL, ATOL = 1e-4, 1e-5


def _random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _same(on_gpu, on_host, cupy):
    for device_array, host_array in zip(on_gpu, on_host):
        assert isinstance(device_array, cupy.ndarray)  # results stay on the device
        np.testing.assert_allclose(device_array.get(), host_array, rtol=RTOL, atol=ATOL)


def test_bias_relu_forward_and_backward(cupy):
    x, bias, grad_out = _random(37, 70), _random(70, seed=1), _random(37, 70, seed=2)
    out = kernels.fused_bias_relu(x, bias)
    out_gpu = kernels.fused_bias_relu(cupy.asarray(x), cupy.asarray(bias))
    _same([out_gpu], [out], cupy)
    _same(kernels.fused_bias_relu_backward(cupy.asarray(grad_out), out_gpu),
          kernels.fused_bias_relu_backward(grad_out, out), cupy)


@pytest.mark.parametrize("total", [kernels.shared_memory_sum, kernels.warp_shuffle_sum], ids=lambda f: f.__name__)
def test_sums(cupy, total):
    x = _random(5000)
    np.testing.assert_allclose(total(cupy.asarray(x)).get()[0], x.astype(np.float64).sum(), rtol=RTOL, atol=1e-3)


def test_tiled_matmul(cupy):
    a, b = _random(40, 24), _random(24, 36, seed=1)
    _same([kernels.tiled_matmul(cupy.asarray(a), cupy.asarray(b))], [a @ b], cupy)


def test_softmax_cross_entropy(cupy):
    logits, targets = _random(64, 10) * 3, np.random.default_rng(1).integers(0, 10, 64)
    loss, logsumexp = kernels.softmax_cross_entropy(logits, targets)
    grad = kernels.softmax_cross_entropy_grad(logits, targets, logsumexp)
    device = cupy.asarray(logits), cupy.asarray(targets)
    loss_gpu, logsumexp_gpu = kernels.softmax_cross_entropy(*device)
    grad_gpu = kernels.softmax_cross_entropy_grad(*device, logsumexp_gpu)
    _same([loss_gpu, logsumexp_gpu, grad_gpu], [loss, logsumexp, grad], cupy)


def test_adam_and_unscale_in_place(cupy):
    host = [_random(1000, seed=s) for s in range(2)] + [np.zeros(1000, np.float32)] * 2
    host = [a.copy() for a in host]
    device = [cupy.asarray(a) for a in host]
    for arrays in (host, device):
        kernels.fused_adam_step(*arrays, step=1, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)
    _same(device, host, cupy)

    grads = _random(1000) * 1024
    grads[7] = np.inf
    found_inf = kernels.unscale_and_check(cupy.asarray(grads), 1 / 1024)
    assert isinstance(found_inf, cupy.ndarray) and found_inf.get()[0] == 1
