"""The shared-memory and warp-shuffle sums match NumPy on the simulator, at edge sizes, race-free.

Tolerance: the kernels add float32 values in a tree, NumPy pairwise; both
are compared with a float64 sum at rtol 1e-5, atol 1e-5 * sqrt(n).
"""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.gpu.kernels import shared_memory_sum, warp_shuffle_sum
from minigrad.gpu.kernels import block_reduce, warp_reduce

SIZES = [1, 31, 255, 256, 257, 1000]
SUMS = [shared_memory_sum, warp_shuffle_sum]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("total", SUMS, ids=lambda f: f.__name__)
def test_sum_matches_numpy(total, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    result = total(x)
    assert result.shape == (1,) and result.dtype == np.float32
    np.testing.assert_allclose(result[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-5 * np.sqrt(n))


@pytest.mark.parametrize("total", SUMS, ids=lambda f: f.__name__)
def test_grid_stride_loop_covers_more_elements_than_threads(total, monkeypatch):
    module = block_reduce if total is shared_memory_sum else warp_reduce
    monkeypatch.setattr(module, "MAX_BLOCKS", 2)  # 512 threads for 1,500 elements
    x = np.arange(1500, dtype=np.float32)
    assert total(x)[0] == x.sum()  # integers below 2**24: exact in float32
    assert jit.last_launch_stats().blocks == 2


def test_tree_uses_a_barrier_per_step_and_one_atomic_per_block():
    shared_memory_sum(np.ones(600, np.float32))  # 3 blocks of 256
    stats = jit.last_launch_stats()
    assert stats.blocks == 3 and stats.atomics == 3
    assert stats.barriers == 3 * (1 + 8)  # one before the tree, one per halving of 256


def test_warp_shuffles_replace_most_barriers_and_shared_traffic():
    warp_shuffle_sum(np.ones(600, np.float32))
    stats = jit.last_launch_stats()
    assert stats.blocks == 3 and stats.atomics == 3
    assert stats.barriers == 3  # one per block
    assert stats.shared_store_bytes == 3 * 8 * 4  # each warp's lane 0 writes its total
    assert stats.shuffles == 3 * (256 * 5 + 32 * 5)  # five steps by all threads, five by the first warp


def test_sum_refuses_2d_input():
    with pytest.raises(ValueError, match=r"shared_memory_sum: 'x' must be 1-D.*ravel"):
        shared_memory_sum(np.zeros((2, 2), np.float32))
