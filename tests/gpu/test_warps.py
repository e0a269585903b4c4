"""Warp shuffles on the simulator: exact CUDA semantics, and a shuffle not all named lanes reach is an error."""

import numpy as np
import pytest
import sample_kernels as k

from minigrad.gpu import DivergentWarpError, KernelError, jit


def _reference_shuffle(x, kind, val_id, width=32):
    """What each lane of a full warp receives, from CUDA's definition."""
    out = np.empty_like(x)
    for lane in range(len(x)):
        start = lane - lane % width
        if kind == "down":
            source = lane + val_id if lane + val_id < start + width else lane
        elif kind == "up":
            source = lane - val_id if lane - val_id >= start else lane
        elif kind == "xor":
            source = lane ^ val_id if (lane ^ val_id) < start + width else lane
        else:
            source = start + val_id % width
        out[lane] = x[source]
    return out


def test_the_four_shuffles_match_cudas_definition():
    x = np.arange(64, dtype=np.float32) * 10
    down, up, xor, broadcast = (np.zeros(64, np.float32) for _ in range(4))
    k.warp_shuffles[1, 64](x, down, up, xor, broadcast)
    for warp in (slice(0, 32), slice(32, 64)):
        np.testing.assert_array_equal(down[warp], _reference_shuffle(x[warp], "down", 3))
        np.testing.assert_array_equal(up[warp], _reference_shuffle(x[warp], "up", 2, width=8))
        np.testing.assert_array_equal(xor[warp], _reference_shuffle(x[warp], "xor", 5))
        np.testing.assert_array_equal(broadcast[warp], _reference_shuffle(x[warp], "idx", 7, width=8))
    assert down[28] == x[31] and down[29] == x[29]  # lane 29 + 3 is past the warp: its own value
    assert jit.last_launch_stats().shuffles == 4 * 64


def test_warp_reduction_with_shfl_down_sync():
    n = 1000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.zeros(1, np.float32)
    k.warp_sum[(n + 127) // 128, 128](x, out, n)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
    stats = jit.last_launch_stats()
    assert stats.shuffles == 5 * 1024 and stats.atomics == 32 and stats.barriers == 0


def test_shuffle_inside_a_branch_only_some_lanes_take():
    @jit.rawkernel()
    def half_warp_shuffle(x, out):
        i = jit.threadIdx.x
        value = x[i]
        if i < 16:
            value = jit.shfl_down_sync(0xFFFFFFFF, value, 1)
        out[i] = value

    with pytest.raises(DivergentWarpError) as caught:
        half_warp_shuffle[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))
    message = str(caught.value)
    assert message.startswith("kernel 'half_warp_shuffle', block (0, 0, 0), warp 0: shfl_down_sync on line ")
    assert "with mask 0xffffffff waits for lanes that never call it: lane 16 (thread (16, 0, 0)) finished the kernel" in message
    assert "and 13 more lanes" in message


def test_the_same_branch_with_a_mask_of_the_lanes_that_take_it_is_fine():
    @jit.rawkernel()
    def half_warp_shuffle(x, out):
        i = jit.threadIdx.x
        value = x[i]
        if i < 16:
            value = jit.shfl_down_sync(0x0000FFFF, value, 1, width=16)
        out[i] = value

    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    half_warp_shuffle[1, 32](x, out)
    expected = x.copy()
    expected[:15] = x[1:16]
    np.testing.assert_array_equal(out, expected)


def test_full_mask_in_a_block_smaller_than_a_warp():
    @jit.rawkernel()
    def small_block(x, out):
        out[jit.threadIdx.x] = jit.shfl_down_sync(0xFFFFFFFF, x[jit.threadIdx.x], 1)

    with pytest.raises(DivergentWarpError, match=r"names lanes up to 31 in mask 0xffffffff, but this warp has only 16 threads.*0xffff"):
        small_block[1, 16](np.ones(16, np.float32), np.zeros(16, np.float32))


def test_reading_a_lane_outside_the_mask():
    @jit.rawkernel()
    def reads_outside(x, out):
        i = jit.threadIdx.x
        value = x[i]
        if i < 4:
            value = jit.shfl_down_sync(0xF, value, 2)
        out[i] = value

    with pytest.raises(DivergentWarpError, match=r"lane 2 \(thread \(2, 0, 0\)\) reads lane 4 .* not in mask 0xf"):
        reads_outside[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))


def test_shuffle_and_barrier_in_one_kernel():
    @jit.rawkernel()
    def block_sum_by_warps(x, out):
        partial = jit.shared_memory(np.float32, 4)
        i = jit.threadIdx.x
        total = x[i]
        offset = 16
        while offset > 0:
            total += jit.shfl_down_sync(0xFFFFFFFF, total, offset)
            offset //= 2
        if jit.laneid() == 0:
            partial[i // 32] = total
        jit.syncthreads()
        if i == 0:
            out[0] = partial[0] + partial[1] + partial[2] + partial[3]

    x = np.arange(128, dtype=np.float32)
    out = np.zeros(1, np.float32)
    block_sum_by_warps[1, 128](x, out)
    assert out[0] == x.sum()


def test_shuffle_outside_a_kernel_body_is_explained():
    with pytest.raises(KernelError, match=r"jit.shfl_down_sync\(...\) only works called directly in a kernel's code"):
        jit.shfl_down_sync(0xFFFFFFFF, 1.0, 1)
