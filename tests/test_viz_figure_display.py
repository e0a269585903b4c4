"""Figures made without pyplot show as PNG in IPython, with or without ``%matplotlib inline``."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import IPython
import pytest
from IPython.core.formatters import DisplayFormatter
from matplotlib.figure import Figure

from minigrad.viz import plot_decision_boundary, plot_loss_curve, show_figures_as_png
from minigrad.viz.figure_display import figure_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def shell(monkeypatch):
    """A stand-in for a fresh kernel: IPython's own DisplayFormatter, nothing registered for Figure."""
    fake = SimpleNamespace(display_formatter=DisplayFormatter())
    monkeypatch.setattr(IPython, "get_ipython", lambda: fake)
    return fake


def test_a_fresh_shell_shows_a_figure_only_as_text(shell):
    data, _ = shell.display_formatter.format(Figure())
    assert "image/png" not in data and "Figure" in data["text/plain"]


@pytest.mark.parametrize("plot", [
    lambda: plot_loss_curve([1.0, 0.5, 0.25], accuracies=[0.5, 0.7, 0.9]),
    lambda: plot_decision_boundary(lambda xy: xy[0] - xy[1], [(0.0, 1.0), (1.0, 0.0)], [-1, 1], resolution=4),
])
def test_plot_functions_make_figures_show_as_png(shell, plot):
    figure = plot()
    data, _ = shell.display_formatter.format(figure)
    assert data["image/png"].startswith(PNG_MAGIC)


def test_registration_is_idempotent(shell):
    assert show_figures_as_png() is True
    printer = shell.display_formatter.formatters["image/png"].lookup_by_type(Figure)
    assert show_figures_as_png() is False
    plot_loss_curve([1.0, 0.5])
    assert shell.display_formatter.formatters["image/png"].lookup_by_type(Figure) is printer


def test_an_existing_figure_formatter_is_kept(shell):
    """As after ``%matplotlib inline`` with ``InlineBackend.figure_formats = ['svg']``."""
    svg = shell.display_formatter.formatters["image/svg+xml"]
    svg.for_type(Figure, lambda figure: "<svg/>")
    assert show_figures_as_png() is False
    data, _ = shell.display_formatter.format(plot_loss_curve([1.0, 0.5]))
    assert "image/png" not in data and data["image/svg+xml"] == "<svg/>"


def test_without_ipython_nothing_happens(monkeypatch):
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert show_figures_as_png() is False
    assert show_figures_as_png(SimpleNamespace()) is False  # a shell without display formatters
    assert isinstance(plot_loss_curve([1.0, 0.5]), Figure)


def test_an_empty_figure_has_no_png():
    assert figure_png(Figure()) is None
    assert figure_png(plot_loss_curve([1.0, 0.5])).startswith(PNG_MAGIC)
