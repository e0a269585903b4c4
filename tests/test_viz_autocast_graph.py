"""The graph coloured by autocast's dtypes: dtypes recorded while the step ran, the casts autocast inserted, the figure."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.tensor import get_dtype_policy
from minigrad.viz.autocast_graph import (
    CAST_COLOUR, DTYPE_COLOURS, AutocastGraph, draw_autocast_graph, small_mlp_step, trace_autocast,
)
from minigrad.viz.graph_svg import PALETTE
from svg_text_boxes import SVG, assert_legible_and_apart


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_trace_records_what_autocast_ran_and_cast(dtype):
    step, names = small_mlp_step()
    before = get_dtype_policy()
    trace = trace_autocast(step, dtype, names=names)
    assert get_dtype_policy() is before
    ran = [(r.op, r.dtype) for r in trace.ops if r.cast_for is None]
    assert ran == [("linear", dtype), ("relu", dtype), ("linear", dtype), ("cross_entropy", "float32")]
    casts = trace.inserted_casts()
    assert [(r.cast_for, r.input_dtype, r.dtype) for r in casts] == (
        [("linear", "float32", dtype)] * 3 + [("linear", "float32", dtype)] * 2 + [("cross_entropy", dtype, "float32")])
    assert casts[0].source is names["x"] and casts[0].node is None  # x needs no gradient: not in the graph
    assert all(p.grad is not None and p.grad.dtype == mt.float32 for n, p in names.items() if n != "x")


def test_a_cast_the_step_makes_itself_is_not_autocasts():
    w = mt.tensor(np.ones((3, 3), dtype=np.float32), requires_grad=True)
    trace = trace_autocast(lambda: (w.half() * 2).sum(), "float16", names={"w": w})
    assert [r.op for r in trace.ops][:1] == ["cast"] and trace.inserted_casts() == []
    off = trace_autocast(small_mlp_step()[0], None)
    assert off.inserted_casts() == [] and {r.dtype for r in off.ops} == {"float32"}


def _fills(svg: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for rect in ET.fromstring(svg).iter(f"{SVG}rect"):
        counts[rect.get("fill")] = counts.get(rect.get("fill"), 0) + 1
    return counts


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", None])
def test_the_figure_colours_each_box_by_its_recorded_dtype(dtype):
    step, names = small_mlp_step()
    trace = trace_autocast(step, dtype, names=names)
    figure = draw_autocast_graph(trace)
    assert figure.svg == draw_autocast_graph(trace).svg
    assert_legible_and_apart(figure)
    fills = _fills(figure.svg)
    low = PALETTE[DTYPE_COLOURS[dtype]][0] if dtype else None
    cast_fill = PALETTE[CAST_COLOUR][0]
    if dtype:
        # boxes: 4 casts of weights, 2 linears, 1 relu in the low dtype; pills: 2 linears, 1 relu; 1 key swatch
        assert fills[low] == 7 + 3 + 1
        assert fills[cast_fill] == 5 + 1  # five cast pills in the graph and the key's swatch
        assert "x (5, 4) float32 -&gt; " + dtype + " for linear" in figure.svg
        assert figure.svg.count(">cast for linear<") == 4 and ">cast for cross_entropy<" in figure.svg
    else:
        assert fills.get(cast_fill) == 1 and "casts autocast inserted: 0" in figure.svg
    assert figure.svg.count(">grad float32<") == 4  # the master weights' gradients stay float32


def test_the_widget_switches_the_dtype_and_traces_each_once():
    graph = AutocastGraph()
    assert ">(5, 8) float16<" in graph.figure().svg
    graph.set("bfloat16")
    assert ">(5, 8) bfloat16<" in graph.figure().svg and set(graph._traces) == {"float16", "bfloat16"}
    with pytest.raises(ValueError, match="dtype must be one of float16, bfloat16, off"):
        graph.set("float8")
    pytest.importorskip("ipywidgets")
    graph.widget
    graph._choice.value = "off"
    assert graph.dtype == "off" and "no casts inserted" in graph._readout.value
    graph._choice.value = "float16"
    assert "6 casts inserted" in graph._readout.value and len(graph._traces) == 3
