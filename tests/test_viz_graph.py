"""The layered layout and the SVG drawing of computation graphs."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import pytest

from minigrad.scalar import MLP, Value, topological_order
from minigrad.viz import SVGFigure, draw_graph, draw_legend, graph_nodes, layered_layout, stack_figures
from minigrad.viz.graph_svg import FIT_WIDTH

SVG = "{http://www.w3.org/2000/svg}"


def expression():
    """L = (a*b + c) * f, as in micrograd's first picture, after backward()."""
    a, b, c, f = Value(2.0, label="a"), Value(-3.0, label="b"), Value(10.0, label="c"), Value(-2.0, label="f")
    e = a * b
    e.label = "e"
    d = e + c
    d.label = "d"
    out = d * f
    out.label = "L"
    out.backward()
    return out


def neuron():
    x1, x2 = Value(2.0, label="x1"), Value(0.0, label="x2")
    w1, w2, b = Value(-3.0, label="w1"), Value(1.0, label="w2"), Value(6.881373587, label="b")
    out = (x1 * w1 + x2 * w2 + b).tanh()
    out.label = "o"
    out.backward()
    return out


def random_dag(seed: int, size: int = 40):
    """A random DAG of Values with shared nodes and edges that skip layers."""
    rng = random.Random(seed)
    values = [Value(rng.uniform(-1, 1), label=f"x{i}") for i in range(4)]
    for _ in range(size):
        a, b = rng.choice(values), rng.choice(values)
        values.append(rng.choice([a + b, a * b, a - b, a.tanh()]))
    return values[-1]


def texts(svg: str) -> list[str]:
    return [element.text or "" for element in ET.fromstring(svg).iter(SVG + "text")]


# --------------------------------------------------------------------- layout


def layout_of(root):
    nodes = topological_order(root)
    return nodes, layered_layout(nodes, lambda node: node._children)


@pytest.mark.parametrize("make", [expression, neuron, lambda: random_dag(0), lambda: random_dag(1, 80)])
def test_every_edge_goes_from_a_lower_layer_to_a_higher_one(make):
    nodes, layout = layout_of(make())
    assert layout.edges
    for edge in layout.edges:
        child_layer, parent_layer = layout.layer_of[edge.child], layout.layer_of[edge.parent]
        assert child_layer < parent_layer
        assert [layer for layer, _ in edge.bends] == list(range(child_layer + 1, parent_layer))


@pytest.mark.parametrize("make", [expression, neuron, lambda: random_dag(2), lambda: random_dag(3, 80)])
def test_nodes_of_a_layer_do_not_overlap(make):
    nodes, layout = layout_of(make())
    assert sorted(i for layer in layout.layers for i in layer) == list(range(len(nodes)))
    occupied: dict[int, list[float]] = {}
    for i in range(len(nodes)):
        occupied.setdefault(layout.layer_of[i], []).append(layout.slot_of[i])
    for edge in layout.edges:  # the dummies of long edges take room too
        for layer, slot in edge.bends:
            occupied.setdefault(layer, []).append(slot)
    for slots in occupied.values():
        slots.sort()
        assert all(b - a >= 1 for a, b in zip(slots, slots[1:]))
    every_slot = [s for slots in occupied.values() for s in slots]
    assert min(every_slot) == 0
    assert all((2 * s).is_integer() for s in every_slot)


def test_layers_list_nodes_by_increasing_slot():
    _, layout = layout_of(random_dag(4))
    for layer in layout.layers:
        slots = [layout.slot_of[i] for i in layer]
        assert slots == sorted(slots)


def test_layout_is_deterministic_for_equal_graphs_built_separately():
    assert layout_of(random_dag(5))[1] == layout_of(random_dag(5))[1]


def test_inputs_on_the_left_output_on_the_right():
    nodes, layout = layout_of(expression())
    assert layout.layer_of[-1] == layout.num_layers - 1
    a = next(i for i, node in enumerate(nodes) if node.label == "a")
    assert layout.layer_of[a] == 0


def test_a_tree_is_drawn_without_crossings():
    leaves = [Value(float(i), label=f"x{i}") for i in range(8)]
    while len(leaves) > 1:
        leaves = [leaves[i] * leaves[i + 1] for i in range(0, len(leaves), 2)]
    _, layout = layout_of(leaves[0])
    assert layout.crossings == 0


def test_layout_rejects_nodes_that_are_not_children_first():
    a = Value(1.0)
    b = a + 1.0
    with pytest.raises(ValueError, match="children-first"):
        layered_layout([b, *b._children], lambda node: node._children)


# ------------------------------------------------------------------------ SVG


def test_svg_is_byte_identical_for_equal_graphs_built_separately():
    assert draw_graph(random_dag(6)).svg == draw_graph(random_dag(6)).svg
    assert draw_graph(neuron()).svg == draw_graph(neuron()).svg


def test_svg_changes_when_a_number_changes():
    other = expression()
    other.grad = 2.0
    assert draw_graph(other).svg != draw_graph(expression()).svg


@pytest.mark.parametrize("rankdir", ["LR", "TB"])
def test_svg_is_well_formed_and_shows_every_value_and_op(rankdir):
    figure = draw_graph(neuron(), rankdir=rankdir)
    root = ET.fromstring(figure.svg)
    assert root.tag == SVG + "svg"
    shown = texts(figure.svg)
    for text in ["x1", "w2", "o", "data = 0.7071", "grad = -1.5", "tanh", "*", "+"]:
        assert text in shown
    # each value a box, each op a pill, plus the background
    assert len(root.findall(f".//{SVG}rect")) == 10 + 5 + 1


def test_text_is_escaped():
    a = Value(1.0, label="a<b & c>d")
    out = a * 2.0
    svg = draw_graph(out).svg
    assert "a&lt;b &amp; c&gt;d" in svg
    assert "a<b & c>d" in texts(svg)


def test_graph_over_max_nodes_raises_a_clear_error():
    out = Value(0.0)
    for i in range(30):
        out = out + i
    with pytest.raises(ValueError, match=r"has 61 values, more than max_nodes=20.*smaller example"):
        draw_graph(out, max_nodes=20)


def test_a_reused_input_draws_one_edge_marked_with_its_count():
    a = Value(3.0, label="a")
    b = a + a
    svg = draw_graph(b * b).svg
    assert texts(svg).count("×2") == 2
    assert len(ET.fromstring(svg).findall(f".//{SVG}path")) == 4


def test_describe_and_highlight():
    out = expression()
    svg = draw_graph(out, describe=lambda node: [f"op {node._op or 'leaf'}"], highlight={out: "red", out._children[1]: "#abcdef"}).svg
    assert "op leaf" in texts(svg) and "op *" in texts(svg)
    assert "data = -8" not in texts(svg)
    assert "#fde2e2" in svg and "#abcdef" in svg
    with pytest.raises(ValueError, match="colour"):
        draw_graph(out, highlight={out: 'red"/><script>'})


def test_works_on_a_learners_own_value_class():
    class MyValue:  # a copy of engine.Value would do; only the attributes matter
        def __init__(self, data, children=(), local_grads=(), op=""):
            self.data, self.grad, self.label = data, 0.0, ""
            self._children, self._local_grads, self._op = children, local_grads, op

        def __eq__(self, other):  # makes instances unhashable: identity must still work
            return NotImplemented

        __hash__ = None

    x = MyValue(2.0)
    y = MyValue(4.0, (x, x), (2.0, 2.0), "+")
    assert graph_nodes(y) == [x, y]
    assert "data = 4" in texts(draw_graph(y).svg)


def test_deep_chain_does_not_hit_the_recursion_limit():
    out = Value(1.0)
    for _ in range(5000):
        out = out * 1.0
    assert len(graph_nodes(out)) == 10001


def test_bad_arguments():
    with pytest.raises(TypeError, match="expected a Value"):
        draw_graph([Value(1.0)])
    with pytest.raises(ValueError, match="rankdir"):
        draw_graph(Value(1.0), rankdir="RL")


def test_single_value_and_a_small_mlp_draw():
    assert "data = 1" in texts(draw_graph(Value(1.0)).svg)
    ET.fromstring(draw_graph(MLP(2, [3, 1])([1.0, -1.0])).svg)


def test_figure_save_repr_and_stack(tmp_path):
    figure = draw_graph(expression(), caption="a caption\nline 2")
    assert isinstance(figure, SVGFigure)
    assert "line 2" in texts(figure.svg)
    path = figure.save(tmp_path / "graph.svg")
    assert path.read_bytes() == figure.svg.encode("utf-8")
    both = stack_figures([figure, draw_graph(neuron())])
    assert both.height > figure.height
    ET.fromstring(both.svg)


# ------------------------------------------------------- extent and legend


def drawn_extent(svg: str) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of every box, edge point and arrowhead; the background is skipped."""
    xs, ys = [], []
    for element in ET.fromstring(svg).iter():
        tag = element.tag.removeprefix(SVG)
        if tag == "rect" and element.get("stroke"):  # the background has none
            x, y = float(element.get("x")), float(element.get("y"))
            xs += [x, x + float(element.get("width"))]
            ys += [y, y + float(element.get("height"))]
        elif tag == "path":
            numbers = [float(t) for t in element.get("d").replace(",", " ").split() if t[0] not in "MCL"]
            xs += numbers[0::2]
            ys += numbers[1::2]
        elif tag == "polygon":
            for point in element.get("points").split():
                x, y = map(float, point.split(","))
                xs.append(x)
                ys.append(y)
    return min(xs), min(ys), max(xs), max(ys)


def routed_around():
    """L = (x*y + x) * y: both inputs have an edge that skips layers, one above and one below."""
    x, y = Value(2.0, label="x"), Value(3.0, label="y")
    out = (x * y + x) * y
    out.label = "L"
    return out


def test_an_edge_routed_along_the_bottom_leaves_no_gap_before_the_caption():
    figure = draw_graph(routed_around(), caption="the caption")
    left, top, right, bottom = drawn_extent(figure.svg)
    boxes_bottom = max(
        float(r.get("y")) + float(r.get("height")) for r in ET.fromstring(figure.svg).iter(SVG + "rect") if r.get("stroke")
    )
    assert bottom > boxes_bottom + 5  # the case at hand: an edge runs below every box
    caption = next(t for t in ET.fromstring(figure.svg).iter(SVG + "text") if t.text == "the caption")
    caption_top = float(caption.get("y")) - 12  # BASELINE
    assert 11 <= caption_top - bottom <= 14  # MARGIN (12), give or take the stroke and rounding
    assert 11 <= top <= 14 and left == 12


@pytest.mark.parametrize("rankdir", ["LR", "TB"])
@pytest.mark.parametrize("make", [routed_around, expression, neuron, lambda: random_dag(7, 30)])
def test_the_figure_ends_a_margin_past_what_is_drawn(make, rankdir):
    figure = draw_graph(make(), rankdir=rankdir)
    left, top, right, bottom = drawn_extent(figure.svg)
    margins = [left, top, figure.width - right, figure.height - bottom]
    assert all(11 <= m <= 14 for m in margins), margins  # MARGIN (12), give or take the stroke and rounding


def chain(length: int):
    """x*1 + 1, tanh, ... : a graph as long as ``length`` ops and one box deep."""
    out = Value(0.5, label="x")
    for i in range(length):
        out = out.tanh() if i % 2 else out * 1.0
    out.label = "out"
    return out


def boxes(svg: str) -> list[tuple[float, float, float, float]]:
    """(left, top, right, bottom) of every value box and op pill (the background has no stroke)."""
    return [
        (x, y, x + float(r.get("width")), y + float(r.get("height")))
        for r in ET.fromstring(svg).iter(SVG + "rect") if r.get("stroke")
        for x, y in [(float(r.get("x")), float(r.get("y")))]
    ]


@pytest.mark.parametrize("make", [lambda: chain(30), lambda: random_dag(1, 80), lambda: random_dag(8, 60)])
def test_a_long_graph_wraps_into_rows_within_max_width(make):
    out = make()
    one_row = draw_graph(out, max_width=None)
    figure = draw_graph(out)
    assert one_row.width > FIT_WIDTH >= figure.width and figure.height > one_row.height
    left, top, right, bottom = drawn_extent(figure.svg)
    margins = [left, top, figure.width - right, figure.height - bottom]
    assert all(11 <= m <= 14 for m in margins), margins
    drawn = boxes(figure.svg)
    assert len(drawn) == len(boxes(one_row.svg))
    for i, a in enumerate(drawn):
        for b in drawn[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    assert sorted(texts(figure.svg)) == sorted(texts(one_row.svg))
    assert figure.svg == draw_graph(make()).svg


def test_wrapped_rows_but_the_last_are_of_near_equal_length():
    figure = draw_graph(chain(30), max_width=700)
    rows: list[list[float]] = []  # [bottom, right end] of each row, from the top
    for left, top, right, bottom in sorted(boxes(figure.svg), key=lambda box: box[1]):
        if rows and top < rows[-1][0]:
            rows[-1] = [max(rows[-1][0], bottom), max(rows[-1][1], right)]
        else:
            rows.append([bottom, right])
    ends = [end for _, end in rows][:-1]  # the last row takes what is left
    assert len(ends) >= 3 and max(ends) <= 700 - 12 and max(ends) - min(ends) < 100, ends


def test_a_graph_that_fits_is_drawn_as_before_and_top_to_bottom_never_wraps():
    assert draw_graph(expression()).svg == draw_graph(expression(), max_width=None).svg
    tall = draw_graph(chain(30), rankdir="TB")
    assert tall.svg == draw_graph(chain(30), rankdir="TB", max_width=None).svg
    single = draw_graph(Value(1.0, label="a" * 200))  # one layer wider than max_width: drawn as wide as it is
    assert single.width > FIT_WIDTH


def test_min_widths_widen_boxes_without_moving_their_text():
    out = expression()
    plain = draw_graph(out)
    wide = draw_graph(out, min_widths={out: 200.0})
    widths = [float(r.get("width")) for r in ET.fromstring(wide.svg).iter(SVG + "rect")]
    assert 200.0 in widths and wide.width > plain.width
    assert draw_graph(out, min_widths=[(out, 10.0)]).svg == plain.svg  # narrower than needed: no effect


def test_legend_wraps_to_the_width_and_is_deterministic():
    entries = [("yellow", "processing"), ("green", "final gradient"), (("#ffffff", "#b8c1cc"), "not reached")]
    one_row = draw_legend(entries)
    assert [t for t in texts(one_row.svg)] == ["processing", "final gradient", "not reached"]
    narrow = draw_legend(entries, max_width=150)
    assert narrow.height > one_row.height and narrow.width == 150
    assert "#fff4c2" in one_row.svg and "#b8c1cc" in one_row.svg
    assert draw_legend(entries).svg == one_row.svg
    with pytest.raises(ValueError, match="colour"):
        draw_legend([("no<colour", "x")])
