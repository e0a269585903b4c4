"""The memory timeline: bands that add up to the tracker's totals, phases found, the event described, a widget."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.memory import track
from minigrad.memory.timeline import TimelineEvent
from minigrad.viz.figure_display import figure_png
from minigrad.viz.memory_timeline import (
    MemoryTimeline, describe_event, phase_spans, plot_memory_timeline, timeline_bands,
)


@pytest.fixture(scope="module")
def tracker():
    gen = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 5))
    opt = optim.Adam(model.parameters())
    x = mt.tensor(gen.standard_normal((8, 20)).astype(np.float32))
    y = mt.tensor(np.arange(8) % 5)
    with track(model, opt) as t:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    return t


def _event(index, phase, kind, category, nbytes, total, from_category=None):
    return TimelineEvent(index, 0, phase, kind, category, nbytes, total, "op", "mod", index, from_category)


def test_bands_add_up_to_the_running_total(tracker):
    events = tracker.timeline
    bands = timeline_bands(events, tracker.baseline_by_category)
    columns = list(zip(*bands.values()))
    assert len(columns) == len(events) + 1
    assert sum(columns[0]) == tracker.baseline
    for event, column in zip(events, columns[1:]):
        assert sum(column) == event.total
    assert max(sum(c) for c in columns) == tracker.peak


def test_a_relabelling_moves_bytes_between_bands():
    events = [_event(0, "forward", "alloc", "temporary", 512, 512),
              _event(1, "forward", "retag", "activation", 512, 512, "temporary"),
              _event(2, "backward", "free", "activation", -512, 0)]
    bands = timeline_bands(events)
    assert bands["temporary"] == [0, 512, 0, 0]
    assert bands["activation"] == [0, 0, 512, 0]


def test_the_step_has_its_three_phases_in_order(tracker):
    spans = phase_spans(tracker.timeline)
    assert [p for p, _, _ in spans] == ["forward", "backward", "optimizer"]
    assert all(start < end for _, start, end in spans)
    assert all(a[2] <= b[1] for a, b in zip(spans, spans[1:]))


def test_phase_spans_split_runs_and_skip_unmarked_events():
    events = [_event(0, None, "alloc", "input", 512, 512),
              _event(1, "eval:forward", "alloc", "activation", 512, 1024),
              _event(2, "eval:forward", "free", "activation", -512, 512),
              _event(3, "forward", "alloc", "activation", 512, 1024)]
    assert phase_spans(events) == [("eval:forward", 1, 3), ("forward", 3, 4)]


def test_describe_event_names_who_allocated_what():
    line = describe_event(_event(4, "backward", "alloc", "gradient", 2048, 4096))
    assert "event 4" in line and "backward" in line and "mod / op" in line and "allocates 2,048 B of gradient" in line
    assert "frees 512 B" in describe_event(_event(5, "optimizer", "free", "temporary", -512, 3584))


def test_the_figure_draws_and_marks_an_event(tracker):
    figure = plot_memory_timeline(tracker, at=3)
    assert figure_png(figure)[:8] == b"\x89PNG\r\n\x1a\n"
    assert describe_event(tracker.timeline[3]) in figure.axes[0].get_title()


def test_a_bad_event_number_or_no_events_is_a_clear_error(tracker):
    with pytest.raises(ValueError, match="at=10000 is not an event number"):
        plot_memory_timeline(tracker, at=10_000)
    with pytest.raises(ValueError, match="no events"):
        plot_memory_timeline([])


def test_the_widget_starts_at_the_peak_and_follows_its_slider(tracker):
    timeline = MemoryTimeline(tracker)
    assert timeline.events[timeline.at].total == max(e.total for e in timeline.events)
    pytest.importorskip("ipywidgets")
    widget = timeline.widget
    timeline._slider.value = 2
    assert timeline.at == 2
    assert "data:image/png;base64," in timeline._picture.value
    assert widget.children[0] is timeline._slider
