"""The fused bias + ReLU kernels match NumPy on the simulator, at edge sizes, with no race/OOB/divergence.

Tolerances: the forward is exact (one float32 add and a max, as NumPy
does); grad_x is exact (a select); grad_bias sums a column in a different
order than NumPy, compared at rtol 1e-5, atol 1e-5.
"""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.gpu.kernels import fused_bias_relu, fused_bias_relu_backward

SIZES = [(1, 1), (3, 5), (9, 33), (17, 64), (40, 7)]  # rows, cols: edges of the 32 x 8 blocks on both axes


def _random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("rows, cols", SIZES)
def test_forward_matches_numpy(rows, cols):
    x, bias = _random((rows, cols), 0), _random(cols, 1)
    out = fused_bias_relu(x, bias)
    np.testing.assert_array_equal(out, np.maximum(x + bias, np.float32(0)))


@pytest.mark.parametrize("rows, cols", SIZES)
def test_backward_matches_numpy(rows, cols):
    x, bias, grad_out = _random((rows, cols), 2), _random(cols, 3), _random((rows, cols), 4)
    out = fused_bias_relu(x, bias)
    grad_x, grad_bias = fused_bias_relu_backward(grad_out, out)
    expected_grad_x = np.where(x + bias > 0, grad_out, np.float32(0))
    np.testing.assert_array_equal(grad_x, expected_grad_x)
    np.testing.assert_allclose(grad_bias, expected_grad_x.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_backward_is_the_gradient_by_finite_differences():
    rows, cols = 5, 6
    x = np.random.default_rng(5).uniform(0.1, 1.0, (rows, cols)) * np.random.default_rng(6).choice([-1, 1], (rows, cols))
    bias, weights = np.zeros(cols), np.random.default_rng(7).standard_normal((rows, cols))

    def loss(x_, b_):  # float64 reference of sum(weights * relu(x + b))
        return (weights * np.maximum(x_ + b_, 0)).sum()

    grad_x, grad_bias = fused_bias_relu_backward(
        weights.astype(np.float32), fused_bias_relu(x.astype(np.float32), bias.astype(np.float32))
    )
    h = 1e-6
    for r, c in [(0, 0), (2, 3), (4, 5)]:
        bump = np.zeros_like(x)
        bump[r, c] = h
        numeric = (loss(x + bump, bias) - loss(x - bump, bias)) / (2 * h)
        np.testing.assert_allclose(grad_x[r, c], numeric, rtol=1e-5, atol=1e-6)
    for c in range(cols):
        bump = np.zeros(cols)
        bump[c] = h
        numeric = (loss(x, bias + bump) - loss(x, bias - bump)) / (2 * h)
        np.testing.assert_allclose(grad_bias[c], numeric, rtol=1e-5, atol=1e-5)


def test_fusion_moves_each_element_through_global_memory_twice():
    rows, cols = 8, 32  # exactly one block: every thread active
    fused_bias_relu(_random((rows, cols), 8), _random(cols, 9))
    stats = jit.last_launch_stats()
    # per element: x read, bias read, out written - unfused (add, then relu) it would be 5 accesses
    assert stats.global_load_bytes == 2 * rows * cols * 4
    assert stats.global_store_bytes == rows * cols * 4


def test_backward_reads_grad_out_once_and_reduces_in_shared_memory():
    rows, cols = 16, 32
    out, grad_out = np.abs(_random((rows, cols), 10)) + 1, _random((rows, cols), 11)
    fused_bias_relu_backward(grad_out, out)
    stats = jit.last_launch_stats()
    assert stats.global_load_bytes == 2 * rows * cols * 4  # out and grad_out, once each
    assert stats.global_store_bytes == (rows * cols + cols) * 4  # grad_x and grad_bias
    assert stats.barriers == 4  # one before the tree, one per step of the 8-row tree
    assert stats.atomics == 0


def test_wrappers_refuse_wrong_dtypes_and_shapes():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"fused_bias_relu: 'x' has dtype float64.*astype"):
        fused_bias_relu(x.astype(np.float64), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"fused_bias_relu: 'bias' has shape \(2,\), expected \(3,\)"):
        fused_bias_relu(x, np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"fused_bias_relu_backward: 'grad_out' has shape \(3, 2\)"):
        fused_bias_relu_backward(np.zeros((3, 2), np.float32), x)
