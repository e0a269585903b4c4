"""One training step's memory timeline with and without checkpointing, the recompute bursts shaded in backward.

``record_step_timeline(model, x, segments)`` runs one step of a chain
(forward through :func:`~minigrad.checkpoint.chain_run.run_segments`,
backward of ``y.sum()``, an SGD step) inside ``minigrad.memory.track`` and
returns the tracker. Each checkpoint's recompute is marked with the
tracker's hand-set phase ``"recompute"``: ``checkpoint``'s ``context_fn``
hands it a context manager to enter around the recompute, and that context
calls ``tracker.phase("recompute")`` only when entered (the checkpoint
library knows nothing of the tracker). The timeline
(:mod:`minigrad.viz.memory_timeline`) then shades those spans in their own
colour: the saw-tooth of backward, each tooth a segment's activations
coming back and going again.

``plot_recompute_timelines(plain, checkpointed)`` stacks the two timelines
on one y scale; ``RecomputeTimeline`` toggles between them (its static
figure is the pair).

Invariants
- The two runs differ only in their segments: same model, same batch.
- Text is at least 9 pt in a figure 8.7 inches wide, shown at 100 dpi: 12 px
  or more at a page width of 900 px.
"""

from __future__ import annotations

import base64
import html
import math
from contextlib import nullcontext

from matplotlib.figure import Figure

from minigrad.viz.figure_display import figure_png, show_figures_as_png
from minigrad.viz.memory_timeline import MiB, RECOMPUTE, draw_memory_timeline, phase_spans
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["record_step_timeline", "recompute_spans", "plot_recompute_timelines", "RecomputeTimeline"]

TEXT_SIZE = 9  # points; 12.5 px at the figure's 100 dpi


class _RecomputeMark:
    """Labels the tracker's events ``"recompute"`` while entered (a checkpoint enters it around its recompute)."""

    def __init__(self, tracker) -> None:
        self.tracker, self.mark = tracker, None

    def __enter__(self) -> "_RecomputeMark":
        self.mark = self.tracker.phase(RECOMPUTE)
        return self

    def __exit__(self, *exc) -> None:
        self.mark.__exit__(*exc)


def record_step_timeline(model, x, segments, lr: float = 0.01):
    """The tracker of one step of ``model`` (a Sequential) on ``x``: forward by ``segments``, backward, SGD step."""
    from minigrad import nn, optim
    from minigrad.checkpoint.chain_run import run_segments
    from minigrad.memory import track
    from minigrad.viz.checkpoint_costs import chain_layers

    layers = chain_layers(model)

    class Chain(nn.Module):  # one outermost module call: the whole forward is one phase
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(layers)
            self.context_fn = None

        def forward(self, x):
            return run_segments(list(self.layers), segments, x, context_fn=self.context_fn)

    chain = Chain()
    optimizer = optim.SGD(chain.parameters(), lr=lr)
    with track(chain, optimizer):  # reports the parameters: the step's timeline starts from them, as a rerun's would
        pass
    with track(chain, optimizer) as tracker:
        chain.context_fn = lambda: (nullcontext(), _RecomputeMark(tracker))
        chain(x).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    return tracker


def recompute_spans(events) -> list[tuple[int, int]]:
    """``(first, last + 1)`` of each run of events labelled ``"recompute"`` (one per checkpointed segment)."""
    spans: list[list[int]] = []
    for phase, start, end in phase_spans(events):
        if RECOMPUTE in phase.split(":"):
            if spans and spans[-1][1] == start:
                spans[-1][1] = end
            else:
                spans.append([start, end])
    return [(a, b) for a, b in spans]


def _top(*trackers) -> float:
    return max(max(e.total for e in t.timeline) for t in trackers) / MiB


def plot_recompute_timelines(plain, checkpointed, labels=("without checkpointing", "with checkpointing")) -> Figure:
    """The two trackers' timelines stacked on one y scale, recompute spans shaded in the second."""
    show_figures_as_png()
    fig = Figure(figsize=(8.7, 7.4), layout="constrained")
    top = _top(plain, checkpointed)
    for ax, tracker, label in zip(fig.subplots(2, 1), (plain, checkpointed), labels):
        _draw(ax, tracker, label, top)
    return fig


def _draw(ax, tracker, label: str, top: float) -> None:
    events = tracker.timeline
    bursts = len(recompute_spans(events))
    title = (f"One step, {label}: peak {tracker.peak / MiB:.2f} MiB"
             + (f", {bursts} recompute bursts in backward" if bursts else ""))
    draw_memory_timeline(ax, events, tracker.baseline_by_category, title=title, text_size=TEXT_SIZE, top_mib=top)
    ax.tick_params(labelsize=TEXT_SIZE)
    ax.xaxis.label.set_size(TEXT_SIZE)
    ax.yaxis.label.set_size(TEXT_SIZE)


class RecomputeTimeline(WidgetFrame):
    """One step of ``model`` on ``x`` (default: a 16-layer MLP of width 128, batch 512) without checkpoints and with
    ``segments`` (default: ``checkpoint_sequential``'s sqrt(n) cut); a toggle shows one, the static figure both."""

    VIEWS = ("without checkpointing", "with checkpointing")

    def __init__(self, model=None, x=None, segments=None):
        from minigrad.viz.checkpoint_costs import chain_layers, deep_mlp, uniform_segments

        model = deep_mlp(16, 128) if model is None else model
        layers = chain_layers(model)
        if x is None:
            import numpy as np

            from minigrad.tensor import tensor

            width = getattr(layers[0], "in_features", None) or getattr(next(iter(layers[0])), "in_features", 256)
            x = tensor(np.random.default_rng(0).standard_normal((512, width)).astype(np.float32))
        n = len(layers)
        self.segments = list(segments) if segments is not None else uniform_segments(n, max(1, round(math.sqrt(n))))
        self.trackers = {self.VIEWS[0]: record_step_timeline(layers, x, [(0, n - 1, False)]),
                         self.VIEWS[1]: record_step_timeline(layers, x, self.segments)}
        self.view = self.VIEWS[1]

    def set(self, view: str) -> None:
        if view not in self.VIEWS:
            raise ValueError(f"RecomputeTimeline.set: view must be one of {self.VIEWS}, got {view!r}")
        self.view = view
        self._redraw()

    def describe(self) -> str:
        t = self.trackers[self.view]
        return (f"{self.view}: peak {t.peak / MiB:.2f} MiB, {len(t.timeline)} events, "
                f"{len(recompute_spans(t.timeline))} recompute bursts")

    def figure(self) -> Figure:
        show_figures_as_png()
        fig = Figure(figsize=(8.7, 3.9), layout="constrained")
        _draw(fig.add_subplot(), self.trackers[self.view], self.view, _top(*self.trackers.values()))
        return fig

    def static_figure(self) -> Figure:
        return plot_recompute_timelines(*self.trackers.values())

    def _rows(self, widgets) -> list:
        self._toggle = widgets.ToggleButtons(options=list(self.VIEWS), value=self.view, description="step")
        self._toggle.observe(self._on_change, names="value")
        return [self._toggle, self._picture]

    def _on_change(self, change) -> None:
        if not self._syncing:
            self.set(change["new"])

    def _refresh(self) -> None:  # a matplotlib figure, shown as a PNG image
        with self._moving_controls():
            self._toggle.value = self.view
        png = base64.b64encode(figure_png(self.figure(), self.zoom)).decode("ascii")
        self._picture.value = (f"<img alt='{html.escape(self.describe())}' style='max-width: 100%' "
                               f"src='data:image/png;base64,{png}'/>")

    def _ipython_display_(self) -> None:  # the pair rides along as a PNG, as MemoryTimeline's figure does
        from minigrad.viz.widget_display import display_with_png_figure

        display_with_png_figure(lambda: self.widget, self.static_figure(), repr(self), zoom=self.zoom)

    def __repr__(self) -> str:
        return f"RecomputeTimeline({len(self.segments)} segments; showing {self.view})"
