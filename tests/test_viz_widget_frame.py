"""The course's widgets carry stable CSS classes: ``minigrad-widget``, ``minigrad-<name>``, and ``minigrad-picture``."""

import pytest

from minigrad.viz import BackpropStepper, CheckpointChain
from minigrad.viz.widget_frame import PICTURE_CLASS, WIDGET_CLASS, css_class


@pytest.mark.parametrize("kind, expected", [(BackpropStepper, "minigrad-backprop-stepper"),
                                            (CheckpointChain, "minigrad-checkpoint-chain")])
def test_css_class_is_the_class_name_in_kebab_case(kind, expected):
    assert css_class(kind) == expected


def test_the_widget_box_and_its_picture_carry_their_classes():
    pytest.importorskip("ipywidgets")
    from minigrad.scalar import Value

    stepper = BackpropStepper(Value(2.0) * Value(3.0))
    box = stepper.widget
    assert WIDGET_CLASS in box._dom_classes and "minigrad-backprop-stepper" in box._dom_classes
    assert stepper._picture._dom_classes == (PICTURE_CLASS,)
    before = stepper._picture.value
    stepper.step(stepper.last_step)
    assert "<svg" in before and stepper._picture.value != before  # the picture a browser test compares
