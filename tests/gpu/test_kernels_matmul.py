"""The tiled matmul matches NumPy on the simulator for any m, k, n, with no race, OOB or divergent barrier.

Tolerance: float32 dot products of length k in a different order than
NumPy's, compared at rtol 1e-5, atol 1e-5 * sqrt(k).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.gpu import jit
from minigrad.gpu.kernels import tiled_matmul
from minigrad.gpu.kernels.matmul import TILE

SHAPES = [(1, 1, 1), (16, 16, 16), (17, 5, 33), (3, 40, 2), (20, 0, 4)]  # m, k, n: tile edges on every axis


@pytest.mark.parametrize("m, k, n", SHAPES)
def test_matches_numpy(m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(tiled_matmul(a, b), a @ b, rtol=1e-5, atol=1e-5 * np.sqrt(max(k, 1)))


@settings(max_examples=20)  # simulated launches: fewer examples than the suite default
@given(st.integers(1, 20), st.integers(0, 20), st.integers(1, 20))
def test_any_shape_matches_numpy(m, k, n):
    test_matches_numpy(m, k, n)


def test_tiles_cut_global_traffic_by_the_tile_size():
    size = 32  # 2 x 2 blocks, 2 phases each
    a = np.ones((size, size), np.float32)
    tiled_matmul(a, a)
    stats = jit.last_launch_stats()
    # each element of a and b is loaded once per block that needs it: size / TILE times, not size times
    assert stats.global_load_bytes == 2 * size * size * (size // TILE) * 4
    assert stats.global_store_bytes == size * size * 4
    # every thread reads 2 * TILE shared values per phase
    assert stats.shared_load_bytes == size * size * (size // TILE) * 2 * TILE * 4
    assert stats.barriers == 4 * 2 * 2  # 4 blocks, 2 phases, 2 barriers a phase


def test_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match=r"tiled_matmul: needs matrices \(m, k\) and \(k, n\), got shapes \(2, 3\) and \(2, 3\)"):
        tiled_matmul(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))
