"""The gradient histogram: shares lost to underflow, subnormal and overflow, exact on constructed data; real gradients; the figure."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from minigrad.viz.float_explorer import FORMATS, classify, encode
from minigrad.viz.gradient_histogram import (
    GradientHistogram, collect_gradients, draw_gradient_histogram, precision_shares, rounding_thresholds,
)
from svg_text_boxes import SVG, assert_legible_and_apart

# float16 around its edges: (value, what float16 does to it)
EDGES16 = [
    (2.0**-26, "underflow"), (2.0**-25, "underflow"),  # half the smallest subnormal ties to the even 0
    (2.0**-25 * (1 + 2.0**-20), "subnormal"), (2.0**-24, "subnormal"), (2.0**-14 - 2.0**-24, "subnormal"),
    (2.0**-14 - 2.0**-25, "normal"),  # the tie between the largest subnormal and the smallest normal goes up
    (2.0**-14, "normal"), (1.0, "normal"), (65504.0, "normal"), (65519.99, "normal"),
    (65520.0, "overflow"), (1e6, "overflow"),
]


def test_the_shares_are_exact_on_float16s_edges():
    values = np.array([v for v, _ in EDGES16] + [0.0, -0.0])  # zeros: nothing to lose, not counted
    s = precision_shares(values, 1.0, "float16")
    kinds = [k for _, k in EDGES16]
    n = len(kinds)
    assert (s.underflow, s.subnormal, s.overflow, s.count) == (
        kinds.count("underflow") / n, kinds.count("subnormal") / n, kinds.count("overflow") / n, n)
    assert tuple(precision_shares(-values, 1.0, "float16")) == tuple(s)  # magnitudes: the sign does not matter
    scaled = precision_shares(values / 2.0**10, 2.0**10, "float16")  # a power of two moves every value exactly
    assert tuple(scaled) == tuple(s)
    assert tuple(precision_shares(values, 1.0, "bfloat16")) == (0.0, 0.0, 0.0)  # float32's range


def test_a_larger_scale_trades_underflow_for_overflow():
    values = np.array([2.0**-30, 2.0**-20, 2.0**-10, 1.0, 2.0**8])
    assert tuple(precision_shares(values, 1.0, "float16")) == (0.2, 0.2, 0.0)
    assert tuple(precision_shares(values, 2.0**6, "float16")) == (0.0, 0.2, 0.0)
    assert tuple(precision_shares(values, 2.0**16, "float16")) == (0.0, 0.0, 0.4)
    assert tuple(precision_shares(values, 2.0**24, "bfloat16")) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_the_thresholds_agree_with_rounding_each_value(name):
    f = FORMATS[name]
    zero, normal, inf = rounding_thresholds(f)
    gen = np.random.default_rng(0)
    exponents = gen.uniform(np.log2(f.smallest_subnormal) - 3, np.log2(f.max) + 2, 3000)
    values = np.concatenate([2.0**exponents, [zero, normal, inf, np.nextafter(zero, 1), np.nextafter(normal, 0),
                                              np.nextafter(inf, 0)]])
    for x in values:
        kind = classify(encode(float(x), f), f)
        expected = ("underflow" if kind == "zero" else "overflow" if kind in ("inf", "nan") else kind)
        s = precision_shares([x], 1.0, f)
        got = "underflow" if s.underflow else "subnormal" if s.subnormal else "overflow" if s.overflow else "normal"
        assert got == expected, (name, x)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="must be finite"):
        precision_shares([1.0, np.inf], 1.0, "float16")
    with pytest.raises(ValueError, match="scale must be a finite number > 0"):
        precision_shares([1.0], 0, "float16")
    with pytest.raises(ValueError, match="unknown float format 'float64'"):
        precision_shares([1.0], 1.0, "float64")
    assert precision_shares([0.0], 1.0, "float16").count == 0


@pytest.fixture(scope="module")
def gradients():
    return collect_gradients(steps=4, record_at=(1, 4))


def test_real_gradients_of_the_chapter_05_mlp(gradients):
    assert list(gradients) == ["step 1", "step 4"]
    layers = gradients["step 1"]
    assert list(layers) == ["1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"]
    assert layers["1.weight"].shape == (784 * 256,) and layers["1.weight"].dtype == np.float32
    assert all((a >= 0).all() and np.isfinite(a).all() for a in layers.values())
    again = collect_gradients(steps=4, record_at=(4,))
    assert np.array_equal(again["step 4"]["5.weight"], gradients["step 4"]["5.weight"])  # seeded
    with pytest.raises(ValueError, match="record_at must name steps from 1 to steps=4"):
        collect_gradients(steps=4, record_at=(5,))


def _bars(figure):
    return [r for r in ET.fromstring(figure.svg).iter(f"{SVG}rect") if "data-binade" in r.attrib]


def test_the_bars_count_every_nonzero_gradient_and_the_scale_shifts_them(gradients):
    layers = gradients["step 1"]
    n = sum(int(np.count_nonzero(a)) for a in layers.values())
    at_0, at_12 = draw_gradient_histogram(layers, 0), draw_gradient_histogram(layers, 12)
    assert sum(int(b.get("data-count")) for b in _bars(at_0)) == n
    binades = {int(b.get("data-binade")): b.get("data-count") for b in _bars(at_0)}
    shifted = {int(b.get("data-binade")) - 12: b.get("data-count") for b in _bars(at_12)}
    assert binades == shifted
    all_values = np.concatenate(list(layers.values()))
    assert str(len(all_values[all_values > 0])) in at_0.svg.replace(",", "")


@pytest.mark.parametrize("scale", [0, 5, 13, 24])
def test_the_figure_is_legible_apart_and_deterministic(gradients, scale):
    figure = draw_gradient_histogram(gradients["step 4"], scale, "step 4, all layers")
    assert figure.svg == draw_gradient_histogram(gradients["step 4"], scale, "step 4, all layers").svg
    assert_legible_and_apart(figure)
    assert f"float16  at scale 2^{scale}: " in figure.svg and f"bfloat16 at scale 2^{scale}: " in figure.svg


def test_tiny_and_huge_gradients_are_counted_at_the_ends():
    values = np.array([2.0**-60, 2.0**-20, 1.0, 2.0**40])
    figure = draw_gradient_histogram(values, 0)
    assert "1 below 2^-48" in figure.svg and "1 above 2^32" in figure.svg
    assert_legible_and_apart(figure)
    assert "25.00 % flushed to 0, 25.00 % subnormal, 25.00 % overflow" in figure.svg


def test_the_widget_moves_the_scale_and_reports_the_shares(gradients):
    explorer = GradientHistogram(gradients)
    assert explorer.group == "step 1" and explorer.layer == "all layers"
    before = explorer.shares("float16")
    explorer.set(scale_log2=20)
    assert explorer.shares("float16").overflow >= before.overflow
    explorer.set(layer="5.weight", group="step 4")
    assert explorer.shares("float16").count == np.count_nonzero(gradients["step 4"]["5.weight"])
    with pytest.raises(ValueError, match="scale_log2 must be a whole number from 0 to 24"):
        explorer.set(scale_log2=25)
    with pytest.raises(ValueError, match="unknown layer"):
        explorer.set(layer="9.weight")
    static = explorer.static_figure()
    assert static.svg.count("x = log2(|g| x 2^20)") == 2  # both steps, at the current scale
    pytest.importorskip("ipywidgets")
    explorer.widget
    explorer._scale.value = 8
    assert explorer.scale_log2 == 8 and "at scale 2^8" in explorer._readout.value
    explorer._layer.value = "all layers"
    assert explorer.layer == "all layers" and "all layers" in explorer._picture.value


def test_gradients_of_ones_own_pass_in_as_arrays():
    explorer = GradientHistogram({"early": np.full(10, 2.0**-26), "late": np.full(10, 2.0**-10)})
    assert explorer.shares("float16").underflow == 1.0
    explorer.set(scale_log2=2)
    assert explorer.shares("float16").underflow == 0.0 and explorer.shares("float16").subnormal == 1.0
