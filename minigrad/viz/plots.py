"""Training plots with matplotlib: the loss curve and a 2-D decision boundary.

Figures are made with ``matplotlib.figure.Figure``, not pyplot, so nothing is
left in pyplot's global state: a returned figure shows once as a notebook
cell's value (use ``display(fig)`` or ``fig.savefig(...)`` otherwise).
Pass ``ax`` to draw into an existing figure; its figure is returned.

Invariant: under IPython a returned figure shows as a PNG image even without
``%matplotlib inline`` (each plot function calls ``show_figures_as_png``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from minigrad.viz.figure_display import show_figures_as_png

__all__ = ["plot_loss_curve", "plot_decision_boundary"]

LOSS_COLOUR, ACCURACY_COLOUR = "#3b6fb6", "#e07b39"
NEGATIVE, POSITIVE = "#e07b39", "#3b7dd8"  # points labelled -1 and +1
NEGATIVE_REGION, POSITIVE_REGION = "#fbe3d2", "#dbe8f8"
BOUNDARY = "#4b5563"


def plot_loss_curve(
    losses: Sequence[Any],
    accuracies: Sequence[Any] | None = None,
    ax=None,
    title: str = "Training loss",
) -> Figure:
    """Loss per step; with ``accuracies``, a second y axis on the right for them.

    Entries may be numbers or Values (their ``.data`` is used).
    """
    show_figures_as_png()
    losses = _floats(losses, "losses")
    ax = ax if ax is not None else Figure(figsize=(6.4, 3.6), layout="constrained").add_subplot()
    lines = ax.plot(range(len(losses)), losses, color=LOSS_COLOUR, linewidth=1.6, label="loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    legend_ax, legend_place = ax, "upper right"
    if accuracies is not None:
        accuracies = _floats(accuracies, "accuracies")
        # The twin axes is drawn over ``ax``: the legend goes on it so no line covers it.
        right = legend_ax = ax.twinx()
        legend_place = "center right"
        lines += right.plot(
            range(len(accuracies)), accuracies, color=ACCURACY_COLOUR, linewidth=1.6, label="accuracy"
        )
        right.set_ylabel("accuracy")
        if all(0.0 <= a <= 1.0 for a in accuracies):
            right.set_ylim(0.0, 1.05)
    legend_ax.legend(lines, [line.get_label() for line in lines], loc=legend_place, framealpha=0.9)
    return ax.figure


def plot_decision_boundary(
    model: Callable[[list[float]], Any],
    points: Sequence[Sequence[float]],
    labels: Sequence[float],
    resolution: int = 40,
    ax=None,
    padding: float = 0.5,
    title: str = "Decision boundary",
) -> Figure:
    """Regions where ``model([x, y]).data`` is positive or negative, and the labelled points.

    The model runs once per grid point (``resolution ** 2`` forward passes)
    on plain floats, so no gradient graph links the passes. Labels are -1/+1
    (anything > 0 counts as +1).
    """
    show_figures_as_png()
    points = np.asarray(points, dtype=float)
    labels = np.asarray(labels, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"plot_decision_boundary: points must have shape (n, 2), got {points.shape}")
    if len(labels) != len(points):
        raise ValueError(f"plot_decision_boundary: {len(points)} points but {len(labels)} labels")
    if not isinstance(resolution, int) or resolution < 2:
        raise ValueError(f"plot_decision_boundary: resolution must be an int >= 2, got {resolution!r}")

    low, high = points.min(axis=0) - padding, points.max(axis=0) + padding
    xs = np.linspace(low[0], high[0], resolution)
    ys = np.linspace(low[1], high[1], resolution)
    scores = np.array([[_score(model, x, y) for x in xs] for y in ys])

    ax = ax if ax is not None else Figure(figsize=(5.2, 4.6), layout="constrained").add_subplot()
    finite = scores[np.isfinite(scores)]
    lowest, highest = (finite.min(), finite.max()) if finite.size else (0.0, 0.0)
    levels = [min(lowest, 0.0) - 1.0, 0.0, max(highest, 0.0) + 1.0]
    ax.contourf(xs, ys, scores, levels=levels, colors=[NEGATIVE_REGION, POSITIVE_REGION])
    if lowest < 0.0 < highest:
        ax.contour(xs, ys, scores, levels=[0.0], colors=[BOUNDARY], linewidths=1.2)
    positive = labels > 0
    for mask, colour, name in ((~positive, NEGATIVE, "y = -1"), (positive, POSITIVE, "y = +1")):
        ax.scatter(points[mask, 0], points[mask, 1], s=26, c=colour, edgecolors="white", linewidths=0.6, label=name)
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(title)
    ax.legend(loc="upper right", frameon=True, framealpha=0.85, fontsize="small")
    return ax.figure


def _score(model, x: float, y: float) -> float:
    out = model([float(x), float(y)])
    if isinstance(out, (list, tuple)):
        raise TypeError(
            f"plot_decision_boundary: the model returned {len(out)} outputs; it needs a "
            f"single score (an MLP whose last layer has 1 neuron)"
        )
    return float(getattr(out, "data", out))


def _floats(values: Sequence[Any], name: str) -> list[float]:
    try:
        return [float(getattr(v, "data", v)) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"plot_loss_curve: {name} must be numbers or Values") from None
