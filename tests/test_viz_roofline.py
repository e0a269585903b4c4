"""The roofline: min(peak, intensity x bandwidth) per card, the spec-sheet table, and a figure that draws."""

import pytest

from minigrad.viz.roofline import CARDS, attainable_gflops, card_table, plot_roofline


def test_the_roof_is_bandwidth_bound_below_the_ridge_and_flat_above():
    card = CARDS[0]
    assert attainable_gflops(card, 1.0) == pytest.approx(card.bandwidth_gbs)
    assert attainable_gflops(card, 10 * card.ridge_point) == pytest.approx(card.fp32_tflops * 1000)
    with pytest.raises(ValueError, match="intensity must be a positive"):
        attainable_gflops(card, 0)


def test_cards_carry_their_sources_and_the_table_lists_them():
    names = [c.name for c in CARDS]
    assert names == ["GTX 1050 2 GB", "GTX 1650 4 GB", "RTX 3060 12 GB", "RTX 4060 8 GB"]
    assert all(c.source.startswith("https://") for c in CARDS)
    table = card_table()
    assert table.count("\n") == len(CARDS) + 1 and "| RTX 3060 12 GB | 12 GB | 360 GB/s |" in table


def test_the_plot_has_one_roof_per_card_and_a_marker_per_kernel():
    figure = plot_roofline({"scaled add": 2 / 12, "tiled matmul": 4.0})
    [ax] = figure.axes
    assert len([line for line in ax.get_lines() if line.get_linestyle() == "-"]) == len(CARDS)
    assert len([t for t in ax.texts if "FLOP/B" in t.get_text()]) == 2
