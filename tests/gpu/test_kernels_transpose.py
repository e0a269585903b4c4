"""The padded-tile transpose matches NumPy at edge sizes, reads and writes whole sectors and has no bank conflicts."""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.gpu.kernels import shared_memory_transpose
from minigrad.gpu.kernels import transpose as module


@pytest.mark.parametrize("shape", [(1, 1), (1, 70), (70, 1), (32, 32), (33, 31), (64, 96), (45, 77)])
def test_transpose_matches_numpy(shape):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(shared_memory_transpose(x), x.T)


def test_whole_tiles_use_every_byte_of_their_sectors_and_no_bank_conflicts():
    shared_memory_transpose(np.zeros((64, 96), np.float32))
    s = jit.last_launch_stats()
    assert s.sector_efficiency == 1.0
    assert (s.shared_max_conflict, s.shared_bank_conflicts) == (1, 0)
    assert s.barriers == s.blocks == 6


def test_without_the_padding_a_column_of_the_tile_is_a_32_way_conflict(monkeypatch):
    monkeypatch.setattr(module, "PITCH", module.TILE)  # the kernel reads the module's constant when it runs
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    np.testing.assert_array_equal(shared_memory_transpose(x), x.T)
    assert jit.last_launch_stats().shared_max_conflict == 32


def test_rejects_what_is_not_a_float32_matrix():
    with pytest.raises(ValueError, match="shared_memory_transpose: needs a matrix"):
        shared_memory_transpose(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="float32"):
        shared_memory_transpose(np.zeros((2, 2)))
