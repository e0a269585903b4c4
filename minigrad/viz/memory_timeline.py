"""The memory timeline of a training step: bytes by category after every allocation and free, phases shaded.

``plot_memory_timeline(tracker)`` draws a tracker's timeline
(:mod:`minigrad.memory.timeline`) as a stacked area: x is the event number,
y the bytes alive, one band per category in PyTorch's memory-profiler
colours (``CATEGORY_COLOURS``, the segment map's). The phases the tracker
marked (forward, backward, optimizer, or a label set by hand) are shaded
behind the bands and named at the top. ``at=k`` draws a line at event ``k``
and says under the title what it was: which op and module allocated or
freed how many bytes of which category, in which phase.

A phase whose label holds ``"recompute"`` (a hand-set label around a
checkpoint's recompute, :mod:`minigrad.viz.recompute_timeline`) is shaded in
its own colour and named in the legend, not over each of its spans; the
backward it interrupts is named once.

``MemoryTimeline(tracker)`` is the same picture with a slider over the
events (ipywidgets); without a kernel its static figure shows (the event
with the most bytes alive, the step's peak, marked).

Invariants
- The bands at event ``k`` add up to the timeline's running ``total`` there
  (a relabelling moves bytes between bands and leaves the total alone).
- The figure depends only on the events and the baseline: the same tracker
  draws the same picture.

Drawn without pyplot (``matplotlib.figure.Figure``), shown as PNG in a notebook.
"""

from __future__ import annotations

import base64
import html

from matplotlib.figure import Figure

from minigrad.viz.figure_display import figure_png, show_figures_as_png
from minigrad.viz.segment_map import CATEGORY_COLOURS
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["MemoryTimeline", "describe_event", "phase_spans", "plot_memory_timeline", "draw_memory_timeline",
           "timeline_bands", "RECOMPUTE"]

MiB = 2**20
RECOMPUTE = "recompute"
PHASE_COLOURS = {"forward": "#dbeafe", "backward": "#fde2e2", "optimizer": "#fef3c7", RECOMPUTE: "#bbf7d0"}
OTHER_PHASE_COLOUR = "#e5e7eb"
CATEGORY_ORDER = ("parameter", "gradient", "optimizer_state", "input", "activation", "temporary", "other")


def _events_and_baseline(source, baseline_by_category):
    """A tracker (its timeline and baseline) or a list of events (and the baseline given)."""
    if hasattr(source, "timeline"):
        events = list(source.timeline)
        if baseline_by_category is None:
            baseline_by_category = dict(getattr(source, "baseline_by_category", {}) or {})
    else:
        events = list(source)
    if not events:
        raise ValueError("memory timeline: no events; run the step inside `with track(...)` with timeline=True")
    return events, dict(baseline_by_category or {})


def timeline_bands(events, baseline_by_category=None) -> dict[str, list[int]]:
    """Bytes of each category after each event (the start, before event 0, first): one list per category."""
    from minigrad.memory.timeline import category_totals  # viz imports no stage at module level

    start = {c: 0 for c in CATEGORY_ORDER}
    start.update(baseline_by_category or {})
    rows = [start, *category_totals(events, baseline_by_category)]
    categories = list(CATEGORY_ORDER) + sorted({c for row in rows for c in row} - set(CATEGORY_ORDER))
    return {c: [row.get(c, 0) for row in rows] for c in categories}


def phase_spans(events) -> list[tuple[str, int, int]]:
    """``(phase, first, last + 1)`` for each run of consecutive events in one phase (events without one skipped)."""
    spans: list[list] = []
    for e in events:
        if spans and spans[-1][0] == e.phase and spans[-1][2] == e.index:
            spans[-1][2] = e.index + 1
        else:
            spans.append([e.phase, e.index, e.index + 1])
    return [(phase, start, end) for phase, start, end in spans if phase]


def describe_event(event) -> str:
    """One line: what event ``k`` was, who made it, in which phase, and the total after it."""
    where = " / ".join(w for w in (event.module, event.op) if w) or "no op recorded"
    if event.kind == "retag":
        what = f"{abs(event.nbytes):,} B move from {event.from_category} to {event.category}"
    else:
        verb = "allocates" if event.nbytes > 0 else "frees"
        what = f"{verb} {abs(event.nbytes):,} B of {event.category}"
    return (f"event {event.index} (step {event.step}, {event.phase or 'no phase'}): {where} {what}; "
            f"{event.total / MiB:.2f} MiB alive after it")


def _phase_colour(phase: str) -> str:
    parts = phase.split(":")
    return PHASE_COLOURS[RECOMPUTE] if RECOMPUTE in parts else PHASE_COLOURS.get(parts[-1], OTHER_PHASE_COLOUR)


def _named_spans(spans) -> list[tuple[str, int, int]]:
    """The spans to name at the top: none for a recompute; a phase that only a recompute interrupted, once."""
    named: list[list] = []
    interrupted = False
    for phase, start, end in spans:
        if RECOMPUTE in phase.split(":"):
            interrupted = True
            continue
        if interrupted and named and named[-1][0] == phase:
            named[-1][2] = end
        else:
            named.append([phase, start, end])
        interrupted = False
    return [tuple(span) for span in named]


def plot_memory_timeline(source, at: int | None = None, baseline_by_category=None, title: str | None = None) -> Figure:
    """A stacked area of bytes by category over the events of ``source`` (a tracker, or its timeline's events).

    ``at``: an event number to mark and describe (None: none). Phases are shaded.
    """
    events, baseline = _events_and_baseline(source, baseline_by_category)
    if at is not None and not 0 <= at < len(events):
        raise ValueError(f"plot_memory_timeline: at={at} is not an event number; the timeline has events "
                         f"0 to {len(events) - 1}")
    show_figures_as_png()
    fig = Figure(figsize=(9.5, 4.2), layout="constrained")
    draw_memory_timeline(fig.add_subplot(), events, baseline, at, title)
    return fig


def draw_memory_timeline(ax, events, baseline_by_category=None, at: int | None = None, title: str | None = None,
                         text_size: float = 7, top_mib: float | None = None) -> None:
    """Draw the timeline of ``events`` into the matplotlib axes ``ax`` (what ``plot_memory_timeline`` shows).

    ``text_size``: points of the phase names and the legend (the title is 2 more);
    ``top_mib``: the y range's top before its margin (default: the timeline's peak), to share a scale.
    """
    from matplotlib.patches import Patch

    bands = {c: v for c, v in timeline_bands(events, baseline_by_category).items() if any(v)}
    xs = list(range(-1, len(events)))  # -1: before the first event
    top = top_mib or (max(sum(col) for col in zip(*bands.values())) / MiB if bands else 1.0)
    spans = phase_spans(events)
    for phase, start, end in spans:
        ax.axvspan(start - 0.5, end - 0.5, color=_phase_colour(phase), zorder=0, linewidth=0)
    for phase, start, end in _named_spans(spans):
        ax.text((start + end - 1) / 2, top * 1.04, phase, ha="center", va="bottom", fontsize=text_size,
                color="#374151", clip_on=True)
    ax.stackplot(xs, *[[b / MiB for b in v] for v in bands.values()], step="post",
                 colors=[CATEGORY_COLOURS.get(c, CATEGORY_COLOURS["other"]) for c in bands],
                 labels=[c.replace("_", " ") for c in bands], alpha=0.9, zorder=2)
    heading = title or "Memory during the step, by category"
    if at is not None:
        ax.axvline(at, color="#111827", linewidth=1.2, zorder=3)
        heading += "\n" + describe_event(events[at])
    ax.set_title(heading, fontsize=text_size + 2)
    ax.set_xlim(-1, len(events) - 0.5)
    ax.set_ylim(0, top * 1.15)
    ax.set_xlabel("event (allocation, free or relabelling), in order")
    ax.set_ylabel("bytes alive (MiB)")
    handles, labels = ax.get_legend_handles_labels()
    if any(RECOMPUTE in phase.split(":") for phase, _, _ in spans):
        handles.append(Patch(color=PHASE_COLOURS[RECOMPUTE]))
        labels.append("recompute (backward)")
    ax.legend(handles, labels, fontsize=text_size, loc="center left", bbox_to_anchor=(1.0, 0.5))


class MemoryTimeline(WidgetFrame):
    """A tracker's timeline with a slider over its events; ``at`` is the event marked (default: the peak)."""

    def __init__(self, source, baseline_by_category=None, title: str | None = None):
        self.events, self.baseline = _events_and_baseline(source, baseline_by_category)
        self.title = title
        self.at = max(range(len(self.events)), key=lambda k: self.events[k].total)

    def figure(self, at: int | None = None) -> Figure:
        return plot_memory_timeline(self.events, self.at if at is None else at, self.baseline, self.title)

    def describe(self, at: int | None = None) -> str:
        return describe_event(self.events[self.at if at is None else at])

    def _rows(self, widgets) -> list:
        self._slider = widgets.IntSlider(value=self.at, min=0, max=len(self.events) - 1, description="event",
                                         continuous_update=False, layout=widgets.Layout(width="70%"))
        self._slider.observe(self._on_change, names="value")
        return [self._slider, self._picture]

    def _on_change(self, change) -> None:
        self.at = int(change["new"])
        self._refresh()

    def _refresh(self) -> None:  # a matplotlib figure, shown as a PNG image
        figure = self.figure()
        png = base64.b64encode(figure_png(figure, self.zoom)).decode("ascii")
        self._picture.value = (f"<img alt='{html.escape(self.describe())}' style='max-width: 100%' "
                               f"src='data:image/png;base64,{png}'/>")

    def _ipython_display_(self) -> None:  # the PNG rides along as it is, not as an SVGFigure's bundle
        from minigrad.viz.widget_display import display_with_png_figure

        display_with_png_figure(lambda: self.widget, self.figure(), repr(self), zoom=self.zoom)

    def __repr__(self) -> str:
        return f"MemoryTimeline({len(self.events)} events, marked: {self.describe()})"
