"""The tile-phase picture: its traffic numbers equal the simulator's counters for the library's tiled matmul."""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.gpu.kernels import tiled_matmul
from minigrad.viz.tile_phases import TilePhases, draw_tile_phase, tile_traffic


@pytest.mark.parametrize("m, k, n", [(32, 32, 16), (20, 35, 18)])
def test_traffic_matches_the_simulator(m, k, n):
    gen = np.random.default_rng(0)
    tiled_matmul(gen.standard_normal((m, k)).astype(np.float32), gen.standard_normal((k, n)).astype(np.float32))
    stats, traffic = jit.last_launch_stats(), tile_traffic(m, k, n)
    assert stats.global_load_bytes == traffic.global_loads
    assert stats.shared_load_bytes == traffic.shared_loads
    assert stats.barriers == 2 * traffic.phases * traffic.grid[0] * traffic.grid[1]
    assert traffic.untiled_global_loads == 8 * m * n * k


def test_the_figure_marks_the_staged_tiles_and_is_deterministic():
    svg = draw_tile_phase(48, 64, 32, 16, block=(1, 2), phase=2).svg
    assert svg == draw_tile_phase(48, 64, 32, 16, block=(1, 2), phase=2).svg
    assert "stages tile (2, 2) of a and (2, 1) of b" in svg
    assert svg.count('fill="#ffe4cc"') == 2 + 1  # the two staged tiles and the legend
    assert svg.count('fill="#dcf2e2"') == 2 * 2 + 1  # tiles of phases 0 and 1, and the legend


def test_bad_blocks_and_phases_are_explained():
    with pytest.raises(ValueError, match="phase 4 outside 0..3"):
        draw_tile_phase(32, 64, 32, 16, phase=4)
    with pytest.raises(ValueError, match="block"):
        draw_tile_phase(32, 64, 32, 16, block=(2, 0))
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        tile_traffic(4, 0, 4)


def test_the_widget_shell_steps_phases():
    phases = TilePhases(32, 48, 32)
    phases.show(block=(1, 1), phase=2)
    assert "phase 2 of 3" in phases.figure().svg
    pytest.importorskip("ipywidgets")
    phases.widget
    phases._phase.value = 1
    assert phases.phase == 1 and "phase 1 of 3" in phases._picture.value
