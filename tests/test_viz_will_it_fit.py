"""Will it fit? The step's peak by category against a GPU's capacity; the verdict flips just past the largest batch."""

import sys
import xml.etree.ElementTree as ET

import pytest

from minigrad.memory.accumulation import measure_accumulated_peak
from minigrad.memory.estimate import estimate
from minigrad.memory.profiles import get_profile
from minigrad.training.recipes import mnist_cnn, mnist_mlp
from minigrad.viz.graph_svg import SVGFigure
from minigrad.viz.will_it_fit import BAR_WIDTH, LEFT, WillItFit, build_model, draw_will_it_fit

SVG = "{http://www.w3.org/2000/svg}"
MiB = 2**20


def byte_rects(figure: SVGFigure) -> list[dict]:
    return [dict(r.attrib) for r in ET.fromstring(figure.svg).iter(f"{SVG}rect") if "data-bytes" in r.attrib]


def test_the_figure_is_deterministic_and_valid_svg():
    parts = {"parameter": 3 * MiB, "activation": 700 * MiB, "temporary": 200 * MiB, "gradient": 0}
    a = draw_will_it_fit(parts, "gtx1050", "a title", max_batch=123).svg
    assert a == draw_will_it_fit(dict(parts), get_profile("gtx1050"), "a title", max_batch=123).svg
    ET.fromstring(a)
    assert ">a title<" in a and "largest batch that fits: 123" in a and ">fits: peak 903.0 MiB" in a
    assert 'data-category="gradient"' not in a  # no empty rectangle for a category holding nothing


def test_every_rectangle_is_proportional_to_its_bytes_on_one_scale():
    parts = {"parameter": 3 * MiB, "activation": 1500 * MiB, "temporary": 800 * MiB, "input": 20 * MiB}
    profile = get_profile("gtx1050")
    rects = byte_rects(draw_will_it_fit(parts, profile))
    scale = BAR_WIDTH / ((profile.context_bytes + sum(parts.values())) * 1.04)  # the step is longer than the card
    for rect in rects:
        assert float(rect["width"]) == pytest.approx(int(rect["data-bytes"]) * scale, abs=1e-3)
    step = [r for r in rects if r["data-category"] in parts]
    assert [r["data-category"] for r in step] == list(parts)
    x = LEFT + profile.context_bytes * scale  # the step starts after the CUDA context, its parts end to end
    for rect in step:
        assert float(rect["x"]) == pytest.approx(x, abs=1e-3)
        x += float(rect["width"])
    assert ">does NOT fit: " in draw_will_it_fit(parts, profile).svg


def test_figures_given_one_span_share_one_scale_and_a_short_span_is_widened():
    profile = get_profile("gtx1050")
    small, big = {"activation": 100 * MiB}, {"activation": 2500 * MiB}
    span = 3 * 1024 * MiB
    for parts in (small, big):
        rect = next(r for r in byte_rects(draw_will_it_fit(parts, profile, span_bytes=span))
                    if r["data-category"] == "activation")
        assert float(rect["width"]) == pytest.approx(int(rect["data-bytes"]) * BAR_WIDTH / span, abs=1e-3)
    assert draw_will_it_fit(small, profile).svg == draw_will_it_fit(small, profile, span_bytes=None).svg
    assert draw_will_it_fit(big, profile, span_bytes=1).svg == draw_will_it_fit(big, profile).svg  # widened


@pytest.mark.parametrize("span", [0, -5, float("nan"), float("inf"), True, "2 GiB"])
def test_a_span_that_is_not_a_positive_number_of_bytes_is_refused(span):
    with pytest.raises(ValueError, match="draw_will_it_fit: span_bytes must be a positive number of bytes"):
        draw_will_it_fit({"activation": MiB}, "gtx1050", span_bytes=span)


def test_the_verdict_flips_just_after_the_largest_batch():
    picker = WillItFit("mnist-cnn", "gtx1050", batch_size=64)
    largest = picker.largest_batch()
    assert largest == estimate(mnist_cnn(), (1, 28, 28), 64).max_batch_size("gtx1050") > 64
    picker.set(batch_size=largest)
    assert picker.fits() and ">fits: " in picker.figure().svg
    picker.set(batch_size=largest + 1)
    assert not picker.fits() and ">does NOT fit: " in picker.figure().svg
    usable = get_profile("gtx1050").usable_bytes  # the card decides in reserved bytes, not the tensors' bytes
    assert picker.estimate().reserved > usable >= picker.estimate().at(largest).replay("gtx1050").peak_reserved
    assert picker.estimate().peak <= usable and 'data-category="reserved_unallocated"' in picker.figure().svg
    assert picker.measurements == 1  # the batch size is read from one cached estimate
    picker.set(gpu="gtx1650")
    assert picker.fits() and picker.measurements == 1
    picker.set(optimizer="sgd")
    assert picker.fits() and picker.measurements == 2  # another optimizer: measured once more


def test_width_one_is_the_recipe_and_a_wider_model_costs_more():
    assert estimate(build_model("mnist-mlp", 1), (1, 28, 28), 64).peak == estimate(mnist_mlp(), (1, 28, 28), 64).peak
    assert measure_accumulated_peak(lambda: build_model("mnist-cnn", 1), (1, 28, 28), 32, 2) == \
        measure_accumulated_peak(mnist_cnn, (1, 28, 28), 32, 2)
    picker = WillItFit("mnist-cnn", batch_size=256)
    narrow = picker.estimate().peak
    picker.set(width=2)
    assert picker.estimate().peak > 1.8 * narrow and "channels 32-64" in picker.figure().svg
    picker.set(dtype="float16")
    assert picker.estimate().peak < 0.6 * estimate(build_model("mnist-cnn", 2), (1, 28, 28), 256).peak


@pytest.mark.parametrize("change, message", [
    ({"model": "resnet"}, "unknown model 'resnet'; choose one of mnist-cnn, mnist-mlp"),
    ({"width": 3}, "unknown width 3; choose one of 1, 2, 4, 8"),
    ({"optimizer": "lbfgs"}, "unknown optimizer 'lbfgs'"),
    ({"dtype": "int64"}, "unknown dtype 'int64'"),
    ({"gpu": "rtx9090"}, "unknown GPU 'rtx9090'"),
    ({"batch_size": 0}, "batch_size must be a whole number from 1 to 32768"),
])
def test_bad_choices_name_the_valid_ones(change, message):
    with pytest.raises(ValueError, match=message):
        WillItFit(**change)


def test_the_widget_controls_change_the_choice_and_the_picture():
    pytest.importorskip("ipywidgets")
    picker = WillItFit("mnist-cnn", "gtx1050", batch_size=1024)
    picker.widget
    controls = picker._controls
    assert set(controls) == {"model", "width", "gpu", "batch_size", "optimizer", "dtype"}
    before = picker._picture.value
    controls["batch_size"].value = 8000
    assert picker.batch_size == 8000 and "does NOT fit" in picker._readout.value and picker._picture.value != before
    controls["gpu"].value = "t4"
    assert picker.gpu == "t4" and "fits" in picker._readout.value and "NVIDIA T4" in picker._picture.value
    controls["model"].value = "mnist-mlp"
    assert picker.model == "mnist-mlp" and "hidden 256-128" in picker._picture.value
    picker.set(width=4, dtype="float16")  # the controls follow a change made in code
    assert controls["width"].value == 4 and controls["dtype"].value == "float16"


def test_ipython_display_sends_the_widget_with_a_static_fallback(monkeypatch):
    pytest.importorskip("ipywidgets")
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kwargs: shown.append((obj, kwargs)))
    WillItFit(batch_size=512)._ipython_display_()
    bundle, kwargs = shown[0]
    assert kwargs["raw"] is True and "application/vnd.jupyter.widget-view+json" in bundle
    assert "image/png" in bundle or "image/svg+xml" in bundle

    shown.clear()
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import fails as if not installed
    picker = WillItFit(batch_size=512)
    picker._ipython_display_()
    assert isinstance(shown[0][0], SVGFigure) and shown[0][0].svg == picker.figure().svg


def test_a_profile_of_ones_own_is_a_choice_too():
    from dataclasses import replace

    card = replace(get_profile("gtx1050"), name="My laptop GPU", short_name="mine", memory_bytes=3 * 2**30)
    picker = WillItFit(gpu=card, batch_size=6000)
    assert picker.gpu is card and picker.fits() and "My laptop GPU" in picker.figure().svg
    picker.set(gpu=get_profile("gtx1050"))  # a known card, given as its profile
    assert picker.gpu == "gtx1050" and not picker.fits()


def test_a_profile_of_ones_own_joins_the_widgets_list():
    pytest.importorskip("ipywidgets")
    from dataclasses import replace

    card = replace(get_profile("gtx1050"), name="My laptop GPU", short_name="mine", memory_bytes=3 * 2**30)
    picker = WillItFit(batch_size=6000)
    picker.widget
    picker.set(gpu=card)
    assert picker._controls["gpu"].value is card and "fits" in picker._readout.value
    picker._controls["gpu"].value = "gtx1050"
    assert picker.gpu == "gtx1050" and "does NOT fit" in picker._readout.value


@pytest.mark.parametrize("options", [
    {"model": "mnist-cnn", "gpu": "gtx1050", "batch_size": 4096},  # chapter 08's
    {"model": "mnist-mlp", "gpu": "rtx3060", "batch_size": 512, "width": 8},
    {"model": "mnist-cnn", "gpu": "gtx1050", "batch_size": 32768},  # does not fit
])
def test_the_verdict_text_and_the_figure_write_the_same_amounts(options):
    import re

    explorer = WillItFit(**options)
    labels = " | ".join(t.text or "" for t in ET.fromstring(explorer.figure().svg).iter("{http://www.w3.org/2000/svg}text"))
    amounts = re.findall(r"-?[\d.]+(?:e[+-]?\d+)? [KMGTP]?i?B\b", explorer.verdict())
    assert len(amounts) >= 4  # usable, allocated peak, reserved, margin
    for amount in amounts:
        assert amount in labels, f"{amount} (from the verdict) is not written in the figure: {labels}"


def test_the_title_and_the_verdict_fit_in_the_figure():
    from minigrad.viz.graph_svg import _text_width

    figure = WillItFit(model="mnist-cnn", gpu="gtx1050", batch_size=4096).figure()
    lines = [t for t in ET.fromstring(figure.svg).iter("{http://www.w3.org/2000/svg}text") if t.get("font-weight")]
    assert len(lines) == 2  # the title and the verdict, bold at 12 px from x = 12
    assert all(12 + _text_width(t.text) <= figure.width - 12 for t in lines), figure.width
