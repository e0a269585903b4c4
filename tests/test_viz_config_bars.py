"""The capstone's configuration bars: the picture follows the knobs, is labelled, and bad input is explained."""

import re
from dataclasses import replace

import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.capstone.config import TrainConfig
from minigrad.capstone.fit_plan import estimate_step
from minigrad.memory import get_profile
from minigrad.viz.config_bars import CONTROL_DESCRIPTIONS, PART_COLOURS, ConfigBars, draw_config_bars


def model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def widths(svg: str, part: str) -> list[float]:
    return [float(w) for w in re.findall(rf'data-part="{part}"[^>]*width="([0-9.]+)"', svg)]


def test_bars_sum_to_reserved_and_are_labelled():
    steps = [estimate_step(model(), (1, 8, 8), TrainConfig(2048, card="gtx1050")),
             estimate_step(model(), (1, 8, 8), TrainConfig(2048, amp="float16", accumulate=4, card="gtx1050"))]
    svg = draw_config_bars(steps, "gtx1050").svg
    for step in steps:
        assert sum(step.bars.values()) == step.reserved
    assert svg == draw_config_bars(steps, "gtx1050").svg  # pure
    for part in PART_COLOURS:
        assert part in svg
    assert "usable 1.73 GiB" in svg and "float16 + accumulate 4 (micro-batch 512)" in svg
    assert svg.count("fits") >= 2
    assert widths(svg, "activations")[1] < widths(svg, "activations")[0]
    data, _ = draw_config_bars(steps, "gtx1050")._repr_mimebundle_()
    assert "image/png" in data  # shows before the kernel runs (house style: PNG, digest of the SVG as text)


def test_widget_picture_changes_with_each_knob():
    ipywidgets = pytest.importorskip("ipywidgets")
    bars = ConfigBars(model(), (1, 8, 8), 2048, card="gtx1050")
    box = bars.widget
    controls = {c.description: c for row in box.children for c in getattr(row, "children", [row])
                if isinstance(c, ipywidgets.ValueWidget)}
    assert set(CONTROL_DESCRIPTIONS.values()) <= set(controls)
    pictures = [bars._picture.value]
    controls["precision"].value = "float16"
    pictures.append(bars._picture.value)
    controls["checkpoint segments"].value = 2
    pictures.append(bars._picture.value)
    controls["accumulate"].value = 4
    pictures.append(bars._picture.value)
    assert len(set(pictures)) == 4
    assert bars.config == TrainConfig(2048, amp="float16", checkpoint=2, accumulate=4, card="gtx1050")
    assert "float16 + 2 segments + accumulate 4" in pictures[-1]
    controls["precision"].value = "float32"
    assert "float32 + 2 segments" in bars._picture.value
    assert bars.measurements == 5


def test_bad_input_is_explained():
    with pytest.raises(ValueError, match="no configuration"):
        draw_config_bars([], "gtx1050")
    with pytest.raises(TypeError, match="StepFit"):
        draw_config_bars([{"peak": 3}], "gtx1050")
    with pytest.raises(TypeError, match="Sequential"):
        ConfigBars(nn.Linear(4, 2), (4,), 8)
    bars = ConfigBars(model(), (1, 8, 8), 24)
    with pytest.raises(ValueError, match="must divide"):
        bars.set(accumulate=5)
    with pytest.raises(ValueError, match="choose 1 to 6"):
        bars.set(checkpoint=9)
    with pytest.raises(ValueError, match="unknown knob"):
        bars.set(dtype="float16")
    with pytest.raises(ValueError, match="amp"):
        bars.set(amp="float8")


def test_the_verdict_and_the_bar_are_the_cards():
    # float32 at batch 2048 reserves 26 MiB on a card big enough; a 24 MiB card runs it (it empties its cache and
    # retries): the bar ends at the card's reserved peak and says it fits, the unjudged step's figure notwithstanding
    mt.manual_seed(0)
    wide = nn.Sequential(nn.Flatten(), nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))
    base = get_profile("gtx1050")
    card = replace(base, name="test card", short_name="testcard", memory_bytes=base.context_bytes + (24 << 20))
    unjudged = estimate_step(wide, (1, 8, 8), TrainConfig(2048, card=card), judge=False)
    assert unjudged.reserved == 26 << 20
    svg = draw_config_bars([unjudged], card).svg
    assert "reserved 24.0 MiB: fits" in svg and "26.0 MiB" not in svg
    short = replace(card, memory_bytes=card.memory_bytes - 1)
    assert "reserved 26.0 MiB: does NOT fit" in draw_config_bars([unjudged], short).svg
