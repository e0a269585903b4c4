"""A kernel written only here - a 1-D stencil with a shared-memory halo - runs correctly: the simulator is general."""

import numpy as np
import pytest

from minigrad.gpu import SharedMemoryRaceError, jit

RADIUS = 3
BLOCK = 32


@jit.rawkernel()
def moving_sum(x, out, n):
    """out[i] = sum of x[i - RADIUS .. i + RADIUS] (zero outside x), each block staging its window plus halos."""
    window = jit.shared_memory(np.float32, BLOCK + 2 * RADIUS)
    tid = jit.threadIdx.x
    i = jit.grid(1)
    if i < n:
        window[tid + RADIUS] = x[i]
    else:
        window[tid + RADIUS] = np.float32(0)
    if tid < RADIUS:
        right = i + BLOCK  # i is unsigned: test i >= RADIUS, since i - RADIUS >= 0 is always true
        window[tid] = x[i - RADIUS] if i >= RADIUS else np.float32(0)
        window[tid + BLOCK + RADIUS] = x[right] if right < n else np.float32(0)
    jit.syncthreads()
    if i < n:
        total = np.float32(0)
        for offset in range(2 * RADIUS + 1):
            total += window[tid + offset]
        out[i] = total


@jit.rawkernel()
def moving_sum_without_barrier(x, out, n):
    window = jit.shared_memory(np.float32, BLOCK + 2 * RADIUS)
    tid = jit.threadIdx.x
    i = jit.grid(1)
    window[tid + RADIUS] = x[i] if i < n else np.float32(0)
    if tid < RADIUS:
        window[tid] = x[i - RADIUS] if i >= RADIUS else np.float32(0)
        window[tid + BLOCK + RADIUS] = x[i + BLOCK] if i + BLOCK < n else np.float32(0)
    if i < n:
        total = np.float32(0)
        for offset in range(2 * RADIUS + 1):
            total += window[tid + offset]
        out[i] = total


def _reference(x):
    padded = np.concatenate([np.zeros(RADIUS), x.astype(np.float64), np.zeros(RADIUS)])
    return np.convolve(padded, np.ones(2 * RADIUS + 1), mode="valid")


@pytest.mark.parametrize("n", [1, 32, 100])
def test_stencil_with_shared_halo_matches_numpy(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    moving_sum[(n + BLOCK - 1) // BLOCK, BLOCK](x, out, n)
    np.testing.assert_allclose(out, _reference(x), rtol=1e-5, atol=1e-5)


def test_stencil_without_its_barrier_is_a_race():
    x = np.ones(64, dtype=np.float32)
    with pytest.raises(SharedMemoryRaceError, match=r"kernel 'moving_sum_without_barrier', block \(0, 0, 0\), thread"):
        moving_sum_without_barrier[2, BLOCK](x, np.zeros(64, np.float32), 64)
