"""The thread map: who handles which element agrees with a grid-stride kernel run on the simulator; the figure is deterministic."""

import numpy as np
import pytest

from minigrad.gpu import jit
from minigrad.viz.thread_map import MAX_ELEMENTS, ThreadMap, draw_thread_map, thread_assignment


@jit.rawkernel()
def record_writer(out, n):
    i = jit.grid(1)
    while i < n:
        out[i] = i // jit.blockDim.x * 0 + jit.blockIdx.x * 1000 + jit.threadIdx.x
        i += jit.gridsize(1)


@pytest.mark.parametrize("n, blocks, threads", [(40, 2, 8), (7, 3, 4), (100, 1, 16), (16, 2, 8)])
def test_grid_stride_assignment_matches_the_simulator(n, blocks, threads):
    out = np.full(n, -1, np.int64)
    record_writer[blocks, threads](out, n)
    plan = thread_assignment(n, blocks, threads)
    assert [b * 1000 + t for b, t in plan.writer] == out.tolist()
    assert sorted(i for work in plan.elements for i in work) == list(range(n))


def test_without_grid_stride_elements_past_the_grid_are_missed():
    plan = thread_assignment(40, 2, 8, grid_stride=False)
    assert plan.missed == 24 and plan.idle_threads == 0
    assert plan.writer[15] == (1, 7) and plan.writer[16] is None
    assert "never written" in plan.summary()


def test_idle_threads_in_the_last_pass():
    plan = thread_assignment(20, 2, 8)
    assert plan.passes == 2
    assert plan.idle_threads == 0 and plan.idle_in_last_pass == 12  # 16 threads, elements 16..19 in pass 1
    assert max(len(w) for w in plan.elements) == 2


def test_the_figure_is_deterministic_and_labels_cells():
    a = draw_thread_map(20, 2, 8).svg
    assert a == draw_thread_map(20, 2, 8).svg
    assert ">block 1<" in a and ">1.3<" in a and ">idle<" in a
    assert "#fde2e2" not in a and ">pass 1<" in a  # no element missed with a grid-stride loop
    assert "#fde2e2" in draw_thread_map(20, 2, 8, grid_stride=False).svg


def test_bad_launches_are_explained():
    with pytest.raises(ValueError, match="blocks must be an int >= 1"):
        thread_assignment(10, 0, 4)
    with pytest.raises(ValueError, match=f"more than {MAX_ELEMENTS} cells"):
        draw_thread_map(10_000, 4, 16)


def test_the_widget_shell_follows_set():
    explorer = ThreadMap(n=12, blocks=1, threads=4)
    explorer.set(grid_stride=False)
    assert explorer.assignment().missed == 8
    assert explorer.figure().svg == draw_thread_map(12, 1, 4, grid_stride=False).svg
    pytest.importorskip("ipywidgets")
    explorer.widget
    explorer._n.value = 30
    assert explorer.n == 30 and "svg" in explorer._picture.value


def test_slider_labels_are_as_wide_as_their_text():
    pytest.importorskip("ipywidgets")
    explorer = ThreadMap()
    explorer.widget
    sliders = (explorer._n, explorer._blocks, explorer._threads)
    assert [s.description for s in sliders] == ["n elements", "blocks", "threads/block"]
    for slider in sliders:  # "initial": the label takes its text's width instead of a fixed one that cuts it
        assert slider.style.description_width == "initial", slider.description
