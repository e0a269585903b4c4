"""Per-launch counters are exact: bytes, atomics, barriers and threads, worked out by hand."""

import numpy as np
import sample_kernels as k

from minigrad.gpu import LaunchStats, jit


def test_counters_of_copy_through_shared_worked_out_by_hand():
    n = 100  # 4 blocks of 32 threads = 128 threads; 28 of the last block are idle
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    counter = np.zeros(1, dtype=np.int32)
    k.copy_through_shared[4, 32](x, out, counter, n)
    np.testing.assert_array_equal(out, 2 * x)
    assert counter[0] == 4

    stats = jit.last_launch_stats()
    assert isinstance(stats, LaunchStats)
    assert (stats.kernel, stats.grid, stats.block) == ("copy_through_shared", (4, 1, 1), (32, 1, 1))
    assert stats.blocks == 4
    assert stats.threads_launched == 128
    # each of the n active threads: one float32 global read (x[i]) and one global write (out[i])
    assert stats.global_load_bytes == n * 4
    assert stats.global_store_bytes == n * 4
    # ... and one shared write (staged[tid] = ...) and one shared read (staged[tid] * 2)
    assert stats.shared_store_bytes == n * 4
    assert stats.shared_load_bytes == n * 4
    # thread 0 of each block: one atomic (not counted in the byte counters)
    assert stats.atomics == 4
    # one syncthreads() passed by each of the 4 blocks
    assert stats.barriers == 4
    assert stats.global_bytes == 800 and stats.shared_bytes == 800
    assert stats.arithmetic_intensity(flops=n) == n / 800
    summary = stats.summary()
    assert "grid (4, 1, 1) x block (32, 1, 1) = 128 threads in 4 blocks" in summary
    assert "global memory: 400 B loaded, 400 B stored" in summary
    assert "atomics: 4   barriers passed (per block, summed): 4" in summary


def test_counters_of_the_tiled_matmul_match_the_tiling_formula():
    m = kk = n = 32
    tile = k.TILE
    a = np.ones((m, kk), np.float32)
    b = np.ones((kk, n), np.float32)
    c = np.zeros((m, n), np.float32)
    k.tiled_matmul[(n // tile, m // tile), (tile, tile)](a, b, c, m, kk, n)
    stats = jit.last_launch_stats()
    phases = kk // tile
    threads = m * n
    # per thread and phase: 2 global loads, 2 shared stores, 2 * TILE shared loads; 2 barriers per phase per block
    assert stats.global_load_bytes == threads * phases * 2 * 4
    assert stats.global_store_bytes == threads * 4
    assert stats.shared_store_bytes == threads * phases * 2 * 4
    assert stats.shared_load_bytes == threads * phases * 2 * tile * 4
    assert stats.barriers == (m // tile) * (n // tile) * phases * 2
    # tiling divides global reads by TILE compared with the naive 2 * k loads per output element
    assert stats.global_load_bytes * tile == threads * 2 * kk * 4


def test_each_launch_has_its_own_counters():
    x = np.ones(10, np.float32)
    k.add[1, 16](x, x, np.zeros(10, np.float32), 10)
    first = jit.last_launch_stats()
    k.add[1, 16](x, x, np.zeros(10, np.float32), 5)
    second = jit.last_launch_stats()
    assert first is not second
    assert (first.global_load_bytes, second.global_load_bytes) == (80, 40)
    assert second.as_dict()["global_store_bytes"] == 20
