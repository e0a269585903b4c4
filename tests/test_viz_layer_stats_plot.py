"""Chapter 11's layer figures: the lines are the monitor's records; inf/NaN steps are marked; bad input is refused."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.training import LayerMonitor
from minigrad.viz import plot_activation_stats, plot_grad_norms

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="module")
def monitor():
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = optim.SGD(model.parameters(), lr=0.5)
    x, y = mt.randn(16, 4), mt.tensor(np.arange(16) % 3)
    with LayerMonitor(model, opt) as m:
        for _ in range(5):
            opt.zero_grad()
            nn.CrossEntropyLoss()(model(x), y).backward()
            opt.step()
    return m


def _legend_apart(fig: Figure) -> None:
    fig.draw_without_rendering()
    (legend,) = fig.legends
    for ax in fig.axes:
        assert not legend.get_window_extent().overlaps(ax.get_window_extent())


def test_grad_norm_lines_are_the_records(monitor):
    fig = plot_grad_norms(monitor)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["0 (Linear)", "2 (Linear)"]
    assert list(ax.lines[0].get_ydata()) == monitor.grad_norms["0"] and list(ax.lines[0].get_xdata()) == [1, 2, 3, 4, 5]
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "step"
    assert repr(fig) == "<Figure size 900x360 with 1 Axes>"
    _legend_apart(fig)


def test_a_non_finite_norm_is_crossed_and_named_and_none_is_a_gap():
    fig = plot_grad_norms({"fc": [1.0, 10.0, math.inf, math.nan], "frozen": [None, None, 2.0, 3.0]})
    ax = fig.axes[0]
    crosses = [line for line in ax.lines if line.get_label() == "inf or NaN"]
    assert len(crosses) == 1 and list(crosses[0].get_xdata()) == [3, 4]
    assert "inf/NaN at step 3 and after" in ax.get_title()
    assert np.isnan(ax.lines[1].get_ydata()[:2]).all()


def test_activation_panels_hold_each_statistic(monitor):
    fig = plot_activation_stats(monitor)
    assert [ax.get_title() for ax in fig.axes] == ["mean", "standard deviation", "share of exact zeros (%)",
                                                   "largest |x| (log)"]
    assert [line.get_label() for line in fig.axes[0].lines] == ["0 (Linear)", "1 (ReLU)", "2 (Linear)"]
    records = monitor.activations["1"]
    assert list(fig.axes[2].lines[1].get_ydata()) == pytest.approx([100 * r.zero_fraction for r in records])
    assert list(fig.axes[0].lines[1].get_xdata()) == [r.step + 1 for r in records]
    _legend_apart(fig)
    only = plot_activation_stats(monitor, layers=["", "1"])
    assert [line.get_label() for line in only.axes[1].lines] == ["(model) (Sequential)", "1 (ReLU)"]


def test_bad_input_is_refused(monitor):
    with pytest.raises(TypeError, match="expected a LayerMonitor"):
        plot_grad_norms([1.0, 2.0])
    with pytest.raises(ValueError, match="no gradient norm recorded"):
        plot_grad_norms(LayerMonitor(nn.Linear(2, 2)))
    with pytest.raises(ValueError, match="no module named 'fc9'"):
        plot_activation_stats(monitor, layers=["fc9"])
    with pytest.raises(ValueError, match="no activation recorded"):
        plot_activation_stats(LayerMonitor(nn.Linear(2, 2)))
    with pytest.raises(TypeError, match="expected a LayerMonitor"):
        plot_activation_stats({})
