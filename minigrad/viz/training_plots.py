"""Training curves for chapter 05: a live plot for ``fit`` and a side-by-side comparison of runs.

``LiveTrainingPlot`` is a callback for :func:`minigrad.training.fit`::

    plot = LiveTrainingPlot(epochs=5)
    history = fit(model, optimizer, loader, loss_fn, 5, test_loader=test_loader,
                  on_step_end=plot.on_step_end, on_epoch_end=plot.on_epoch_end)

In a notebook it shows one figure and redraws it *in place* (an IPython
display handle, updated) as training goes: the loss of every step with a
smoothed curve through it, and the train/test accuracy of every finished
epoch. Redraws during an epoch are throttled (``min_interval`` seconds); every
finished epoch redraws. When training ends, the cell's output is the last
drawing: a static PNG whose text form is just ``<Figure size ... with 2 Axes>``,
so a rendered notebook shows the curves and nbval has nothing that varies to
compare. Outside IPython nothing is displayed; ``plot.figure`` holds the figure.

``compare_curves({"SGD": h1, "Adam": h2})`` draws several runs (their
``History``) on the same axes: smoothed loss per step, accuracy per epoch.
``plot_digits`` draws a grid of images with their labels (and predictions).

The histories are read by duck typing (``step_losses``, ``epochs`` with
``epoch``, ``train_loss``, ``train_accuracy``, ``test_loss``,
``test_accuracy``): this module imports no stage (see ``minigrad.viz``).
Figures are made without pyplot (``matplotlib.figure.Figure``), like
:mod:`minigrad.viz.plots`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from minigrad.viz.figure_display import show_figures_as_png

__all__ = ["LiveTrainingPlot", "compare_curves", "plot_digits", "smooth"]

STEP_COLOUR, SMOOTH_COLOUR = "#9bb4d9", "#3b6fb6"
TRAIN_COLOUR, TEST_COLOUR = "#3b6fb6", "#e07b39"
RUN_COLOURS = ("#3b6fb6", "#e07b39", "#2a9d8f", "#b5179e", "#6c757d", "#e9c46a", "#264653", "#9d0208")
WRONG_COLOUR = "#c0392b"


def smooth(values: Sequence[float], weight: float = 0.9) -> np.ndarray:
    """Exponential moving average with bias correction (as TensorBoard's smoothing).

    ``s_t = weight * s_{t-1} + (1 - weight) * v_t``, divided by ``1 - weight**t``
    so the curve starts at the first value instead of at 0. ``weight = 0``
    returns the values unchanged.
    """
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smooth: weight must be in [0, 1), got {weight!r}")
    values = np.asarray(values, dtype=float)
    out = np.empty_like(values)
    running = 0.0
    for t, v in enumerate(values, start=1):
        running = weight * running + (1.0 - weight) * v
        out[t - 1] = running / (1.0 - weight**t)
    return out


def _check_history(history: Any, name: str) -> None:
    if not hasattr(history, "step_losses") or not hasattr(history, "epochs"):
        raise TypeError(
            f"{name}: expected a training History (with .step_losses and .epochs, as fit() returns), "
            f"got {type(history).__name__}"
        )


def _percent_formatter(ax):
    """Tick labels as percentages, with one decimal when the axis spans less than 10 points."""

    def label(value: float, _position) -> str:
        low, high = ax.get_ylim()
        return f"{value:.1%}" if high - low < 0.1 else f"{value:.0%}"

    return label


def _ipython_shell():
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


class LiveTrainingPlot:
    """A figure of the loss and accuracy curves that redraws itself while ``fit`` trains.

    Pass ``on_step_end`` and ``on_epoch_end`` to ``fit`` (either alone works:
    with only ``on_epoch_end`` the figure is redrawn once per epoch, with all
    step losses so far).

    Args:
        epochs: the planned number of epochs, to fix the axes' range from the start (optional).
        steps_per_epoch: the number of steps of one epoch (``len(train_loader)``), likewise.
        title: the figure's title.
        smoothing: weight of the moving average drawn through the step losses (see :func:`smooth`).
        min_interval: at least this many seconds between two redraws during an epoch.
        display: show the figure in IPython; ``None`` (the default) means "when IPython is running".
        log_loss: draw the loss on a log scale.
    """

    def __init__(
        self,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        title: str = "Training",
        smoothing: float = 0.9,
        min_interval: float = 2.0,
        display: bool | None = None,
        log_loss: bool = True,
    ) -> None:
        for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"LiveTrainingPlot: {name} must be a positive int or None, got {value!r}")
        if min_interval < 0:
            raise ValueError(f"LiveTrainingPlot: min_interval must be >= 0, got {min_interval!r}")
        smooth([], smoothing)  # validates the weight
        self.epochs = epochs
        self.steps_per_epoch = steps_per_epoch
        self.title = title
        self.smoothing = smoothing
        self.min_interval = float(min_interval)
        self.log_loss = log_loss
        self._want_display = display
        self._handle = None
        self._last_draw = -float("inf")
        self.boundaries: list[int] = []  # the step count at the end of each epoch
        self.redraws = 0
        self.figure = Figure(figsize=(10.0, 3.6), layout="constrained")
        self.loss_ax, self.accuracy_ax = self.figure.subplots(1, 2, width_ratios=[1.6, 1.0])
        self._draw(None)

    # ------------------------------------------------------------ callbacks for fit

    def on_step_end(self, history) -> None:
        """Redraw if ``min_interval`` seconds have passed since the last drawing."""
        if time.perf_counter() - self._last_draw >= self.min_interval:
            self.update(history)

    def on_epoch_end(self, history) -> None:
        """Record where the epoch ended and redraw."""
        _check_history(history, "LiveTrainingPlot")
        steps = len(history.step_losses)
        if len(history.epochs) > len(self.boundaries):
            self.boundaries.append(steps)
        self.update(history)

    __call__ = on_epoch_end

    def update(self, history) -> Figure:
        """Redraw the figure from ``history`` now (and update the notebook's copy); returns the figure."""
        _check_history(history, "LiveTrainingPlot")
        self._draw(history)
        self._show()
        self._last_draw = time.perf_counter()
        self.redraws += 1
        return self.figure

    # ------------------------------------------------------------ drawing

    def _draw(self, history) -> None:
        losses = np.asarray(history.step_losses if history is not None else [], dtype=float)
        records = list(history.epochs) if history is not None else []
        ax = self.loss_ax
        ax.clear()
        steps = np.arange(1, len(losses) + 1)
        if len(losses):
            ax.plot(steps, losses, color=STEP_COLOUR, linewidth=0.6, alpha=0.7, label="loss per step")
            ax.plot(steps, smooth(losses, self.smoothing), color=SMOOTH_COLOUR, linewidth=1.8, label="smoothed")
        tested = [(self._boundary(r.epoch), r.test_loss) for r in records if r.test_loss is not None]
        if tested:
            xs, ys = zip(*tested)
            ax.plot(xs, ys, "o-", color=TEST_COLOUR, linewidth=1.4, markersize=5, label="test loss")
        for b in self.boundaries:
            ax.axvline(b, color="#cbd5e1", linewidth=0.8, zorder=0)
        total_steps = self.epochs * self.steps_per_epoch if self.epochs and self.steps_per_epoch else None
        ax.set_xlim(0, max(total_steps or 0, len(losses), 1))
        if self.log_loss and len(losses) and np.all(losses > 0):
            ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("loss" + (" (log scale)" if ax.get_yscale() == "log" else ""))
        ax.set_title("loss")
        ax.grid(alpha=0.3, which="both")
        if len(losses):
            ax.legend(loc="upper right", fontsize="small", framealpha=0.9)

        ax = self.accuracy_ax
        ax.clear()
        epochs = [r.epoch for r in records]
        if records:
            ax.plot(epochs, [r.train_accuracy for r in records], "o-", color=TRAIN_COLOUR, label="train")
            test = [(r.epoch, r.test_accuracy) for r in records if r.test_accuracy is not None]
            if test:
                ax.plot(*zip(*test), "s-", color=TEST_COLOUR, label="test")
            ax.legend(loc="lower right", fontsize="small")
            accuracies = [r.train_accuracy for r in records] + [a for _, a in test]
            low = min(accuracies)
            ax.set_ylim(max(0.0, low - 0.02), min(1.0, max(accuracies) + 0.01) + 0.005)
        last = max(self.epochs or 0, len(records), 1)
        ax.set_xlim(0.5, last + 0.5)
        ax.set_xticks(range(1, last + 1))
        ax.set_xlabel("epoch")
        ax.set_ylabel("accuracy")
        ax.set_title("accuracy per epoch")
        ax.grid(alpha=0.3)
        ax.yaxis.set_major_formatter(_percent_formatter(ax))
        status = ""
        if records:
            r = records[-1]
            status = f" — epoch {r.epoch}" + (f"/{self.epochs}" if self.epochs else "")
            if r.test_accuracy is not None:
                status += f", test accuracy {r.test_accuracy:.2%}"
        self.figure.suptitle(self.title + status)

    def _boundary(self, epoch: int) -> int:
        if 0 < epoch <= len(self.boundaries):
            return self.boundaries[epoch - 1]
        return epoch * (self.steps_per_epoch or 0)

    def _show(self) -> None:
        want = self._want_display
        shell = _ipython_shell()
        if want is False or (want is None and shell is None):
            return
        show_figures_as_png(shell)
        from IPython.display import display

        if self._handle is None:
            self._handle = display(self.figure, display_id=True)
        else:
            self._handle.update(self.figure)

    def __repr__(self) -> str:
        return f"LiveTrainingPlot(epochs={self.epochs}, finished epochs={len(self.boundaries)}, redraws={self.redraws})"


def compare_curves(
    histories: Mapping[str, Any],
    smoothing: float = 0.9,
    title: str = "Comparison",
    log_loss: bool = True,
    accuracy: str = "test",
) -> Figure:
    """Several training runs on the same axes: smoothed loss per step (left), accuracy per epoch (right).

    ``histories`` maps a run's name to its ``History``. One legend for both
    panels (a run has the same colour in each) sits outside the axes, right of
    the figure, so it never covers a curve.
    ``accuracy``: ``"test"`` (the default; train accuracy where a run has no
    test numbers) or ``"train"``.
    """
    show_figures_as_png()
    if not isinstance(histories, Mapping) or not histories:
        raise ValueError("compare_curves: pass a non-empty dict {name: History}")
    if accuracy not in ("test", "train"):
        raise ValueError(f"compare_curves: accuracy must be 'test' or 'train', got {accuracy!r}")
    for name, history in histories.items():
        _check_history(history, f"compare_curves ({name!r})")
    fig = Figure(figsize=(10.0, 3.6), layout="constrained")
    loss_ax, acc_ax = fig.subplots(1, 2, width_ratios=[1.6, 1.0])
    most_epochs = 1
    positive = True
    legend_entries = []  # (line, label): one per run, its accuracy line where it has one
    for i, (name, history) in enumerate(histories.items()):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        losses = np.asarray(history.step_losses, dtype=float)
        positive &= bool(np.all(losses > 0))
        if len(losses):
            steps = np.arange(1, len(losses) + 1)
            loss_ax.plot(steps, losses, color=colour, linewidth=0.5, alpha=0.2)
            (smoothed,) = loss_ax.plot(steps, smooth(losses, smoothing), color=colour, linewidth=1.8, label=name)
            entry = (smoothed, name)
        else:
            entry = None
        records = list(history.epochs)
        if records:
            most_epochs = max(most_epochs, len(records))
            use_test = accuracy == "test" and all(r.test_accuracy is not None for r in records)
            values = [r.test_accuracy if use_test else r.train_accuracy for r in records]
            label = name if use_test or accuracy == "train" else f"{name} (train)"
            (line,) = acc_ax.plot([r.epoch for r in records], values, "o-", color=colour, label=label)
            entry = (line, label)
        if entry is not None:
            legend_entries.append(entry)
    if log_loss and positive:
        loss_ax.set_yscale("log")
    loss_ax.set_xlabel("step")
    loss_ax.set_ylabel("loss" + (" (log scale)" if loss_ax.get_yscale() == "log" else ""))
    loss_ax.set_title(f"loss per step (smoothed {smoothing:g})")
    loss_ax.grid(alpha=0.3, which="both")
    acc_ax.set_xlabel("epoch")
    acc_ax.set_ylabel(f"{accuracy} accuracy")
    acc_ax.set_title(f"{accuracy} accuracy per epoch")
    acc_ax.set_xlim(0.5, most_epochs + 0.5)
    acc_ax.set_xticks(range(1, most_epochs + 1))
    acc_ax.grid(alpha=0.3)
    acc_ax.yaxis.set_major_formatter(_percent_formatter(acc_ax))
    if legend_entries:
        lines, labels = zip(*legend_entries)
        fig.legend(lines, labels, loc="outside right upper", fontsize="small")
    fig.suptitle(title)
    return fig


def plot_digits(
    images,
    labels: Sequence[int] | None = None,
    predicted: Sequence[int] | None = None,
    ncols: int = 10,
    title: str | None = None,
    scale: float = 1.0,
) -> Figure:
    """A grid of grey-scale images (N, 28, 28) or (N, 1, 28, 28), each titled with its label.

    With ``predicted``, each title reads ``label → prediction``, in red where they differ.
    ``images`` may be a NumPy array or anything with ``.numpy()`` (a Tensor).
    """
    show_figures_as_png()
    array = images.numpy() if hasattr(images, "numpy") else np.asarray(images)
    array = np.asarray(array, dtype=float)
    if array.ndim == 4 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 3 or len(array) == 0:
        raise ValueError(f"plot_digits: images must have shape (N, H, W) or (N, 1, H, W) with N >= 1, got {array.shape}")
    n = len(array)
    for name, values in (("labels", labels), ("predicted", predicted)):
        if values is not None and len(values) != n:
            raise ValueError(f"plot_digits: {n} images but {len(values)} {name}")
    if not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"plot_digits: ncols must be a positive int, got {ncols!r}")
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig = Figure(figsize=(scale * 1.0 * ncols, scale * (1.15 * nrows + (0.3 if title else 0.0))), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for i, ax in enumerate(axes):
        ax.set_axis_off()
        if i >= n:
            continue
        ax.imshow(array[i], cmap="gray_r", interpolation="nearest")
        text, colour = "", "black"
        if labels is not None:
            text = f"{int(labels[i])}"
        if predicted is not None:
            text = f"{text} → {int(predicted[i])}" if text else f"{int(predicted[i])}"
            if labels is not None and int(labels[i]) != int(predicted[i]):
                colour = WRONG_COLOUR
        if text:
            ax.set_title(text, fontsize=9 * scale, color=colour, pad=2)
    if title:
        fig.suptitle(title)
    return fig
