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
    [key] = [t for t in ax.texts if "FLOP/B" in t.get_text()]
    assert "1  scaled add: 0.17 FLOP/B" in key.get_text() and "2  tiled matmul: 4 FLOP/B" in key.get_text()
    assert sorted(t.get_text() for t in ax.texts if t is not key) == ["1", "2"]


def _boxes(figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    [ax] = figure.axes
    labels = [t.get_window_extent(renderer) for t in ax.texts]  # the markers' numbers and the key
    legend = ax.get_legend().get_window_extent(renderer)
    return labels, legend


def test_labels_overlap_neither_each_other_nor_the_legend():
    kernels = {"scaled add": 2 / 12, "bias + ReLU, fused": 0.17, "naive matmul (requested)": 0.25,
               "naive matmul (sectors)": 0.5, "tiled matmul (requested)": 3.2, "tiled matmul (sectors)": 3.2}
    labels, legend = _boxes(plot_roofline(kernels))
    assert len(labels) == 4 + 1  # kernels of nearly equal intensity share a number; one key names them
    for i, box in enumerate(labels):
        assert not box.overlaps(legend), f"label {i} overlaps the legend"
        for other in labels[i + 1:]:
            assert not box.overlaps(other), "two kernel labels overlap"


def test_the_legend_and_the_chapter_table_give_the_cards_numbers():
    import json
    from pathlib import Path

    from minigrad.viz.roofline import card_label

    notebook = Path(__file__).resolve().parents[1] / "chapters" / "07_gpu_kernels.ipynb"
    text = "".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "markdown")
    for card in CARDS:
        row = f"| {card.name} | {card.memory_gb} GB GDDR"
        assert row in text, f"the chapter's card table has no row for {card.name}"
        line = text[text.index(row):].splitlines()[0]
        assert f"| {card.bandwidth_gbs:g} GB/s |" in line and f"| {card.fp32_tflops:.3g} TFLOP/s |" in line, line
        assert f"{card.bandwidth_gbs:g} GB/s, {card.fp32_tflops:.3g} TFLOP/s" in card_label(card)
