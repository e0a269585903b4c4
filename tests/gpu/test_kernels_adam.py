"""The fused Adam / AdamW step matches minigrad.optim.functional.adam_update on the simulator.

Tolerance: the same float32 arithmetic in a slightly different order
(bias corrections folded into two scalars), compared at rtol 1e-5,
atol 1e-6 over three steps.
"""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.gpu.kernels import fused_adam_step
from minigrad.optim.functional import adam_update

HYPER = dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8)


@pytest.mark.parametrize("shape", [(1,), (257,), (3, 50)])
@pytest.mark.parametrize("weight_decay, decoupled", [(0.0, False), (0.1, False), (0.1, True)])
def test_three_steps_match_the_optimizer_reference(shape, weight_decay, decoupled):
    rng = np.random.default_rng(sum(shape))
    param = rng.standard_normal(shape).astype(np.float32)
    m, v = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    ref_param, ref_m, ref_v = param.copy(), m.copy(), v.copy()
    for step in (1, 2, 3):
        grad = rng.standard_normal(shape).astype(np.float32)
        fused_adam_step(param, grad, m, v, step=step, weight_decay=weight_decay, decoupled_weight_decay=decoupled,
                        **HYPER)
        adam_update(ref_param, grad, ref_m, ref_v, step=step, weight_decay=weight_decay,
                    decoupled_weight_decay=decoupled, **HYPER)
        for got, expected in [(param, ref_param), (m, ref_m), (v, ref_v)]:
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_second_moment_matches_the_reference_tightly_at_float32():
    """``1 - beta2`` is computed as the reference computes it, not as 1 - float32(beta2) (4.7e-5 off)."""
    rng = np.random.default_rng(7)
    grad = rng.standard_normal(1000).astype(np.float32)
    param, m, v = np.zeros(1000, np.float32), np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    ref_param, ref_m, ref_v = param.copy(), m.copy(), v.copy()
    fused_adam_step(param, grad, m, v, step=1, lr=1e-3, beta2=0.999)
    adam_update(ref_param, grad, ref_m, ref_v, step=1, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)
    np.testing.assert_allclose(v, ref_v, rtol=1e-6, atol=0)
    np.testing.assert_allclose(m, ref_m, rtol=1e-6, atol=0)


def test_each_array_is_read_once_and_written_once():
    n = 300
    param, grad, m, v = (np.ones(n, np.float32) for _ in range(4))
    fused_adam_step(param, grad, m, v, step=1, lr=1e-3)
    stats = jit.last_launch_stats()
    assert stats.global_load_bytes == 4 * n * 4  # param, grad, m, v
    assert stats.global_store_bytes == 3 * n * 4  # param, m, v


def test_refuses_state_it_cannot_update_in_place():
    param = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="fused_adam_step: 'param' is updated in place and must be C-contiguous"):
        fused_adam_step(param.T, param.T, param.copy().T, param.copy().T, step=1, lr=1e-3)
    with pytest.raises(ValueError, match="fused_adam_step: 'step' counts steps"):
        fused_adam_step(param, param, param.copy(), param.copy(), step=0, lr=1e-3)
