"""Chapter 11's learning-rate range figure: the loss against a growing learning rate, and the rate it suggests.

``plot_lr_range(result)`` draws what ``minigrad.training.lr_range_test``
returned: each step's loss (faint) and the smoothed loss (bold) against the
learning rate on a log axis, a dot on the lowest smoothed loss, a green
line at the suggested rate (a tenth of the rate at that lowest point) and
a red one where the test diverged. A step whose loss was inf or NaN is not
drawn; the red line marks it. The loss axis stops a little above the
highest smoothed loss before divergence, so the blow-up does not flatten
the part of the curve that matters.

The result is read by duck typing (``lrs``, ``losses``, ``smoothed``,
``suggestion``, ``diverged_at``): this module imports no stage.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from minigrad.viz.figure_display import show_figures_as_png

__all__ = ["plot_lr_range"]

RAW, SMOOTH, SUGGESTED, DIVERGED = "#9bb4d9", "#3b6fb6", "#15803d", "#b42318"


def plot_lr_range(result, title: str = "learning-rate range test") -> Figure:
    """The loss (raw and smoothed) against the learning rate, with the suggestion and the divergence marked."""
    show_figures_as_png()
    if not all(hasattr(result, a) for a in ("lrs", "losses", "smoothed", "suggestion", "diverged_at")):
        raise TypeError(f"plot_lr_range: expected the result of lr_range_test, got {type(result).__name__}")
    lrs = np.asarray(result.lrs, dtype=float)
    losses = np.asarray(result.losses, dtype=float)
    smoothed = np.asarray(result.smoothed, dtype=float)
    if not (len(lrs) == len(losses) == len(smoothed)):
        raise ValueError(f"plot_lr_range: {len(lrs)} learning rates, {len(losses)} losses and {len(smoothed)} smoothed "
                         f"losses; they must be one per step")
    if len(lrs) == 0 or not (np.isfinite(lrs).all() and (lrs > 0).all()):
        raise ValueError(f"plot_lr_range: the learning rates must be finite and > 0 (one per step), got {lrs.tolist()}")
    finite = np.isfinite(smoothed)
    if not finite.any():
        raise ValueError("plot_lr_range: no step gave a finite loss (the first one diverged); start at a lower rate")
    fig = Figure(figsize=(8.0, 3.8), layout="constrained")
    ax = fig.subplots()
    ax.plot(lrs, np.where(np.isfinite(losses), losses, np.nan), color=RAW, linewidth=0.8, label="loss per step")
    ax.plot(lrs, np.where(finite, smoothed, np.nan), color=SMOOTH, linewidth=2.0, label="smoothed loss")
    lowest = int(np.nanargmin(np.where(finite, smoothed, np.nan)))
    ax.plot([lrs[lowest]], [smoothed[lowest]], "o", color=SMOOTH, markersize=6,
            label=f"lowest smoothed loss {smoothed[lowest]:.3g} at lr {lrs[lowest]:.2g}")
    if result.suggestion is not None:
        ax.axvline(result.suggestion, color=SUGGESTED, linewidth=1.6, linestyle="--",
                   label=f"suggested lr {result.suggestion:.2g} (lowest / 10)")
    if result.diverged_at is not None:
        ax.axvline(result.diverged_at, color=DIVERGED, linewidth=1.6, label=f"diverged at lr {result.diverged_at:.2g}")
    before = smoothed[:-1] if result.diverged_at is not None and len(smoothed) > 1 else smoothed
    before = before[np.isfinite(before)]
    low, high = float(np.nanmin(smoothed[finite])), float(before.max() if len(before) else smoothed[finite].max())
    span = max(high - low, abs(high) * 0.05, 1e-12)
    ax.set_ylim(low - 0.08 * span, high + 0.25 * span)
    ax.set_xscale("log")
    ax.set_xlabel("learning rate (log)")
    ax.set_ylabel("loss")
    ax.set_title(title + ("" if result.suggestion is not None else " (no suggestion: the loss never fell)"))
    ax.grid(alpha=0.3, which="both")
    fig.legend(loc="outside right upper", fontsize="small")
    return fig
