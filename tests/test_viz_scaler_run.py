"""The GradScaler run: a real scaler's states over injected overflows and growths, the figure, the stepping widget."""

import xml.etree.ElementTree as ET

import pytest

from minigrad.amp.scaler_state import update_scale
from minigrad.viz.scaler_run import ScalerRun, ScalerStep, describe_step, draw_scaler_run, record_scaler_run
from svg_text_boxes import SVG, assert_legible_and_apart


@pytest.fixture(scope="module")
def run():
    return record_scaler_run(steps=24, overflow_at=(3, 4, 13), growth_interval=4)


def test_the_run_follows_the_scalers_state_machine(run):
    assert [s.step for s in run if s.skipped] == [3, 4, 13] == [s.step for s in run if s.found_inf]
    assert [s.step for s in run if s.event == "growth"] == [8, 12, 17, 21]
    scale, tracker = 2.0**16, 0
    for s in run:
        assert s.scale == scale
        scale, tracker = update_scale(scale, tracker, s.found_inf, 2.0, 0.5, 4)
        assert (s.scale_after, s.tracker_after) == (scale, tracker)
    assert run[-1].scale_after == 2.0**17


def test_without_overflows_the_scale_only_grows():
    clean = record_scaler_run(steps=6, overflow_at=(), growth_interval=2, init_scale=8.0)
    assert [s.scale for s in clean] == [8.0, 8.0, 16.0, 16.0, 32.0, 32.0] and not any(s.skipped for s in clean)
    with pytest.raises(ValueError, match="overflow_at must name steps from 1 to steps=6"):
        record_scaler_run(steps=6, overflow_at=(7,))


def test_each_step_in_words(run):
    assert "inf gradient was put in, so the optimizer step was skipped and the scale backed off to 2^15" in \
        describe_step(run, 3)
    assert "the scale grew to 2^15 and the tracker is back to 0" in describe_step(run, 8)
    assert describe_step(run, 6, 4).endswith("growth tracker 2 of 4")


def _marks(figure, attribute):
    return [int(e.get(attribute)) for e in ET.fromstring(figure.svg).iter() if attribute in e.attrib]


@pytest.mark.parametrize("current", [None, 1, 3, 13, 24])
def test_the_figure_marks_skips_and_growths_and_is_legible(run, current):
    figure = draw_scaler_run(run, current)
    assert figure.svg == draw_scaler_run(run, current).svg
    assert_legible_and_apart(figure)
    assert _marks(figure, "data-skipped") == [3, 4, 13] and _marks(figure, "data-growth") == [8, 12, 17, 21]
    assert _marks(figure, "data-current") == ([] if current is None else [current])
    texts = " ".join(t.text or "" for t in ET.fromstring(figure.svg).iter(f"{SVG}text"))
    if current is None:
        assert "24 steps: 3 skipped (each halved the scale), 4 growths" in texts
    else:
        assert f"step {current}/24:" in texts


def test_a_long_run_thins_its_step_labels_and_stays_apart():
    long = [ScalerStep(k, 2.0**16, False, False, 2.0**16, k % 7, False) for k in range(1, 301)]
    assert_legible_and_apart(draw_scaler_run(long, 150))


def test_the_widget_steps_through_the_run(run):
    stepper = ScalerRun(run, growth_interval=4)
    assert stepper.current == 1
    stepper.set(13)
    assert "skipped" in stepper.describe()
    with pytest.raises(ValueError, match="current must be a step from 1 to 24"):
        stepper.set(25)
    assert 'data-current' not in stepper.static_figure().svg
    pytest.importorskip("ipywidgets")
    stepper.widget
    stepper._slider.value = 8
    assert stepper.current == 8 and "grew to 2^15" in stepper._readout.value
    assert 'data-current="8"' in stepper._picture.value
