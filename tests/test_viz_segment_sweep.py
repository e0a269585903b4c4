"""The segment sweep and its costs: peaks read from the tracker, the layer model, FLOPs, the figure, the slider."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.memory import track
from minigrad.memory.timeline import category_totals
from minigrad.viz.checkpoint_costs import (
    chain_layers, deep_mlp, layer_costs, measure_placement, predicted_peak, uniform_segments,
)
from minigrad.viz.segment_sweep import SegmentSweep, draw_segment_sweep, record_segment_sweep, theory_bytes
from svg_text_boxes import SVG, assert_legible_and_apart

DEPTH, WIDTH, BATCH = 9, 16, 8


@pytest.fixture(scope="module")
def chain():
    x = mt.tensor(np.random.default_rng(0).standard_normal((BATCH, WIDTH)).astype(np.float32))
    return chain_layers(deep_mlp(DEPTH, WIDTH)), x


@pytest.fixture(scope="module")
def sweep(chain):
    layers, x = chain
    return record_segment_sweep(layers, x, repeats=1)


def _data_peak(tracker):
    rows = [dict(tracker.baseline_by_category), *category_totals(tracker.timeline, tracker.baseline_by_category)]
    return max(sum(v for c, v in r.items() if c not in ("parameter", "gradient", "optimizer_state")) for r in rows)


def test_one_segment_measures_what_the_tracker_sees_in_a_plain_run(chain, sweep):
    layers, x = chain
    model = deep_mlp(DEPTH, WIDTH)  # the same seed: the same weights
    with track() as tracker:
        model(x).sum().backward()
    plain = sweep.point(1).cost
    assert plain.peak_bytes == _data_peak(tracker)
    activations = max(r["activation"] for r in category_totals(tracker.timeline, tracker.baseline_by_category))
    assert plain.activation_peak == activations == DEPTH * BATCH * WIDTH * 4  # each ReLU saves its output
    assert plain.recompute_flops == 0 and all(p.grad is None for layer in layers for p in layer.parameters())


def test_flops_and_the_layer_model(chain, sweep):
    layers, x = chain
    costs = layer_costs(layers, x)
    assert [c.flops for c in costs] == [2 * BATCH * WIDTH * WIDTH + BATCH * WIDTH] * DEPTH
    assert {c.output_bytes for c in costs} == {BATCH * WIDTH * 4}
    layer = BATCH * WIDTH * 4
    k3 = sweep.point(3).cost  # 3 segments of 3: inputs of all three, then 3 recomputed layers at most
    assert k3.predicted_bytes == predicted_peak(costs, uniform_segments(DEPTH, 3), layer) == 6 * layer
    assert k3.recompute_share == pytest.approx(6 / 9)
    assert sweep.point(1).cost.predicted_bytes == (DEPTH + 1) * layer
    for p in sweep.points:  # the tracker also sees the gradients in flight (two at most) and the loss's 2 scalars
        assert p.cost.predicted_bytes <= p.cost.peak_bytes <= p.cost.predicted_bytes + 2 * layer + 8
    assert min(p.cost.peak_bytes for p in sweep.points) == sweep.point(3).cost.peak_bytes  # sqrt(9) = 3
    assert theory_bytes(9, layer, 3) == 6 * layer


def test_a_placement_is_measured_the_same_every_time(chain):
    layers, x = chain
    segments = [(0, 1, False), (2, 6, True), (7, 8, False)]
    assert measure_placement(layers, x, segments) == measure_placement(layers, x, segments)


def test_bad_segment_counts_are_clear_errors(chain):
    layers, x = chain
    with pytest.raises(ValueError, match="segments must be counts from 1 to 9"):
        record_segment_sweep(layers, x, segments=[0, 3])
    with pytest.raises(ValueError, match="repeats must be a positive int"):
        record_segment_sweep(layers, x, repeats=0)
    with pytest.raises(TypeError, match="chain_layers: expected a Sequential"):
        record_segment_sweep(3, x)


@pytest.mark.parametrize("current", [None, 1, 3, 9])
def test_the_figure_is_legible_deterministic_and_marks_sqrt_n(sweep, current):
    figure = draw_segment_sweep(sweep, current)
    assert figure.svg == draw_segment_sweep(sweep, current).svg
    assert_legible_and_apart(figure)
    root = ET.fromstring(figure.svg)
    assert [float(e.get("data-sqrt-n")) for e in root.iter(f"{SVG}line") if "data-sqrt-n" in e.attrib] == [3.0, 3.0]
    assert len([e for e in root.iter(f"{SVG}circle") if "data-k" in e.attrib]) == 2 * DEPTH  # peak and time
    rings = [int(e.get("data-current")) for e in root.iter(f"{SVG}circle") if "data-current" in e.attrib]
    assert rings == ([] if current is None else [current, current])


def test_a_64_layer_sweep_thins_its_labels_and_stays_apart():
    x = mt.tensor(np.ones((2, 4), np.float32))
    sweep = record_segment_sweep(deep_mlp(64, 4), x, segments=[1, 8, 64], timed=False)
    assert_legible_and_apart(draw_segment_sweep(sweep, 8))


def test_the_widget_follows_its_slider(sweep):
    widget = SegmentSweep(sweep)
    assert widget.current == 3  # nearest sqrt(n)
    widget.set(1)
    assert widget.describe().startswith("k = 1: peak")
    with pytest.raises(ValueError, match="current must be a measured segment count"):
        widget.set(10)
    assert "data-current" not in widget.static_figure().svg
    pytest.importorskip("ipywidgets")
    widget.widget
    widget._slider.value = 9
    assert widget.current == 9 and "k = 9" in widget._readout.value and 'data-current="9"' in widget._picture.value
