"""The fused unscale + inf/NaN check matches NumPy on the simulator (exact: one float32 multiply)."""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.gpu.kernels import unscale_and_check


@pytest.mark.parametrize("n", [1, 255, 256, 700])
def test_unscales_finite_gradients_and_leaves_the_flag_clear(n):
    grads = np.random.default_rng(n).standard_normal(n).astype(np.float32) * np.float32(1024)
    expected = grads * np.float32(1 / 1024)
    found_inf = unscale_and_check(grads, 1 / 1024)
    np.testing.assert_array_equal(grads, expected)
    assert found_inf.shape == (1,) and found_inf[0] == 0


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_flags_a_non_finite_value_anywhere(bad):
    grads = np.ones((3, 100), np.float32)
    grads[2, 99] = bad
    found_inf = unscale_and_check(grads, np.array([0.5], np.float32))
    assert found_inf[0] == 1
    assert grads[0, 0] == 0.5


def test_one_flag_collects_several_gradients():
    found_inf = unscale_and_check(np.ones(10, np.float32), 0.5)
    unscale_and_check(np.array([1.0, np.nan], np.float32), 0.5, found_inf)
    unscale_and_check(np.ones(10, np.float32), 0.5, found_inf)
    assert found_inf[0] == 1  # set by the second, never cleared by the third


def test_overflow_while_unscaling_is_flagged():
    grads = np.array([3e38], np.float32)
    with np.errstate(over="ignore"):  # the simulator computes with NumPy scalars, which warn on overflow
        assert unscale_and_check(grads, 4.0)[0] == 1


def test_reads_and_writes_each_gradient_once():
    n = 256
    unscale_and_check(np.ones(n, np.float32), 0.5)
    stats = jit.last_launch_stats()
    assert stats.global_store_bytes == n * 4
    assert stats.global_load_bytes == 2 * n * 4  # the gradient and the scale, per element


def test_refuses_a_wrong_flag():
    with pytest.raises(ValueError, match=r"unscale_and_check: 'found_inf' has shape \(2,\), expected \(1,\)"):
        unscale_and_check(np.ones(4, np.float32), 0.5, np.zeros(2, np.float32))
