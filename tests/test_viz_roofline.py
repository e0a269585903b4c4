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
    """The window extents of the axes, of every text in them (the markers' numbers and the key), and of the legend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    [ax] = figure.axes
    labels = [t.get_window_extent(renderer) for t in ax.texts]
    legend = ax.get_legend().get_window_extent(renderer)
    return ax.get_window_extent(renderer), labels, legend


def _assert_apart_and_inside(figure):
    axes, labels, legend = _boxes(figure)
    boxes = [*labels, legend]
    for i, box in enumerate(boxes):
        assert axes.x0 <= box.x0 and box.x1 <= axes.x1 and axes.y0 <= box.y0 and box.y1 <= axes.y1, (
            f"box {i} {box} is not inside the axes {axes}")
        for j, other in enumerate(boxes[i + 1:], start=i + 1):
            assert not box.overlaps(other), f"box {i} {box} overlaps box {j} {other} (the last is the legend)"
    return labels


CHAPTER_07 = {  # the chapter's kernels and the intensities it measures on the simulator
    "scaled add": 2 / 12, "bias + ReLU, fused": 0.1667, "naive matmul, requested": 0.25,
    "naive matmul, sectors": 0.48, "tiled matmul (16), requested": 3.2, "tiled matmul (16), sectors": 3.2,
}


def test_labels_overlap_neither_each_other_nor_the_legend():
    kernels = {"scaled add": 2 / 12, "bias + ReLU, fused": 0.17, "naive matmul (requested)": 0.25,
               "naive matmul (sectors)": 0.5, "tiled matmul (requested)": 3.2, "tiled matmul (sectors)": 3.2}
    labels = _assert_apart_and_inside(plot_roofline(kernels))
    assert len(labels) == 4 + 1  # kernels of nearly equal intensity share a number; one key names them


def test_the_chapters_labels_are_apart_and_inside_the_axes():
    figure = plot_roofline(CHAPTER_07, xlabel="arithmetic intensity (FLOPs per requested or sector byte, no cache)")
    assert len(_assert_apart_and_inside(figure)) == 4 + 1


@pytest.mark.parametrize("kernels", [
    {f"kernel {i}": 0.1 * 1.3**i for i in range(24)},  # just too far apart to share a number
    {f"kernel {i}": 0.2 * 1.05**i for i in range(40)},  # forty nearly equal
    {f"a kernel with a long and descriptive name, number {i}": 0.05 * 1.6**i for i in range(14)},
    {"scaled add": 0.17, "copy": 0.125, "tiled": 3.2, "fused": 40.0, "huge": 5000.0, "tiny": 0.001},
])
def test_many_close_or_long_labelled_kernels_keep_labels_apart_and_inside(kernels):
    figure = plot_roofline(kernels)
    labels = _assert_apart_and_inside(figure)
    [key] = [t for t in figure.axes[0].texts if "FLOP/B" in t.get_text()]
    named = " ".join(key.get_text().split())  # the key's lines may wrap
    assert all(name in named for name in kernels)
    assert len(labels) >= 2


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
