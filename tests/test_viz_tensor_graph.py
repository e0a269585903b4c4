"""Tensor graph drawings and the tensor backprop stepper: shapes, gradients, determinism, no mutation."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.viz import SVGFigure, TensorBackpropStepper, draw_tensor_graph, tensor_graph, trace_tensor_backprop
from minigrad.viz.graph_svg import graph_nodes
from minigrad.viz.tensor_graph import explain_tensor_step, gradient_summary

SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: str) -> list[str]:
    return [element.text or "" for element in ET.fromstring(svg).iter(SVG + "text")]


def layer(seed: int = 0):
    """x (no grad) @ W + b, relu, squared, summed: matmul, broadcasting and reuse in one small graph."""
    gen = np.random.default_rng(seed)
    x = mt.tensor(gen.standard_normal((4, 3)))
    W = mt.tensor(gen.standard_normal((3, 2)), requires_grad=True)
    b = mt.tensor(gen.standard_normal(2), requires_grad=True)
    h = (x @ W + b).relu()
    loss = (h * h).sum()
    return loss, {"x": x, "W": W, "b": b, "h": h, "loss": loss}


def mlp(seed: int = 1):
    gen = np.random.default_rng(seed)
    x = mt.tensor(gen.standard_normal((5, 3)), dtype=mt.float64)
    y = mt.tensor(gen.integers(0, 3, size=5))
    W1 = mt.tensor(gen.standard_normal((3, 4)), dtype=mt.float64, requires_grad=True)
    b1 = mt.zeros(4, dtype=mt.float64, requires_grad=True)
    W2 = mt.tensor(gen.standard_normal((4, 3)), dtype=mt.float64, requires_grad=True)
    logits = (x @ W1 + b1).tanh() @ W2
    loss = -logits.log_softmax(dim=1)[mt.arange(5), y].mean() + (W1 * W1).mean(dim=0).sum()
    return loss, {"W1": W1, "b1": b1, "W2": W2, "loss": loss}


def scalar_chain(seed: int = 2):
    gen = np.random.default_rng(seed)
    a = mt.tensor(gen.standard_normal(3), requires_grad=True)
    c = a.exp() * a - a.sum() / 3.0  # a used three times, a number operand, a 0-d broadcast
    return (c * c).mean(), {"a": a}


GRAPHS = [layer, mlp, scalar_chain]


def leaves_of(names):
    return {k: t for k, t in names.items() if t.is_leaf and t.requires_grad}


# ------------------------------------------------------------------ the adapter and the drawing


def test_adapter_nodes_carry_op_shape_dtype_and_children():
    loss, names = layer()
    top = tensor_graph(loss, names)
    nodes = graph_nodes(top)
    assert [n._op for n in nodes if not n.is_leaf] == ["matmul", "add", "relu", "mul", "sum"]
    assert top.label == "loss" and top.shape == () and top.dtype == "float64"
    by_label = {n.label: n for n in nodes if n.label}
    assert set(by_label) == {"W", "b", "h", "loss"}  # x needs no gradient: not part of the graph
    assert by_label["W"].is_leaf and by_label["W"].shape == (3, 2)
    mul = top._children[0]
    assert mul._op == "mul" and mul._children == [by_label["h"], by_label["h"]]  # h * h: two edges
    assert by_label["W"].grad is None


def test_leaf_gradients_show_after_backward():
    loss, names = layer()
    before = texts(draw_tensor_graph(loss, names).svg)
    assert not any(t.startswith("grad") for t in before)
    loss.backward()
    after = texts(draw_tensor_graph(loss, names).svg)
    W = names["W"]
    assert f"grad {gradient_summary(W.grad.numpy())}" in after
    assert "(3, 2) float64" in after and "(2,) float64" in after and "() float64" in after
    assert {"matmul", "add", "relu", "mul", "sum"} <= set(after)


def test_drawing_is_byte_deterministic_and_names_work_both_ways():
    first = draw_tensor_graph(*layer(0)).svg
    second = draw_tensor_graph(*layer(0)).svg
    assert first == second
    loss, names = layer(0)
    flipped = {t: k for k, t in names.items()}
    assert draw_tensor_graph(loss, flipped).svg == first
    assert draw_tensor_graph(loss, list(names.items())).svg == first
    assert isinstance(draw_tensor_graph(loss), SVGFigure)
    ET.fromstring(first)  # well-formed


def test_labels_are_escaped_and_highlight_is_accepted():
    loss, names = layer()
    svg = draw_tensor_graph(loss, {"<W & b>": names["W"]}, highlight={names["h"]: "yellow"}, rankdir="TB").svg
    ET.fromstring(svg)
    assert "&lt;W &amp; b&gt;" in svg and "#fff4c2" in svg


def test_a_leaf_or_a_node_can_be_the_root_and_errors_are_clear():
    w = mt.ones(2, 2, requires_grad=True)
    leaf = tensor_graph(w, {"w": w})
    assert leaf.is_leaf and leaf.label == "w" and not leaf._children
    loss, _ = layer()
    assert graph_nodes(tensor_graph(loss.grad_fn))[-1].fn is loss.grad_fn
    with pytest.raises(ValueError, match="does not require grad"):
        tensor_graph(mt.ones(3))
    with pytest.raises(TypeError, match="expected a Tensor"):
        tensor_graph(3.0)
    with pytest.raises(ValueError, match="max_nodes"):
        draw_tensor_graph(loss, max_nodes=3)


def test_a_deep_graph_is_walked_without_recursion():
    x = mt.ones(1, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    assert len(graph_nodes(tensor_graph(y, max_nodes=None))) == 3001


# ------------------------------------------------------------------ the stepper


@pytest.mark.parametrize("make", GRAPHS)
def test_last_step_gradients_equal_backward(make):
    loss, names = make()
    trace = trace_tensor_backprop(loss, names)
    assert all(trace.steps[-1].final)
    loss.backward()
    for name, leaf in leaves_of(names).items():
        np.testing.assert_allclose(trace.final_grad(leaf), leaf.grad.numpy(), rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("make", GRAPHS)
def test_tracing_does_not_touch_the_graph(make):
    loss, names = make()
    saved = {id(n.fn): getattr(n.fn, "_saved", ()) for n in graph_nodes(tensor_graph(loss))}
    versions = {k: t._version for k, t in names.items()}
    TensorBackpropStepper(loss, names).static_figure([0, 1])
    assert all(leaf.grad is None for leaf in leaves_of(names).values())
    assert {id(n.fn): getattr(n.fn, "_saved", ()) for n in graph_nodes(tensor_graph(loss))} == saved
    assert {k: t._version for k, t in names.items()} == versions
    loss.backward()  # the graph still works
    assert all(leaf.grad is not None for leaf in leaves_of(names).values())


def test_steps_follow_the_reverse_topological_order_and_accumulate():
    loss, names = layer()
    trace = trace_tensor_backprop(loss, names)
    processed = [s.node for s in trace.steps[1:]]
    assert processed == sorted(processed, reverse=True)  # outputs before inputs
    mul_step = next(s for s in trace.steps if s.node is not None and trace.nodes[s.node]._op == "mul")
    assert [t.first for t in mul_step.terms] == [True, False]  # h * h: the second term adds to the first
    text = explain_tensor_step(trace, mul_step.number)
    assert "MulBackward" in text and "to h: grad (4, 2)" in text and "added to what it had" in text
    assert explain_tensor_step(trace, 0).startswith(f"Step 0/{trace.last_step}: start at the output loss")
    assert explain_tensor_step(trace, trace.last_step).endswith("adds to its .grad.")


def test_frames_share_one_geometry_and_are_deterministic():
    stepper = TensorBackpropStepper(*layer())
    sizes = {(stepper.frame(k).width, stepper.frame(k).height) for k in range(stepper.last_step + 1)}
    assert len(sizes) == 1
    assert "grad ?" in texts(stepper.frame(0).svg)
    assert "grad ?" not in texts(stepper.frame(stepper.last_step).svg)
    again = TensorBackpropStepper(*layer())
    assert stepper.static_figure([0, 2, stepper.last_step]).svg == again.static_figure([0, 2, stepper.last_step]).svg
    with pytest.raises(ValueError, match="step must be"):
        stepper.frame(stepper.last_step + 1)


def test_graphs_scale_down_to_the_output_width_at_their_natural_aspect_ratio():
    loss, names = layer()
    stepper = TensorBackpropStepper(loss, names)
    for figure in (draw_tensor_graph(loss, names), stepper.frame(0), stepper.static_figure([0, 1])):
        root = ET.fromstring(figure.svg)
        style = {k.strip(): v.strip() for k, v in (d.split(":") for d in root.get("style").split(";"))}
        assert style == {"max-width": "100%", "height": "auto"}  # shrinks to fit, never grows past natural size
        assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
        assert float(root.get("width")) == pytest.approx(figure.width)  # the natural size, for <img> and the PNG
        assert float(root.get("height")) == pytest.approx(figure.height)


def chapter_04_layer():
    """Chapter 04's one layer, relu(x @ W + b), and its loss, as the chapter builds them."""
    mt.manual_seed(0)
    x, W, b = mt.randn(4, 3), mt.randn(3, 2, requires_grad=True), mt.zeros(2, requires_grad=True)
    h = (x @ W + b).relu()
    loss = (h * h).sum()
    return loss, {"x": x, "W": W, "b": b, "h": h, "loss": loss}


def shown_text_px(figure: SVGFigure, output_width: float) -> float:
    """The smallest font size of a box's text once ``figure`` is shrunk to ``output_width`` (never grown)."""
    root = ET.fromstring(figure.svg)
    sizes = [float(t.get("font-size", root.get("font-size"))) for t in root.iter(SVG + "text") if not t.text.startswith("×")]
    return min(sizes) * min(1.0, output_width / figure.width)


def test_chapter_04_stepper_text_is_at_least_11_px_in_a_900_px_output():
    loss, names = chapter_04_layer()
    stepper = TensorBackpropStepper(loss, names)
    figures = [stepper.frame(k) for k in range(stepper.last_step + 1)]
    figures += [stepper.static_figure([0, 2, stepper.last_step]), draw_tensor_graph(loss, names)]
    for figure in figures:
        assert shown_text_px(figure, 900) >= 11, figure
    unwrapped = TensorBackpropStepper(loss, names, max_width=None).frame(0)
    assert shown_text_px(unwrapped, 900) < 8  # what the chapter showed before the graph wrapped into rows


def test_after_backward_it_needs_retain_graph():
    loss, names = layer()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        TensorBackpropStepper(loss, names)
    loss, names = layer()
    loss.backward(retain_graph=True)
    trace = trace_tensor_backprop(loss, names)
    np.testing.assert_allclose(trace.final_grad(names["W"]), names["W"].grad.numpy(), rtol=1e-6)


def test_a_non_scalar_output_needs_a_gradient():
    W = mt.ones(2, 3, requires_grad=True)
    out = W * 2.0
    with pytest.raises(ValueError, match="gradient="):
        trace_tensor_backprop(out)
    seed = np.full((2, 3), 0.5, dtype=np.float32)
    trace = trace_tensor_backprop(out, {"W": W}, gradient=seed)
    np.testing.assert_allclose(trace.final_grad(W), np.ones((2, 3)))


def test_widget_steps_through_the_frames():
    pytest.importorskip("ipywidgets")
    stepper = TensorBackpropStepper(*layer())
    widget = stepper.widget
    assert widget is stepper.widget
    stepper._next.click()
    assert stepper.current_step == 1 and "Step 1/" in stepper._text.value
    stepper.step(stepper.last_step)
    assert stepper._next.disabled and "<svg" in stepper._picture.value
