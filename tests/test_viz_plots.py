"""Training plots: loss curve and decision boundary."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.figure import Figure

from minigrad.scalar import MLP, Value, make_moons
from minigrad.viz import plot_decision_boundary, plot_loss_curve


def test_loss_curve_alone():
    fig = plot_loss_curve([1.0, 0.6, 0.4, 0.3], title="Loss")
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_title() == "Loss" and ax.get_xlabel() == "step" and ax.get_ylabel() == "loss"
    assert list(ax.lines[0].get_ydata()) == [1.0, 0.6, 0.4, 0.3]


def test_loss_curve_with_accuracy_on_a_second_axis_accepts_values():
    fig = plot_loss_curve([Value(1.0), Value(0.5)], accuracies=[0.5, 0.9])
    assert len(fig.axes) == 2
    assert fig.axes[1].get_ylabel() == "accuracy"
    assert fig.axes[1].get_ylim() == (0.0, 1.05)


def test_loss_curve_draws_into_a_given_axes():
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_loss_curve([3.0, 2.0], ax=ax) is fig


def test_decision_boundary_colours_both_sides_and_shows_the_points():
    points, labels = make_moons(40, seed=1)
    model = MLP(2, [8, 1], seed=0)
    fig = plot_decision_boundary(model, points, labels, resolution=12)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    xs = [p[0] for p in points]
    assert ax.get_xlim()[0] == pytest.approx(min(xs) - 0.5)
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend == ["y = -1", "y = +1"]
    scattered = sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_offsets"))
    assert scattered >= len(points)


def test_decision_boundary_default_resolution_with_a_linear_model():
    def model(xy):
        return Value(xy[0]) - Value(xy[1])

    points = [(0.0, 1.0), (1.0, 0.0), (0.5, 0.6), (0.7, 0.2)]
    fig = plot_decision_boundary(model, points, [-1, 1, -1, 1])
    assert len(fig.axes) == 1


def test_decision_boundary_rejects_bad_input():
    with pytest.raises(TypeError, match="single score"):
        plot_decision_boundary(MLP(2, [3, 2]), [(0.0, 0.0), (1.0, 1.0)], [1, -1], resolution=3)
    with pytest.raises(ValueError, match="shape"):
        plot_decision_boundary(lambda xy: Value(0.0), [1.0, 2.0], [1, -1])
    with pytest.raises(ValueError, match="labels"):
        plot_decision_boundary(lambda xy: Value(0.0), [(0.0, 0.0)], [1, -1])
