"""On an NVIDIA GPU, a CachingAllocator serves CuPy's arrays from one device buffer. Marked ``gpu``; skips without one."""

import numpy as np
import pytest

from minigrad.memory import AllocatorOutOfMemoryError, CupyCachingAllocator
from minigrad.memory.allocator.sizes import MiB

pytestmark = pytest.mark.gpu


def test_cupy_arrays_live_in_blocks_of_the_one_buffer_and_go_back_to_the_cache(cupy):
    pool = CupyCachingAllocator(64 * MiB)
    start, end = pool.buffer.ptr, pool.buffer.ptr + 64 * MiB
    with pool.serving():
        before = pool.allocator.allocated_bytes
        x = cupy.arange(1000, dtype=cupy.float32)
        y = x * 2
        assert start <= x.data.ptr < end and start <= y.data.ptr < end
        assert pool.allocator.allocated_bytes - before == 2 * 4096  # 4,000 bytes each, rounded to 512
        np.testing.assert_array_equal(y.get(), np.arange(1000, dtype=np.float32) * 2)
        del x, y
        assert pool.allocator.allocated_bytes == before
        assert pool.allocator.reserved_bytes >= 2 * MiB  # cached, not given back
        with pytest.raises(AllocatorOutOfMemoryError):
            cupy.empty(65 * MiB, dtype=cupy.uint8)
        z = cupy.ones(10 * MiB, dtype=cupy.uint8)  # the error changed nothing: the next allocation works
        assert int(z.sum()) == 10 * MiB
    assert pool.allocator.memory_stats()["num_ooms"] == 1
