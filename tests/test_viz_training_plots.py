"""Training plots of chapter 05: the live plot callback, the comparison of runs, the digit grid."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from minigrad import nn, optim
from minigrad.data import DataLoader, TensorDataset
from minigrad.tensor import manual_seed
from minigrad.training import EpochRecord, History, fit
from minigrad.viz import LiveTrainingPlot, compare_curves, plot_digits, smooth
from minigrad.viz import training_plots


def _history(epochs: int = 3, steps: int = 5, test: bool = True) -> History:
    h = History()
    for e in range(1, epochs + 1):
        h.step_losses += [2.0 / (e * steps + s) for s in range(steps)]
        h.epochs.append(EpochRecord(e, 1.0 / e, 0.5 + 0.1 * e, 0.1,
                                    test_loss=1.2 / e if test else None, test_accuracy=0.45 + 0.1 * e if test else None))
    return h


def _feed(plot: LiveTrainingPlot, full: History) -> None:
    """Replay ``full`` through the callbacks as fit() would: step ends, then the epoch end."""
    h = History()
    steps = len(full.step_losses) // len(full.epochs)
    for record in full.epochs:
        for s in range(steps):
            h.step_losses.append(full.step_losses[(record.epoch - 1) * steps + s])
            plot.on_step_end(h)
        h.epochs.append(record)
        plot.on_epoch_end(h)


# ------------------------------------------------------------------ smooth


def test_smooth_starts_at_the_first_value_and_keeps_constants():
    assert smooth([3.0, 3.0, 3.0]).tolist() == pytest.approx([3.0, 3.0, 3.0])
    values = [5.0, 1.0, 1.0, 1.0]
    out = smooth(values, 0.5)
    assert out[0] == 5.0 and out[-1] < out[1] < 5.0
    assert smooth(values, 0.0).tolist() == values
    assert len(smooth([])) == 0
    with pytest.raises(ValueError, match="weight"):
        smooth(values, 1.0)


# ------------------------------------------------------------------ LiveTrainingPlot


def test_live_plot_draws_steps_epochs_and_boundaries_without_ipython():
    plot = LiveTrainingPlot(epochs=3, steps_per_epoch=5, display=False, min_interval=0.0)
    full = _history(3, 5)
    _feed(plot, full)
    assert plot.boundaries == [5, 10, 15]
    assert plot.redraws == 3 * 5 + 3  # min_interval=0: every step and every epoch end redraws
    loss_ax, acc_ax = plot.figure.axes[:2]
    assert list(loss_ax.lines[0].get_ydata()) == full.step_losses
    test_line = [line for line in loss_ax.lines if line.get_label() == "test loss"][0]
    assert list(test_line.get_xdata()) == [5, 10, 15]
    assert [line.get_label() for line in acc_ax.lines] == ["train", "test"]
    assert list(acc_ax.lines[1].get_ydata()) == pytest.approx([0.55, 0.65, 0.75])
    assert loss_ax.get_xlim() == (0, 15) and acc_ax.get_xlim() == (0.5, 3.5)
    assert loss_ax.get_yscale() == "log"
    assert "epoch 3/3" in plot.figure._suptitle.get_text()
    # what nbval compares for the figure: the same text on every machine
    assert repr(plot.figure) == "<Figure size 1000x360 with 2 Axes>"


def test_live_plot_throttles_redraws_during_an_epoch():
    plot = LiveTrainingPlot(display=False, min_interval=3600.0)
    _feed(plot, _history(2, 10))
    assert plot.redraws == 1 + 2  # the first step (nothing drawn yet), then one per epoch end


def test_live_plot_with_only_the_epoch_callback_and_no_test_set():
    plot = LiveTrainingPlot(display=False)
    h = History()
    full = _history(2, 4, test=False)
    for record in full.epochs:
        h.step_losses += full.step_losses[(record.epoch - 1) * 4 : record.epoch * 4]
        h.epochs.append(record)
        plot(h)  # __call__ is on_epoch_end
    assert plot.boundaries == [4, 8]
    assert [line.get_label() for line in plot.accuracy_ax.lines] == ["train"]
    assert len(plot.loss_ax.lines[0].get_ydata()) == 8


def test_live_plot_updates_one_display_in_place(monkeypatch):
    """Under IPython: one display() with a display id, then updates of that same output."""
    calls = []

    class Handle:
        def update(self, obj):
            calls.append(("update", obj))

    def fake_display(obj, display_id=False):
        calls.append(("display", obj, display_id))
        return Handle()

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    monkeypatch.setattr(training_plots, "_ipython_shell", lambda: object())
    plot = LiveTrainingPlot(min_interval=3600.0)
    _feed(plot, _history(2, 3))
    assert calls[0] == ("display", plot.figure, True)
    assert [c[0] for c in calls[1:]] == ["update", "update"]
    assert all(c[1] is plot.figure for c in calls)


def test_live_plot_as_fit_callbacks_on_a_tiny_problem():
    gen = np.random.default_rng(0)
    x = gen.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, prefetch=0)
    manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    plot = LiveTrainingPlot(epochs=2, steps_per_epoch=len(loader), display=False)
    history = fit(model, optim.Adam(model.parameters(), lr=1e-2), loader, nn.CrossEntropyLoss(), 2,
                  test_loader=loader, progress=False, print_epochs=False,
                  on_step_end=plot.on_step_end, on_epoch_end=plot.on_epoch_end)
    assert plot.boundaries == [4, 8]
    assert len(plot.loss_ax.lines[0].get_ydata()) == len(history.step_losses) == 8
    assert len(plot.accuracy_ax.lines[0].get_ydata()) == 2


def test_live_plot_rejects_bad_arguments():
    with pytest.raises(ValueError, match="epochs"):
        LiveTrainingPlot(epochs=0)
    with pytest.raises(ValueError, match="min_interval"):
        LiveTrainingPlot(min_interval=-1)
    with pytest.raises(ValueError, match="weight"):
        LiveTrainingPlot(smoothing=1.5)
    with pytest.raises(TypeError, match="History"):
        LiveTrainingPlot(display=False).on_epoch_end([1.0, 2.0])


# ------------------------------------------------------------------ compare_curves


def _legend_texts(fig: Figure) -> list[str]:
    (legend,) = fig.legends
    return [t.get_text() for t in legend.get_texts()]


def test_compare_curves_one_colour_and_legend_entry_per_run():
    runs = {"SGD": _history(2, 5), "Adam": _history(3, 5)}
    fig = compare_curves(runs, title="optimizers")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    loss_ax, acc_ax = fig.axes
    assert _legend_texts(fig) == ["SGD", "Adam"]
    assert loss_ax.get_legend() is None and acc_ax.get_legend() is None  # one legend, for both panels
    assert len(loss_ax.lines) == 4  # raw (faint) and smoothed, per run
    assert acc_ax.get_xlim() == (0.5, 3.5)
    assert list(acc_ax.lines[0].get_ydata()) == pytest.approx([0.55, 0.65])  # test accuracy by default
    train = compare_curves(runs, accuracy="train").axes[1]
    assert list(train.lines[0].get_ydata()) == pytest.approx([0.6, 0.7])
    assert _legend_texts(compare_curves({"run": _history(2, 3, test=False)})) == ["run (train)"]


def test_compare_curves_legend_covers_no_curve():
    # The accuracy curves of chapter 05's comparison: the legend once sat on the lowest one.
    runs = {}
    for name, final in (("SGD", 0.93), ("momentum", 0.96), ("Adam", 0.97), ("AdamW", 0.97)):
        h = History()
        h.step_losses = [2.0 / (1 + 0.05 * s) for s in range(300)]
        h.epochs = [EpochRecord(e, 0.5 / e, final - 0.03 / e, 0.1, test_loss=0.4 / e, test_accuracy=final - 0.02 / e)
                    for e in (1, 2)]
        runs[name] = h
    fig = compare_curves(runs)
    fig.draw_without_rendering()  # runs the layout, which places the legend
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends
    for legend in legends:
        box = legend.get_window_extent()
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent()), ax.get_title()
            for line in ax.lines:
                x, y = line.get_transform().transform(line.get_xydata()).T
                inside = (box.x0 <= x) & (x <= box.x1) & (box.y0 <= y) & (y <= box.y1)
                assert not inside.any(), line.get_label()


def test_compare_curves_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty"):
        compare_curves({})
    with pytest.raises(TypeError, match="History"):
        compare_curves({"a": [1.0, 2.0]})
    with pytest.raises(ValueError, match="accuracy"):
        compare_curves({"a": _history()}, accuracy="val")


# ------------------------------------------------------------------ plot_digits


def test_plot_digits_titles_labels_and_marks_mistakes():
    images = np.random.default_rng(0).random((7, 1, 28, 28))
    fig = plot_digits(images, labels=[1, 2, 3, 4, 5, 6, 7], predicted=[1, 2, 0, 4, 5, 6, 9], ncols=4, title="t")
    axes = fig.axes
    assert len(axes) == 8  # 2 rows of 4, the last one empty
    titles = [ax.get_title() for ax in axes[:7]]
    assert titles[0] == "1 → 1" and titles[2] == "3 → 0"
    assert axes[2].title.get_color() == training_plots.WRONG_COLOUR
    assert axes[0].title.get_color() == "black"
    assert not axes[7].images
    assert plot_digits(images[:, 0]).axes[0].get_title() == ""


def test_plot_digits_rejects_bad_shapes():
    with pytest.raises(ValueError, match="shape"):
        plot_digits(np.zeros((28, 28)))
    with pytest.raises(ValueError, match="labels"):
        plot_digits(np.zeros((3, 28, 28)), labels=[1, 2])
