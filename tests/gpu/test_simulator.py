"""The simulator runs correct kernels to the right answer: every thread, every block, real barriers.

Tolerances: float32 kernels are compared with float32 NumPy at rtol 1e-5
(sums and dot products are accumulated in a different order).
"""

import numpy as np
import pytest
import sample_kernels as k

from minigrad.gpu import jit

RTOL, ATOL = 1e-5, 1e-5


def _random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_elementwise_add_covers_every_element_and_no_more():
    n = 1000  # not a multiple of the block: the last block has idle threads
    x, y = _random(n, 0), _random(n, 1)
    out = np.full(n + 8, -7.0, dtype=np.float32)
    k.add[(n + 127) // 128, 128](x, y, out[:n], n)
    np.testing.assert_array_equal(out[:n], x + y)
    assert (out[n:] == -7.0).all()


@pytest.mark.parametrize("grid", [1, 3, 64])
def test_grid_stride_loop_covers_n_with_any_grid(grid):
    n = 777
    x, y = _random(n, 2), _random(n, 3)
    out = np.zeros(n, dtype=np.float32)
    k.saxpy_grid_stride[grid, 32](np.float32(0.5), x, y, out, n)
    np.testing.assert_allclose(out, np.float32(0.5) * x + y, rtol=RTOL, atol=ATOL)


def test_2d_grid_of_2d_blocks():
    rows, cols = 37, 50
    x, y = _random((rows, cols), 4), _random((rows, cols), 5)
    out = np.zeros((rows, cols), dtype=np.float32)
    block = (16, 8)
    grid = ((cols + 15) // 16, (rows + 7) // 8)
    k.add_2d[grid, block](x, y, out, rows, cols)
    np.testing.assert_array_equal(out, x + y)


def test_3d_block_threads_each_see_their_own_coordinates():
    @jit.rawkernel()
    def record_coordinates(out):
        x, y, z = jit.grid(3)
        gx, gy, _ = jit.gridsize(3)
        out[z * gy * gx + y * gx + x] = x * 10000 + y * 100 + z

    grid, block = (2, 1, 3), (3, 2, 2)
    shape = tuple(g * b for g, b in zip(grid, block))  # (x, y, z) extents
    out = np.full(shape[0] * shape[1] * shape[2], -1, dtype=np.int64)
    record_coordinates[grid, block](out)
    x, y, z = np.meshgrid(*(np.arange(s) for s in shape), indexing="ij")
    expected = np.zeros_like(out)
    expected[(z * shape[1] * shape[0] + y * shape[0] + x).ravel()] = (x * 10000 + y * 100 + z).ravel()
    np.testing.assert_array_equal(out, expected)


def test_shared_memory_block_reduction_of_4096_elements():
    n = 4096
    x = _random(n, 6)
    out = np.zeros(1, dtype=np.float32)
    k.block_sum[n // k.BLOCK, k.BLOCK](x, out, n)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def test_reduction_with_a_partial_last_block():
    n = 1000
    x = _random(n, 7)
    out = np.zeros(1, dtype=np.float32)
    k.block_sum[(n + k.BLOCK - 1) // k.BLOCK, k.BLOCK](x, out, n)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def test_tiled_matmul_64x64_with_16x16_tiles_matches_numpy():
    m = kk = n = 64
    a, b = _random((m, kk), 8), _random((kk, n), 9)
    c = np.zeros((m, n), dtype=np.float32)
    k.tiled_matmul[(n // k.TILE, m // k.TILE), (k.TILE, k.TILE)](a, b, c, m, kk, n)
    np.testing.assert_allclose(c, a @ b, rtol=RTOL, atol=1e-4)


def test_tiled_matmul_with_ragged_edges():
    m, kk, n = 20, 33, 17  # no dimension a multiple of the tile
    a, b = _random((m, kk), 10), _random((kk, n), 11)
    c = np.zeros((m, n), dtype=np.float32)
    grid = ((n + k.TILE - 1) // k.TILE, (m + k.TILE - 1) // k.TILE)
    k.tiled_matmul[grid, (k.TILE, k.TILE)](a, b, c, m, kk, n)
    np.testing.assert_allclose(c, a @ b, rtol=RTOL, atol=1e-4)


def test_shared_and_global_atomics_build_a_histogram():
    n, bins = 500, 16
    values = np.random.default_rng(12).integers(0, bins, n).astype(np.int32)
    counts = np.zeros(bins, dtype=np.int32)
    k.histogram[(n + 63) // 64, 64](values, counts, n, bins)
    np.testing.assert_array_equal(counts, np.bincount(values, minlength=bins))


def test_dynamic_shared_memory_sized_at_launch():
    n, block = 96, 32
    x = _random(n, 13)
    out = np.zeros(n, dtype=np.float32)
    k.reverse_dynamic[n // block, block](x, out, n, shared_mem=block * 4)
    np.testing.assert_array_equal(out, x.reshape(-1, block)[:, ::-1].ravel())


def test_shared_memory_is_per_block_and_fresh_per_launch():
    @jit.rawkernel()
    def block_total(out):
        total = jit.shared_memory(np.int32, 1)  # cupyx.jit's atomic_add takes no int64
        if jit.threadIdx.x == 0:
            total[0] = 0
        jit.syncthreads()
        jit.atomic_add(total, 0, jit.blockIdx.x + 1)
        jit.syncthreads()
        if jit.threadIdx.x == 0:
            out[jit.blockIdx.x] = total[0]

    out = np.zeros(3, dtype=np.int32)
    for _ in range(2):
        block_total[3, 8](out)
        np.testing.assert_array_equal(out, [8, 16, 24])


def test_barrier_inside_a_loop_that_all_threads_take_is_a_real_barrier():
    @jit.rawkernel()
    def rotate(x, out, rounds):
        ring = jit.shared_memory(np.int32, 8)
        tid = jit.threadIdx.x
        ring[tid] = x[tid]
        jit.syncthreads()
        for _ in range(rounds):
            left = ring[(tid + 7) % 8]
            jit.syncthreads()
            ring[tid] = left
            jit.syncthreads()
        out[tid] = ring[tid]

    x = np.arange(8, dtype=np.int32)
    out = np.zeros(8, dtype=np.int32)
    rotate[1, 8](x, out, 3)
    np.testing.assert_array_equal(out, np.roll(x, 3))
    assert jit.last_launch_stats().barriers == 1 + 2 * 3


def test_closure_variables_and_imported_names_work_in_a_kernel_with_barriers():
    from minigrad.gpu.jit import shared_memory, syncthreads, threadIdx

    scale = np.float32(3)

    @jit.rawkernel()
    def scaled_mirror(x, out):
        staged = shared_memory(np.float32, 4)
        staged[threadIdx.x] = x[threadIdx.x] * scale
        syncthreads()
        out[threadIdx.x] = staged[3 - threadIdx.x]

    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, dtype=np.float32)
    scaled_mirror[1, 4](x, out)
    np.testing.assert_array_equal(out, (x * 3)[::-1])


def test_float32_arithmetic_stays_float32():
    @jit.rawkernel()
    def accumulate(x, out, n):
        acc = np.float32(0)
        for i in range(n):
            acc += x[i]
        out[0] = acc

    x = np.full(3, 1e8, dtype=np.float32)
    x[1] = 1.0  # lost in float32 (1e8 + 1 rounds to 1e8), kept in float64
    out = np.zeros(1, dtype=np.float64)
    accumulate[1, 1](x, out, 3)
    assert out[0] == np.float32(2e8)


def test_kernel_calling_a_device_function():
    rows, cols = 5, 7
    x = _random((rows, cols), 14)
    bias = _random(cols, 15)
    out = np.zeros((rows, cols), np.float32)
    k.bias_relu[(1, 1), (8, 8)](x, bias, out, rows, cols)
    np.testing.assert_array_equal(out, np.maximum(x + bias, 0))


def test_barrier_inside_an_if_block_every_thread_takes():
    @jit.rawkernel()
    def maybe_mirror(x, out, mirror):
        staged = jit.shared_memory(np.float32, 8)
        tid = jit.threadIdx.x
        staged[tid] = x[tid]
        if mirror:  # the same for the whole block: a legal place for a barrier
            jit.syncthreads()
            out[tid] = staged[7 - tid]
        else:
            out[tid] = staged[tid]

    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    maybe_mirror[1, 8](x, out, True)
    np.testing.assert_array_equal(out, x[::-1])
    maybe_mirror[1, 8](x, out, False)
    np.testing.assert_array_equal(out, x)


def test_lane_ids_follow_the_linear_thread_index_in_2d_blocks():
    @jit.rawkernel()
    def record_lanes(out):
        linear = jit.threadIdx.y * jit.blockDim.x + jit.threadIdx.x
        out[linear] = jit.laneid() + 100 * (linear // np.uint32(jit.warpsize))  # warpsize is an int32

    out = np.zeros(64, np.int64)
    record_lanes[1, (16, 4)](out)
    np.testing.assert_array_equal(out, np.arange(64) % 32 + 100 * (np.arange(64) // 32))
