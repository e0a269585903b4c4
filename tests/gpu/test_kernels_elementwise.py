"""The grid-stride ``scaled_add`` matches NumPy on the simulator for any grid: larger, equal or smaller than n.

Tolerance: exact. The kernel computes ``alpha * x + y`` in float32 with one
multiply and one add per element, as NumPy does on float32 arrays (no fused
multiply-add on the simulator).
"""

import numpy as np
import pytest

from minigrad.gpu import OutOfBoundsError, jit
from minigrad.gpu.kernels import scaled_add
from minigrad.gpu.kernels.elementwise import scaled_add_kernel


def _arrays(n, seed=0):
    gen = np.random.default_rng(seed)
    return gen.standard_normal(n).astype(np.float32), gen.standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("n, blocks, threads", [(1, 1, 32), (100, 4, 32), (128, 4, 32), (1000, 2, 32), (77, 1, 1)])
def test_matches_numpy_for_any_grid(n, blocks, threads):
    x, y = _arrays(n)
    out = scaled_add(1.5, x, y, blocks=blocks, threads=threads)
    np.testing.assert_array_equal(out, np.float32(1.5) * x + y)


def test_each_element_is_read_and_written_once():
    x, y = _arrays(300)
    scaled_add(-2.0, x, y, blocks=2, threads=32)
    stats = jit.last_launch_stats()
    assert (stats.global_load_bytes, stats.global_store_bytes) == (8 * 300, 4 * 300)
    assert stats.threads_launched == 64


def test_default_launch_caps_the_grid():
    x, y = _arrays(40_000)
    out = scaled_add(0.5, x, y, threads=32)  # 1,250 blocks of 32 would cover it; the cap is 1,024
    np.testing.assert_array_equal(out, np.float32(0.5) * x + y)
    assert jit.last_launch_stats().blocks == 1024


def test_a_bound_off_by_one_is_reported_out_of_bounds():
    @jit.rawkernel()
    def off_by_one(alpha, x, y, out, n):
        i = jit.grid(1)
        while i <= n:
            out[i] = alpha * x[i] + y[i]
            i += jit.gridsize(1)

    x, y = _arrays(40)
    with pytest.raises(OutOfBoundsError, match="off_by_one"):
        off_by_one[2, 32](np.float32(1), x, y, np.empty(40, np.float32), 40)
    scaled_add_kernel[2, 32](np.float32(1), x, y, np.empty(40, np.float32), 40)  # the library's kernel: no error


def test_bad_inputs_are_explained():
    x, y = _arrays(4)
    with pytest.raises(TypeError, match="scaled_add: 'x' has dtype float64"):
        scaled_add(1.0, x.astype(np.float64), y)
    with pytest.raises(ValueError, match="scaled_add: 'y' has shape"):
        scaled_add(1.0, x, y[:3])
    with pytest.raises(ValueError, match="must be 1-D"):
        scaled_add(1.0, x.reshape(2, 2), y.reshape(2, 2))
