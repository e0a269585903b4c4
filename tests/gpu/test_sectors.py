"""Sectors per warp instruction and shared-memory bank conflicts, against cases worked out by hand.

A warp is 32 consecutive threads of a block (x fastest); one warp instruction
costs the distinct 32-byte sectors its threads touch, and a shared access
costs as many passes as the most distinct 4-byte words it asks of one of the
32 banks. Sector efficiency = requested bytes / (sectors x 32).
"""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.gpu.simulator.sectors import conflict_degree, sectors_touched


@jit.rawkernel()
def copy(x, out, n):
    i = jit.grid(1)
    if i < n:
        out[i] = x[i]


@jit.rawkernel()
def every_other(x, out, n):
    i = jit.grid(1)
    if i < n:
        out[i] = x[2 * i]


@jit.rawkernel()
def first_column(a, out, rows):
    i = jit.grid(1)
    if i < rows:
        out[i] = a[i, 0]


@jit.rawkernel()
def tile_transpose(a, out, pitch):
    """A 32 x 32 block writes a's tile by rows into shared memory and reads it back by columns."""
    tile = jit.shared_memory(np.float32, 32 * 33)
    tx = jit.threadIdx.x
    ty = jit.threadIdx.y
    p = np.uint32(pitch)
    tile[ty * p + tx] = a[ty, tx]
    jit.syncthreads()
    out[ty, tx] = tile[tx * p + ty]


@jit.rawkernel()
def broadcast_one_word(out):
    value = jit.shared_memory(np.float32, 32)
    t = jit.threadIdx.x
    if t == 0:
        value[0] = np.float32(3)
    jit.syncthreads()
    out[t] = value[0]


def test_a_coalesced_float32_copy_uses_every_byte_of_its_sectors():
    n = 1024
    x, out = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    copy[n // 128, 128](x, out, n)
    s = jit.last_launch_stats()
    # 32 warps, each one load and one store of 128 contiguous bytes = 4 sectors
    assert (s.global_load_requests, s.global_load_sectors) == (32, 128)
    assert (s.global_store_requests, s.global_store_sectors) == (32, 128)
    assert s.sector_efficiency == 1.0 and s.sector_bytes == s.global_bytes == 8 * n


def test_stride_two_reads_use_half_of_each_sector():
    n = 1024
    x, out = np.arange(2 * n, dtype=np.float32), np.zeros(n, np.float32)
    every_other[n // 128, 128](x, out, n)
    s = jit.last_launch_stats()
    assert s.global_load_sectors == 32 * 8  # 32 floats 8 bytes apart span 256 bytes = 8 sectors per warp
    assert s.load_sector_efficiency == 0.5 and s.store_sector_efficiency == 1.0
    assert s.sector_efficiency == pytest.approx(8 * n / (32 * (256 + 128)))


def test_a_column_of_a_row_major_matrix_costs_a_sector_per_thread():
    a, out = np.zeros((256, 256), np.float32), np.zeros(256, np.float32)
    first_column[2, 128](a, out, 256)
    s = jit.last_launch_stats()
    assert s.global_load_sectors == 256  # each thread's float32 lies in another row, 1 KiB apart
    assert s.load_sector_efficiency == 0.125


def test_a_strided_view_is_counted_where_its_elements_lie():
    base = np.zeros((256, 2), np.float32)
    out = np.zeros(256, np.float32)
    copy[2, 128](base[:, 0], out, 256)  # every other float32 of the buffer
    s = jit.last_launch_stats()
    assert s.load_sector_efficiency == 0.5


def test_reading_a_32_by_32_shared_tile_by_columns_is_a_32_way_conflict():
    a = np.arange(1024, dtype=np.float32).reshape(32, 32)
    out = np.zeros_like(a)
    tile_transpose[1, (32, 32)](a, out, 32)
    np.testing.assert_array_equal(out, a.T)
    s = jit.last_launch_stats()
    assert s.shared_requests == 64  # 32 warps, one store and one load each
    assert s.shared_max_conflict == 32  # a column of a 32-wide float32 tile lies in one bank
    assert s.shared_bank_conflicts == 32 * 31  # the 32 loads take 32 passes each; the stores are conflict-free
    assert s.sector_efficiency == 1.0  # global memory is read and written by rows


def test_padding_the_tile_to_33_columns_removes_the_conflicts():
    a = np.arange(1024, dtype=np.float32).reshape(32, 32)
    out = np.zeros_like(a)
    tile_transpose[1, (32, 32)](a, out, 33)
    np.testing.assert_array_equal(out, a.T)
    s = jit.last_launch_stats()
    assert (s.shared_max_conflict, s.shared_bank_conflicts) == (1, 0)
    assert "worst bank conflict 1-way" in s.summary() and "100% of their bytes used" in s.summary()


def test_threads_reading_the_same_word_share_it():
    out = np.zeros(32, np.float32)
    broadcast_one_word[1, 32](out)
    s = jit.last_launch_stats()
    assert (s.shared_max_conflict, s.shared_bank_conflicts) == (1, 0)


def test_the_helpers_count_by_hand():
    assert sectors_touched([4 * t for t in range(32)]) == 4
    assert sectors_touched([1024 * t for t in range(32)]) == 32
    assert conflict_degree([33 * t for t in range(32)]) == 1
    assert conflict_degree([32 * t for t in range(32)]) == 32
    assert conflict_degree([2 * t for t in range(32)]) == 2  # stride 2 words: two words per even bank
    assert conflict_degree([0] * 32) == 1


def test_intensity_per_requested_byte_or_per_sector_byte():
    a, out = np.zeros((256, 256), np.float32), np.zeros(256, np.float32)
    first_column[2, 128](a, out, 256)
    s = jit.last_launch_stats()
    assert s.arithmetic_intensity(256) == 256 / s.global_bytes
    assert s.arithmetic_intensity(256, traffic="sectors") == 256 / (32 * s.global_sectors)
    with pytest.raises(ValueError, match="'requested' or 'sectors'"):
        s.arithmetic_intensity(1, traffic="dram")


@jit.rawkernel()
def masked_column_walk(mask, x, out, rows, cols):
    """Thread (tx, ty) walks rows ty, ty + 8, ... of column tx and reads x only where mask > 0."""
    col = jit.threadIdx.x
    row = jit.threadIdx.y
    while row < rows:
        value = np.float32(0)
        if mask[row, col] > np.float32(0):
            value = x[row, col]
        out[row, col] = value
        row += np.uint32(8)


def test_a_load_some_threads_skip_meets_its_warp_in_the_next_pass():
    """A warp's masked load in a loop is one instruction per pass, however many threads skipped earlier passes."""
    rows, cols = 32, 32
    rng = np.random.default_rng(0)
    mask = rng.choice([-1.0, 1.0], size=(rows, cols)).astype(np.float32)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros_like(x)
    masked_column_walk[1, (32, 8)](mask, x, out, rows, cols)
    np.testing.assert_array_equal(out, np.where(mask > 0, x, 0))
    s = jit.last_launch_stats()
    # every row of mask and out is one warp instruction of 4 sectors; x's rows at most 4 sectors each
    assert s.global_store_sectors == 4 * rows and s.global_store_requests == rows
    assert 4 * rows <= s.global_load_sectors <= 8 * rows


@jit.rawkernel()
def float64_row(out):
    values = jit.shared_memory(np.float64, 64)
    t = jit.threadIdx.x
    values[t] = np.float64(t)
    jit.syncthreads()
    out[t] = values[t]


def test_an_8_byte_element_spans_two_banks():
    """32 threads reading 32 adjacent float64 ask for 64 words: two per bank, so two passes (the least 256 bytes
    can take through 32 banks of 4 bytes; the counter reports it as degree 2)."""
    out = np.zeros(32, np.float64)
    float64_row[1, 32](out)
    np.testing.assert_array_equal(out, np.arange(32))
    s = jit.last_launch_stats()
    assert s.shared_max_conflict == 2
    assert s.global_store_sectors == 8  # 256 bytes


def test_warps_of_different_blocks_never_merge():
    """Blocks of 48 threads: warps of 32 and 16 threads; 96 floats in 2 blocks touch 4 + 2 + 4 + 2 sectors."""
    x, out = np.arange(96, dtype=np.float32), np.zeros(96, np.float32)
    copy[2, 48](x, out, 96)
    s = jit.last_launch_stats()
    assert (s.global_load_requests, s.global_load_sectors) == (4, 12)


def test_counting_many_blocks_at_once_or_a_few_at_a_time_gives_the_same_counts(monkeypatch):
    from minigrad.gpu.kernels import shared_memory_transpose
    from minigrad.gpu.simulator import sectors

    x = np.arange(64 * 96, dtype=np.float32).reshape(64, 96)
    strided = np.arange(4096, dtype=np.float32)

    def counts():
        result = []
        shared_memory_transpose(x)  # 6 blocks with shared memory and a barrier each
        result.append(jit.last_launch_stats())
        every_other[7, 96](strided, np.zeros(672, np.float32), 672)  # 7 blocks of 3 warps
        result.append(jit.last_launch_stats())
        return [(s.global_load_sectors, s.global_store_sectors, s.global_load_requests, s.shared_wavefronts,
                 s.shared_requests) for s in result]

    whole = counts()
    monkeypatch.setattr(sectors, "_FLUSH_NUMBERS", 30)  # count after every block instead of once per launch
    assert counts() == whole
