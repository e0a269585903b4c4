"""Fused softmax + cross-entropy matches a float64 NumPy reference on the simulator, race-free at edge sizes.

Tolerances: the loss at rtol 1e-5 (float32 exp/log and sums in tree
order), the gradient at atol 1e-6 (its entries are probabilities / rows);
with logits near 1000 both at atol 1e-4 (float32 values there are 6e-5 apart).
"""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.gpu.kernels import softmax_cross_entropy, softmax_cross_entropy_grad

SHAPES = [(1, 1), (1, 10), (4, 3), (3, 40), (7, 130), (2, 300), (33, 10)]  # rows, classes: 130, 300 > 128 threads


def _reference(logits, targets):
    z = logits.astype(np.float64)
    logsumexp = z.max(axis=1) + np.log(np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1))
    rows = np.arange(len(z))
    loss = (logsumexp - z[rows, targets]).mean()
    grad = np.exp(z - logsumexp[:, None])
    grad[rows, targets] -= 1
    return loss, logsumexp, grad / len(z)


def _inputs(rows, classes, seed, spread=3.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, classes)) * spread).astype(np.float32), rng.integers(0, classes, rows)


@pytest.mark.parametrize("rows, classes", SHAPES)
def test_forward_and_backward_match_numpy(rows, classes):
    logits, targets = _inputs(rows, classes, rows + classes)
    loss, logsumexp = softmax_cross_entropy(logits, targets)
    grad = softmax_cross_entropy_grad(logits, targets, logsumexp)
    expected_loss, expected_logsumexp, expected_grad = _reference(logits, targets)
    np.testing.assert_allclose(loss[0], expected_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logsumexp, expected_logsumexp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-4, atol=1e-6)


def test_large_logits_do_not_overflow():
    logits = np.array([[1000.0, 999.0, -1000.0], [-500.0, 80.0, 90.0]], np.float32)  # exp(1000) is inf in float32
    targets = np.array([1, 2], np.int32)
    loss, logsumexp = softmax_cross_entropy(logits, targets)
    expected_loss, _, expected_grad = _reference(logits, targets)
    # loss = logsumexp - z_t, both near 1000, where float32 values are 6e-5 apart
    np.testing.assert_allclose(loss[0], expected_loss, atol=2e-4)
    np.testing.assert_allclose(softmax_cross_entropy_grad(logits, targets, logsumexp), expected_grad, atol=1e-4)


def test_grad_loss_scales_the_gradient():
    logits, targets = _inputs(3, 4, 1)
    _, logsumexp = softmax_cross_entropy(logits, targets)
    grad = softmax_cross_entropy_grad(logits, targets, logsumexp, grad_loss=np.array(2.5, np.float32))
    np.testing.assert_allclose(grad, 2.5 * _reference(logits, targets)[2], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("classes, threads", [(1, 32), (10, 32), (33, 64), (128, 128), (300, 128)])
def test_forward_block_is_the_power_of_two_that_covers_the_classes(classes, threads):
    softmax_cross_entropy(*_inputs(1, classes, 3))
    assert jit.last_launch_stats().block == (threads, 1, 1)


def test_forward_is_one_block_per_row_with_one_atomic_each():
    logits, targets = _inputs(5, 10, 2)
    softmax_cross_entropy(logits, targets)
    stats = jit.last_launch_stats()
    assert stats.blocks == 5 and stats.atomics == 5
    assert stats.global_store_bytes == 5 * 4  # only the logsumexp per row: no probabilities written


def test_bad_targets_are_refused_before_the_launch():
    logits = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"softmax_cross_entropy: targets must lie in \[0, 3\).*\[0, 3\]"):
        softmax_cross_entropy(logits, np.array([0, 3]))
    with pytest.raises(TypeError, match="softmax_cross_entropy: 'targets' must hold integer class indices"):
        softmax_cross_entropy(logits, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"'targets' has shape \(3,\), expected \(2,\)"):
        softmax_cross_entropy(logits, np.array([0, 1, 2]))
