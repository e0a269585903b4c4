"""The learning-rate range figure: curves, the suggestion and the divergence drawn where the result says."""

import math

import matplotlib

matplotlib.use("Agg")

import pytest

from minigrad.training import LRRangeResult
from minigrad.viz import plot_lr_range


def _result(**changes):
    values = dict(lrs=[1e-4, 1e-3, 1e-2, 1e-1, 1.0], losses=[2.0, 1.8, 1.0, 1.4, math.nan],
                  smoothed=[2.0, 1.9, 1.5, 1.45, math.nan], suggestion=1e-2, diverged_at=1.0)
    values.update(changes)
    return LRRangeResult(**values)


def test_curves_suggestion_and_divergence():
    fig = plot_lr_range(_result())
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.lines]
    assert labels[:2] == ["loss per step", "smoothed loss"]
    assert "suggested lr 0.01 (lowest / 10)" in labels and "diverged at lr 1" in labels
    assert "lowest smoothed loss 1.45 at lr 0.1" in labels
    assert ax.get_xscale() == "log" and math.isnan(ax.lines[1].get_ydata()[-1])
    low, high = ax.get_ylim()
    assert low < 1.45 and 2.0 < high < 3.0
    fig.draw_without_rendering()
    assert not fig.legends[0].get_window_extent().overlaps(ax.get_window_extent())


def test_no_suggestion_is_said_in_the_title():
    fig = plot_lr_range(_result(suggestion=None, diverged_at=None))
    assert "no suggestion" in fig.axes[0].get_title()


def test_bad_results_are_refused():
    with pytest.raises(TypeError, match="expected the result of lr_range_test"):
        plot_lr_range({"lrs": []})
    with pytest.raises(ValueError, match="one per step"):
        plot_lr_range(_result(losses=[1.0]))
    with pytest.raises(ValueError, match="no step gave a finite loss"):
        plot_lr_range(_result(lrs=[1e-3], losses=[math.nan], smoothed=[math.nan], suggestion=None, diverged_at=1e-3))
    with pytest.raises(ValueError, match="finite and > 0"):
        plot_lr_range(_result(lrs=[0.0, 1e-3, 1e-2, 1e-1, 1.0]))
