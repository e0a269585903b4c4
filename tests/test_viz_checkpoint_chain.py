"""The checkpoint chain: cuts and segment choices from clicks, each placement measured by the tracker, the figure."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.viz.checkpoint_chain import CheckpointChain, draw_checkpoint_chain
from minigrad.viz.checkpoint_costs import deep_mlp, measure_placement
from svg_text_boxes import SVG, assert_legible_and_apart

DEPTH, WIDTH, BATCH = 9, 16, 8


@pytest.fixture(scope="module")
def chain():
    x = mt.tensor(np.random.default_rng(0).standard_normal((BATCH, WIDTH)).astype(np.float32))
    return CheckpointChain(deep_mlp(DEPTH, WIDTH), x)


def _marks(figure, attribute):
    return [int(e.get(attribute)) for e in ET.fromstring(figure.svg).iter() if attribute in e.attrib]


def test_it_starts_from_checkpoint_sequentials_sqrt_n_cut(chain):
    assert chain.segments == [(0, 2, True), (3, 5, True), (6, 8, False)]
    assert chain.cost == measure_placement(chain.layers, chain.x, chain.segments)


def test_cuts_and_segment_flips_change_the_placement_and_its_measurement(chain):
    chain.set_segments([(0, 8, False)])
    plain = chain.cost
    chain.toggle_cut(4)  # the pieces keep the choice of the segment they came from
    assert chain.segments == [(0, 3, False), (4, 8, False)]
    chain.toggle_segment(1)
    assert chain.segments == [(0, 3, True), (4, 8, False)]
    assert chain.cost.recompute_share == pytest.approx(4 / 9)
    assert chain.cost.peak_bytes < plain.peak_bytes
    assert chain.cost == measure_placement(chain.layers, chain.x, chain.segments)
    chain.toggle_cut(4)  # the merged segment keeps its left part's choice
    assert chain.segments == [(0, 8, True)]
    with pytest.raises(ValueError, match=r"a cut goes before layer 1 to 8, got 9"):
        chain.toggle_cut(9)
    with pytest.raises(ValueError, match=r"layer must be 0 to 8, got -1"):
        chain.toggle_segment(-1)
    with pytest.raises(ValueError, match="CheckpointChain.set_segments"):
        chain.set_segments([(0, 3, True)])
    assert chain.segments == [(0, 8, True)]  # a refused placement changes nothing


@pytest.mark.parametrize("segments", [[(0, 8, False)], [(0, 0, True), (1, 7, False), (8, 8, True)],
                                      [(i, i, i % 2 == 0) for i in range(9)]])
def test_the_figure_draws_the_placement_legibly(chain, segments):
    chain.set_segments(segments)
    figure = chain.figure()
    assert figure.svg == chain.figure().svg
    assert_legible_and_apart(figure)
    assert _marks(figure, "data-cut") == [s for s, _, _ in segments[1:]]
    assert _marks(figure, "data-checkpointed") == [int(c) for s, e, c in segments for _ in range(s, e + 1)]
    assert _marks(figure, "data-current") == [len(segments)]
    assert f"peak {chain.cost.peak_bytes / 2**20:.3f} MiB by the tracker" in figure.svg


def test_a_64_layer_chain_stays_legible():
    x = mt.tensor(np.ones((2, 4), np.float32))
    from minigrad.viz.checkpoint_costs import chain_layers, layer_costs

    layers = chain_layers(deep_mlp(64, 4))
    costs = layer_costs(layers, x)
    segments = [(0, 7, True)] + [(8 * k, 8 * k + 7, k % 2 == 1) for k in range(1, 8)]
    assert_legible_and_apart(draw_checkpoint_chain(costs, segments, measure_placement(layers, x, segments, costs)))


def test_the_widget_buttons_place_cuts_and_flip_segments(chain):
    pytest.importorskip("ipywidgets")
    chain.set_segments([(0, 8, False)])
    chain.widget
    chain._cut_buttons[3].value = True
    assert chain.segments == [(0, 2, False), (3, 8, False)]
    chain._layer_buttons[5].click()
    assert chain.segments == [(0, 2, False), (3, 8, True)]
    assert chain._layer_buttons[5].button_style == "warning" and chain._layer_buttons[0].button_style == "info"
    assert "checkpointed layers 3-8" in chain._readout.value and 'data-cut="3"' in chain._picture.value
    chain.toggle_cut(3)  # from code: the toggle follows
    assert chain._cut_buttons[3].value is False
