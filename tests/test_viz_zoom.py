"""Figures and widgets shown larger for a projector: ``SVGFigure.scaled`` and ``WidgetFrame.zoomed``.

The defaults stay as they are: a figure or widget nobody zoomed draws the same bytes as before.
"""

from __future__ import annotations

import base64
import math
import re
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

import minigrad.tensor as mt
from minigrad import nn
from minigrad.memory import track
from minigrad.scalar import Value
from minigrad.viz import BackpropStepper, FloatExplorer, StrideExplorer, draw_graph
from minigrad.viz.figure_display import figure_png
from minigrad.viz.graph_svg import _num
from minigrad.viz.memory_timeline import MemoryTimeline


def expression():
    x, w = Value(2.0, label="x"), Value(-3.0, label="w")
    y = x * w + x
    y.label = "y"
    return y


def _svg_size(svg: str) -> tuple[float, float]:
    root = ET.fromstring(svg)
    return float(root.get("width")), float(root.get("height"))


def test_scaled_draws_the_same_picture_larger_and_leaves_the_figure_alone():
    figure = draw_graph(expression())
    before = figure.svg
    big = figure.scaled(1.5)
    assert figure.svg == before
    assert (big.width, big.height) == (figure.width * 1.5, figure.height * 1.5)
    width, height = _svg_size(big.svg)
    assert math.isclose(width, figure.width * 1.5, abs_tol=0.051) and math.isclose(height, figure.height * 1.5, abs_tol=0.051)
    assert re.search(r'<g transform="scale\(1\.5\)">', big.svg) and figure.body in big.svg
    assert ET.fromstring(big.svg).get("viewBox") == f"0 0 {_num(big.width)} {_num(big.height)}"
    assert figure.scaled(1).svg == before  # no wrapper: the same bytes
    assert figure.scaled(1.25).svg != figure.scaled(1.2).svg  # the factor is written exactly, not rounded


def test_a_scaled_figure_renders_a_larger_png():
    figure = StrideExplorer((3, 4), "transpose").figure()
    small, big = figure.png(), figure.scaled(2).png()
    if small is None:
        pytest.skip("no SVG rasterizer here")
    width = lambda png: int.from_bytes(png[16:20], "big")  # the IHDR chunk's width
    assert abs(width(big) - 2 * width(small)) <= 2  # each side rounded to whole pixels


@pytest.mark.parametrize("factor", [0, -1, float("nan"), float("inf"), True, "2", None])
def test_scaled_refuses_a_factor_that_is_not_a_positive_number(factor):
    with pytest.raises(ValueError, match="SVGFigure.scaled: factor must be a positive finite number"):
        draw_graph(expression()).scaled(factor)


@pytest.mark.parametrize("factor", [0, -2.0, float("nan"), False, "big"])
def test_zoomed_refuses_a_factor_that_is_not_a_positive_number_and_names_the_widget(factor):
    explorer = StrideExplorer((2, 3), "transpose")
    with pytest.raises(ValueError, match="StrideExplorer.zoomed: factor must be a positive finite number"):
        explorer.zoomed(factor)
    assert explorer.zoom == 1.0


def test_zoomed_widgets_show_their_pictures_larger_and_figure_keeps_its_size():
    explorer = StrideExplorer((2, 3), "transpose")
    plain_figure = explorer.figure().svg
    explorer.widget
    assert explorer.zoomed(1.5) is explorer
    assert explorer.figure().svg == plain_figure
    shown = explorer._picture.value
    width, _ = _svg_size(re.search(r"<svg.*</svg>", shown, re.S).group(0))
    assert math.isclose(width, explorer.figure().width * 1.5, abs_tol=0.051)

    stepper = BackpropStepper(expression())
    stepper.widget
    before = stepper._picture.value
    stepper.zoomed(2)  # the same step, zoomed: redrawn, not skipped as "already shown"
    assert stepper._picture.value != before and 'transform="scale(2)"' in stepper._picture.value
    stepper.step(1)
    assert 'transform="scale(2)"' in stepper._picture.value

    explorer = FloatExplorer("0.1", fmt="float16").zoomed(1.4)
    explorer.widget
    assert 'transform="scale(1.4)"' in explorer._picture.value


def test_a_zoomed_widget_sends_its_static_figure_larger(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kwargs: shown.append((obj, kwargs)))
    stepper = BackpropStepper(expression())
    stepper._ipython_display_()
    stepper.zoomed(1.5)._ipython_display_()
    (plain, plain_kwargs), (big, big_kwargs) = shown
    if "image/png" not in plain:
        pytest.skip("no SVG rasterizer here")
    assert abs(big_kwargs["metadata"]["image/png"]["width"] - 1.5 * plain_kwargs["metadata"]["image/png"]["width"]) <= 1


def test_a_zoomed_matplotlib_timeline_has_more_pixels_of_the_same_drawing(monkeypatch):
    import IPython.display

    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    x = mt.tensor(np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32))
    with track(model) as mem:
        model(x).sum().backward()
    timeline = MemoryTimeline(mem)
    figure = timeline.figure()
    assert figure_png(figure, 1) == figure_png(figure)  # the default is unchanged
    width = lambda png: int.from_bytes(png[16:20], "big")
    assert abs(width(figure_png(figure, 2)) - 2 * width(figure_png(figure))) <= 4  # a tight bounding box rounds
    timeline.widget
    plain = timeline._picture.value
    assert timeline.zoomed(2) is timeline and timeline._picture.value != plain and len(timeline._picture.value) > len(plain)
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kwargs: shown.append(obj))
    timeline._ipython_display_()
    assert width(base64.b64decode(shown[0]["image/png"])) == width(figure_png(timeline.figure(), 2))


@pytest.mark.parametrize("zoom", [0, -1.5, float("nan"), float("inf"), True, "2"])
def test_figure_png_refuses_a_zoom_that_is_not_a_positive_number(zoom):
    figure = Figure()
    figure.add_subplot().plot([0, 1])
    with pytest.raises(ValueError, match="figure_png: zoom must be a positive finite number"):
        figure_png(figure, zoom)
