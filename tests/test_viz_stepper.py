"""The backprop stepper: its own gradients, its explanations, its widget."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import pytest

from minigrad.scalar import MLP, Value, topological_order
from minigrad.viz import BackpropStepper, SVGFigure, trace_backprop
from minigrad.viz.stepper import explain_step, step_colours

SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: str) -> list[str]:
    return [element.text or "" for element in ET.fromstring(svg).iter(SVG + "text")]


def expression():
    a, b, c, f = Value(2.0, label="a"), Value(-3.0, label="b"), Value(10.0, label="c"), Value(-2.0, label="f")
    return (a * b + c) * f


def reused():
    a = Value(3.0, label="a")
    b = a + a
    b.label = "b"
    c = b * b
    c.label = "c"
    return c


def neuron():
    x1, x2 = Value(2.0, label="x1"), Value(0.0, label="x2")
    w1, w2, b = Value(-3.0, label="w1"), Value(1.0, label="w2"), Value(6.881373587, label="b")
    return (x1 * w1 + x2 * w2 + b).tanh()


def mixed():
    x, y = Value(1.5, label="x"), Value(-0.5, label="y")
    z = (x / (y * y + 1.0)) ** 2 - x.exp() * y.sigmoid() + (x * y).relu() + x.log()
    return z * z


def mlp():
    return MLP(2, [4, 4, 1], seed=3)([0.5, -1.0])


GRAPHS = [expression, reused, neuron, mixed, mlp]


@pytest.mark.parametrize("make", GRAPHS)
def test_last_step_gradients_equal_backward(make):
    root = make()
    trace = trace_backprop(root)
    root.backward()
    final = trace.steps[-1]
    assert all(final.final)
    for node, grad in zip(trace.nodes, final.grads):
        assert grad == pytest.approx(node.grad, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("make", GRAPHS)
def test_the_graph_is_not_mutated(make):
    root = make()
    stepper = BackpropStepper(root)
    for k in range(stepper.last_step + 1):
        stepper.frame(k)
        stepper.explanation(k)
    stepper.static_figure(range(stepper.last_step + 1))
    stepper.widget
    stepper.step(stepper.last_step)
    assert all(node.grad == 0.0 for node in topological_order(root))


def test_reused_node_accumulates_and_the_explanation_shows_the_products():
    stepper = BackpropStepper(reused())
    assert stepper.last_step == 2
    assert "grad(c) = dc/dc = 1" in stepper.explanation(0)
    first = stepper.explanation(1)
    assert "grad(b) += local × grad(c) = 6 × 1 = 6" in first
    assert "so grad(b) = 12" in first
    second = stepper.explanation(2)
    assert "grad(a) += local × grad(b) = 1 × 12 = 12, so grad(a) = 24" in second
    assert "final" in second


def test_gradients_appear_step_by_step():
    trace = trace_backprop(reused())
    names = list(trace.names)
    a, b, c = names.index("a"), names.index("b"), names.index("c")
    assert trace.steps[0].grads[a] is None and trace.steps[0].grads[c] == 1.0
    assert trace.steps[1].grads[b] == 12.0 and trace.steps[1].final[b]
    assert trace.steps[1].grads[a] is None
    assert trace.steps[2].grads[a] == 24.0


def test_a_gradient_is_final_only_after_every_user_is_processed():
    x = Value(2.0, label="x")
    y = x * 3.0
    y.label = "y"
    z = x + y  # x is used by y and by z
    trace = trace_backprop(z)
    x_index = list(trace.names).index("x")
    after_z = trace.steps[1]
    assert after_z.grads[x_index] == 1.0 and not after_z.final[x_index]
    assert trace.steps[2].final[x_index] and trace.steps[2].grads[x_index] == 4.0


def test_frames_highlight_the_active_node_and_hide_unknown_gradients():
    stepper = BackpropStepper(reused())
    start = stepper.frame(0).svg
    assert "grad = ?" in texts(start) and "#fff4c2" in start  # the output, highlighted
    end = stepper.frame(stepper.last_step).svg
    assert "grad = ?" not in texts(end) and "#dcf2e2" in end
    colours = dict((id(node), colour) for node, colour in step_colours(stepper.trace, 1))
    assert colours[id(stepper.trace.nodes[-1])] == "yellow"


def test_step_validation():
    stepper = BackpropStepper(expression())
    with pytest.raises(ValueError, match="from 0 to 3"):
        stepper.step(4)
    with pytest.raises(ValueError):
        stepper.frame(-1)
    stepper.step(2)
    assert stepper.current_step == 2
    assert stepper.explanation() == explain_step(stepper.trace, 2)


def test_widget_picture_shrinks_to_the_widget_and_scrolls_when_taller_than_the_window():
    picture = BackpropStepper(expression()).widget.children[1].value
    assert picture.startswith("<div style='overflow: auto; max-height: 85vh'><svg")
    assert 'style="max-width: 100%; height: auto"' in picture


def test_widget_buttons_and_slider_move_through_the_steps():
    stepper = BackpropStepper(expression())
    box = stepper.widget
    assert box is stepper.widget and len(box.children) == 3
    assert stepper._back.disabled
    stepper._next.click()
    stepper._next.click()
    assert stepper.current_step == 2 and stepper._slider.value == 2
    assert "<svg" in stepper._picture.value and "Step 2/3" in stepper._text.value
    stepper._back.click()
    assert stepper.current_step == 1
    stepper._slider.value = 3
    assert stepper.current_step == 3 and stepper._next.disabled
    stepper._reset.click()
    assert stepper.current_step == 0 and stepper._slider.value == 0


def test_static_figure_shows_chosen_steps_with_their_explanations():
    stepper = BackpropStepper(reused())
    last = stepper.static_figure()
    assert isinstance(last, SVGFigure) and "Step 2/2" in last.svg
    several = stepper.static_figure([0, 1])
    ET.fromstring(several.svg)
    assert "Step 0/2" in several.svg and "Step 1/2" in several.svg and "Step 2/2" not in several.svg


def test_ipython_display_sends_the_widget_with_a_static_fallback(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kwargs: shown.append((obj, kwargs)))
    BackpropStepper(reused())._ipython_display_()
    bundle, kwargs = shown[0]
    assert kwargs["raw"] is True
    assert {"application/vnd.jupyter.widget-view+json", "image/png"} <= set(bundle)
    assert "image/svg+xml" not in bundle

    shown.clear()
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import fails as if not installed
    BackpropStepper(reused())._ipython_display_()
    assert isinstance(shown[0][0], SVGFigure)


def test_single_value_has_only_step_zero():
    stepper = BackpropStepper(Value(5.0, label="x"))
    assert stepper.last_step == 0
    assert "grad = 1" in stepper.frame(0).svg


def test_large_graph_is_refused_at_construction():
    out = Value(0.0)
    for i in range(300):
        out = out + i
    with pytest.raises(ValueError, match="max_nodes=400"):
        BackpropStepper(out)


GEOMETRY = ("x", "y", "width", "height", "rx", "d", "points", "transform", "viewBox")


def geometry(svg: str) -> list[tuple]:
    """Every element's tag and position/size attributes, in document order (no colours, no text)."""
    return [
        (element.tag, *(element.get(name) for name in GEOMETRY))
        for element in ET.fromstring(svg).iter()
        if element.tag.endswith(("svg", "rect", "path", "polygon", "text", "g"))
    ]


@pytest.mark.parametrize("make", GRAPHS)
def test_every_frame_has_the_same_size_and_node_positions(make):
    stepper = BackpropStepper(make())
    frames = [stepper.frame(k) for k in range(stepper.last_step + 1)]
    assert len({(frame.width, frame.height) for frame in frames}) == 1
    first = geometry(frames[0].svg)
    for frame in frames[1:]:
        assert geometry(frame.svg) == first


def test_boxes_are_sized_for_their_widest_text_over_all_steps():
    stepper = BackpropStepper(reused())  # grad(a) goes from "?" to "24"
    a_box = [
        next(g for g in ET.fromstring(stepper.frame(k).svg).iter(f"{SVG}g") if g.find(f"{SVG}text").text == "a")
        .find(f"{SVG}rect").get("width")
        for k in range(stepper.last_step + 1)
    ]
    assert len(set(a_box)) == 1
    assert "grad = 24" in stepper.frame(stepper.last_step).svg


def test_static_figure_panels_share_the_geometry_of_the_frames():
    stepper = BackpropStepper(neuron())
    figure = stepper.static_figure(range(stepper.last_step + 1))
    panels = [g for g in ET.fromstring(figure.svg) if g.tag == f"{SVG}g"]
    assert len(panels) == stepper.last_step + 2  # the legend, then one panel a step
    boxes = [
        [(r.get("x"), r.get("y"), r.get("width")) for r in panel.iter(f"{SVG}rect") if r.get("stroke")]
        for panel in panels[1:]
    ]
    assert len(boxes[0]) == 10 + 5 and all(b == boxes[0] for b in boxes)


LEGEND_TEXTS = ["processing", "final gradient", "partial sum", "not reached (grad = ?)"]


def test_frames_and_static_figures_carry_the_colour_legend_once():
    stepper = BackpropStepper(expression())
    for figure in (stepper.frame(0), stepper.frame(2), stepper.static_figure([0, 1, 2])):
        shown = [element.text for element in ET.fromstring(figure.svg).iter(f"{SVG}text")]
        assert [text for text in shown if text in LEGEND_TEXTS] == LEGEND_TEXTS
    narrow = BackpropStepper(Value(5.0, label="x")).frame(0)  # the legend wraps to the graph's width
    rows = {t.get("y") for t in ET.fromstring(narrow.svg).iter(f"{SVG}text") if t.text in LEGEND_TEXTS}
    assert len(rows) == 4 and narrow.width < 220


@pytest.mark.parametrize("make", GRAPHS)
def test_stepper_svg_is_byte_identical_for_equal_graphs_built_separately(make):
    one, two = BackpropStepper(make()), BackpropStepper(make())
    assert one.static_figure(range(one.last_step + 1)).svg == two.static_figure(range(two.last_step + 1)).svg
    assert one.frame(1 if one.last_step else 0).svg == two.frame(1 if two.last_step else 0).svg
