"""The recompute timeline: the tracker's recompute marks, one burst per checkpointed segment inside backward."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.viz.checkpoint_costs import deep_mlp, uniform_segments
from minigrad.viz.figure_display import figure_png
from minigrad.viz.memory_timeline import phase_spans, plot_memory_timeline
from minigrad.viz.recompute_timeline import (
    RecomputeTimeline, plot_recompute_timelines, recompute_spans, record_step_timeline,
)

DEPTH, WIDTH, BATCH = 9, 16, 32
SMALLEST_POINTS = 8  # 11 px at the figures' 100 dpi


@pytest.fixture(scope="module")
def timeline():
    x = mt.tensor(np.random.default_rng(0).standard_normal((BATCH, WIDTH)).astype(np.float32))
    return RecomputeTimeline(deep_mlp(DEPTH, WIDTH), x)


def test_each_checkpointed_segment_recomputes_once_inside_backward(timeline):
    plain, checkpointed = timeline.trackers.values()
    assert recompute_spans(plain.timeline) == []
    bursts = recompute_spans(checkpointed.timeline)
    assert len(bursts) == 2  # uniform_segments(9, 3): two checkpointed segments
    backward = [(a, b) for phase, a, b in phase_spans(checkpointed.timeline) if phase == "backward"]
    assert backward[0][0] < bursts[0][0] and bursts[-1][1] <= backward[-1][1]
    assert all(e.phase.startswith("recompute") for a, b in bursts for e in checkpointed.timeline[a:b])
    assert checkpointed.peak < plain.peak


def test_without_checkpoints_the_step_is_the_plain_step():
    x = mt.tensor(np.ones((4, 8), np.float32))
    model = deep_mlp(3, 8)
    record_step_timeline(model, x, [(0, 2, False)])  # reports x: the next runs start from it
    a, b = (record_step_timeline(model, x, [(0, 2, False)]) for _ in range(2))
    assert [e[3:6] for e in a.timeline] == [e[3:6] for e in b.timeline]  # deterministic
    assert [p for p, _, _ in phase_spans(a.timeline)] == ["forward", "backward", "optimizer"]


def _texts(figure):
    return [t for t in figure.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
            if t.get_text().strip()]


def test_the_pair_is_readable_at_the_page_width(timeline):
    figure = plot_recompute_timelines(*timeline.trackers.values())
    png = figure_png(figure)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") <= 900  # shown at its natural size in a 900 px page
    assert min(t.get_fontsize() for t in _texts(figure)) >= SMALLEST_POINTS
    legend = [t.get_text() for t in figure.axes[1].get_legend().get_texts()]
    assert "recompute (backward)" in legend
    assert "recompute (backward)" not in [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    names = [t.get_text() for t in figure.axes[1].texts]
    assert names.count("backward") == 1 and not any("recompute" in n for n in names)


def test_chapter_08s_timeline_is_unchanged_by_the_recompute_shading(timeline):
    figure = plot_memory_timeline(timeline.trackers["without checkpointing"])
    assert [t.get_text() for t in figure.axes[0].texts] == ["forward", "backward", "optimizer"]
    assert figure.axes[0].texts[0].get_fontsize() == 7


def test_the_widget_toggles_between_the_two_steps(timeline):
    assert timeline.view == "with checkpointing" and "2 recompute bursts" in timeline.describe()
    with pytest.raises(ValueError, match="view must be one of"):
        timeline.set("both")
    assert len(timeline.static_figure().axes) == 2
    pytest.importorskip("ipywidgets")
    timeline.widget
    timeline._toggle.value = "without checkpointing"
    assert timeline.view == "without checkpointing" and "0 recompute bursts" in timeline._picture.value
    assert "data:image/png;base64," in timeline._picture.value
