"""Memory and time of a deep chain against its number of checkpointed segments, with the sqrt(n) theory.

``record_segment_sweep(model, x, segments=...)`` runs the chain once for each
number of segments ``k`` as ``checkpoint_sequential`` would cut it
(:func:`~minigrad.viz.checkpoint_costs.uniform_segments`: all but the last
checkpointed), measures its peak with the tracker and its forward+backward
time (the median of a few runs, the segment counts timed in turns).

The theory (Chen et al. 2016, "Training Deep Nets with Sublinear Memory
Cost"): with ``n`` layers of ``L`` bytes each cut into ``k`` segments,
forward keeps the ``k`` segment inputs and backward recomputes one segment of
``n/k`` layers at a time, so about ``(n/k + k) L`` bytes are held, the least
at ``k = sqrt(n)``: ``2 sqrt(n) L`` instead of ``n L``, for one more forward
of all but the last segment.

``draw_peak_curve`` draws the measured peaks as points over that theory
line with ``sqrt(n)`` marked (the checkpoint chain's figure reuses it);
``draw_segment_sweep`` adds the time panel; ``SegmentSweep`` puts a slider
over ``k`` on a recorded sweep (it measures nothing itself).

Invariants
- Every point drawn is one the tracker or the clock measured; only the
  theory line is computed.
- The figure is a pure function of (sweep, current): byte-identical SVG.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from minigrad.viz.checkpoint_costs import PlacementCost
from minigrad.viz.graph_svg import TEXT, TEXT_SOFT, SVGFigure, _element, _text, _text_width, stack_figures
from minigrad.viz.scaler_run import _wrap
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["SweepPoint", "SegmentSweepRecord", "record_segment_sweep", "theory_bytes", "draw_peak_curve",
           "draw_segment_sweep", "SegmentSweep"]

LEFT, PLOT_WIDTH, PLOT_HEIGHT, MARGIN, RIGHT = 76, 772, 150, 12, 24
SMALL = 11
MEASURED, THEORY, CURRENT, SQRT = "#3b7dd8", "#9ca3af", "#e07b1a", "#15803d"
MiB = 2**20


@dataclass(frozen=True)
class SweepPoint:
    """One number of segments: its placement's costs (tracker) and its median step time."""

    segments: int
    cost: PlacementCost
    seconds: float | None


@dataclass(frozen=True)
class SegmentSweepRecord:
    """A chain of ``n_layers`` layers whose outputs average ``layer_bytes``, measured at each segment count."""

    n_layers: int
    layer_bytes: float
    points: tuple[SweepPoint, ...]

    def point(self, segments: int) -> SweepPoint:
        for p in self.points:
            if p.segments == segments:
                return p
        raise ValueError(f"SegmentSweepRecord: {segments} segments were not measured; measured: "
                         f"{', '.join(str(p.segments) for p in self.points)}")


def record_segment_sweep(model, x, segments=None, repeats: int = 5, timed: bool = True) -> SegmentSweepRecord:
    """Peak (tracker) and median step time of ``model`` on ``x`` for each segment count (default 1..n)."""
    from minigrad.viz.checkpoint_costs import chain_layers, layer_costs, measure_placement, time_once, uniform_segments

    layers = chain_layers(model)
    n = len(layers)
    counts = sorted(set(range(1, n + 1) if segments is None else (int(k) for k in segments)))
    if not counts or counts[0] < 1 or counts[-1] > n:
        raise ValueError(f"record_segment_sweep: segments must be counts from 1 to {n} (the chain's layers), "
                         f"got {segments!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"record_segment_sweep: repeats must be a positive int, got {repeats!r}")
    costs = layer_costs(layers, x)
    placements = {k: uniform_segments(n, k) for k in counts}
    measured = {k: measure_placement(layers, x, placements[k], costs) for k in counts}
    times: dict[int, list[float]] = {k: [] for k in counts}
    if timed:
        for k in counts:  # warm-up
            time_once(layers, x, placements[k])
        for _ in range(repeats):  # in turns: a slow moment of the machine falls on every count alike
            for k in counts:
                times[k].append(time_once(layers, x, placements[k]))
    layer_bytes = sum(c.output_bytes for c in costs) / n
    return SegmentSweepRecord(n, layer_bytes, tuple(
        SweepPoint(k, measured[k], sorted(times[k])[len(times[k]) // 2] if timed else None) for k in counts))


def theory_bytes(n_layers: int, layer_bytes: float, segments: float) -> float:
    """``(n/k + k) L``: what ``k`` segments of a chain of ``n`` layers of ``L`` bytes hold at most."""
    return (n_layers / segments + segments) * layer_bytes


# ------------------------------------------------------------------ drawing


def _nice_step(top: float, ticks: int = 4) -> float:
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def _number(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def _panel(top: float, title: str, n: int, values: dict[int, float], unit: str, ring: tuple[int, float] | None,
           theory=None, caption: str = "") -> tuple[list[str], float]:
    """One plot over k = 1..n: measured points, an optional theory line, sqrt(n), a ring at ``ring = (k, value)``."""
    parts = [_text(title, MARGIN, top + 12, weight="bold")]
    plot_top = top + 12 + 12 + 16  # the title, then a row for the sqrt(n) label
    bottom = plot_top + PLOT_HEIGHT
    high = max(list(values.values()) + ([ring[1]] if ring else []) +
               ([theory(k) for k in range(1, n + 1)] if theory else [])) * 1.08
    high = high if high > 0 else 1.0
    step = _nice_step(high)

    def x(k: float) -> float:
        return LEFT + (k - 1) / max(n - 1, 1) * PLOT_WIDTH

    def y(v: float) -> float:
        return bottom - min(v, high) / high * PLOT_HEIGHT

    parts.append(_element("rect", {"fill": "#ffffff", "height": PLOT_HEIGHT, "stroke": "#cbd5e1",
                                   "width": PLOT_WIDTH, "x": LEFT, "y": plot_top}))
    tick = 0.0
    while tick <= high:
        parts.append(_element("line", {"stroke": "#e5e7eb", "x1": LEFT, "x2": LEFT + PLOT_WIDTH,
                                       "y1": f"{y(tick):.2f}", "y2": f"{y(tick):.2f}"}))
        parts.append(_text(f"{_number(tick)} {unit}", LEFT - 6, y(tick) + 4, anchor="end", fill=TEXT_SOFT, size=SMALL))
        tick += step
    root = math.sqrt(n)
    parts.append(_element("line", {"data-sqrt-n": f"{root:.3f}", "stroke": SQRT, "stroke-dasharray": "5 4",
                                   "x1": f"{x(root):.2f}", "x2": f"{x(root):.2f}", "y1": plot_top - 4, "y2": bottom}))
    label = f"sqrt(n) = {root:.3g}"
    label_x = min(x(root) + 4, LEFT + PLOT_WIDTH - _text_width(label) * SMALL / 12)
    parts.append(_text(label, label_x, plot_top - 6, fill=SQRT, size=SMALL))
    if theory is not None:
        samples = [1 + (n - 1) * i / 200 for i in range(201)] if n > 1 else [1.0]
        parts.append(_element("polyline", {"data-theory": "1", "fill": "none", "stroke": THEORY, "stroke-width": 2,
                                           "stroke-dasharray": "6 4", "points": " ".join(
                                               f"{x(k):.2f},{y(theory(k)):.2f}" for k in samples)}))
    if ring is not None:
        parts.append(_element("circle", {"cx": f"{x(ring[0]):.2f}", "cy": f"{y(ring[1]):.2f}", "data-current": ring[0],
                                         "fill": "none", "r": 7, "stroke": CURRENT, "stroke-width": 2.5}))
    for k, v in sorted(values.items()):
        parts.append(_element("circle", {"cx": f"{x(k):.2f}", "cy": f"{y(v):.2f}", "data-k": k, "fill": MEASURED,
                                         "r": 3.5}))
    every = max(1, math.ceil(n / (PLOT_WIDTH / (_text_width(str(n)) * SMALL / 12 + 10))))
    for k in range(1, n + 1):
        if k == 1 or k % every == 0:
            parts.append(_text(str(k), x(k), bottom + 16, anchor="middle", fill=TEXT_SOFT, size=SMALL))
    parts.append(_text("k =", LEFT - 12, bottom + 16, anchor="end", fill=TEXT_SOFT, size=SMALL))
    y_text = bottom + 16
    if caption:
        for line in _wrap(caption, LEFT + PLOT_WIDTH - MARGIN):
            y_text += 16
            parts.append(_text(line, MARGIN, y_text, fill=TEXT_SOFT, size=SMALL))
    return parts, y_text + MARGIN - top


def _figure(parts: list[str], height: float) -> SVGFigure:
    width = LEFT + PLOT_WIDTH + RIGHT
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, height)


def draw_peak_curve(sweep: SegmentSweepRecord, current: int | None = None, marked: tuple[int, int] | None = None,
                    title: str | None = None) -> SVGFigure:
    """Measured peak (MiB) per segment count over the theory ``(n/k + k) L``; ``current`` k ringed, or
    ``marked = (k, bytes)`` a placement of one's own drawn as a ring at its segment count."""
    n, layer = sweep.n_layers, sweep.layer_bytes
    values = {p.segments: p.cost.peak_bytes / MiB for p in sweep.points}
    caption = (f"Points: the tracker's peak of one forward+backward with k segments (checkpoint_sequential's cut), "
               f"everything but parameters and gradients. Dashed: theory (n/k + k)*L, L = {layer / 1024:.4g} KiB "
               f"(one layer's output), least at k = sqrt(n): 2*sqrt(n)*L = {2 * math.sqrt(n) * layer / MiB:.3g} MiB "
               f"against n*L = {n * layer / MiB:.3g} MiB. The tracker also counts the gradient in flight; past "
               f"k = n/2 the cut leaves one layer to each segment but the last, which runs unchecked with the rest.")
    heading = title or f"Peak memory of a {n}-layer chain by number of segments k"
    ring = (marked[0], marked[1] / MiB) if marked is not None else (current, values[current]) if current else None
    parts, height = _panel(0, heading, n, values, "MiB", ring, lambda k: theory_bytes(n, layer, k) / MiB, caption)
    return _figure(parts, height)


def draw_segment_sweep(sweep: SegmentSweepRecord, current: int | None = None) -> SVGFigure:
    """The peak curve and the step time per segment count; ``current`` ringed in both and described."""
    n = sweep.n_layers
    peak = draw_peak_curve(sweep, current)
    timed = {p.segments: p.seconds * 1e3 for p in sweep.points if p.seconds is not None}
    figures = [peak]
    if timed:
        caption = ("Median wall time of forward+backward (CPU, NumPy); each checkpointed segment runs its "
                   "forward once more in backward.")
        ring = (current, timed[current]) if current in timed else None
        parts, height = _panel(0, f"Step time of the {n}-layer chain by number of segments k", n, timed, "ms",
                               ring, None, caption)
        figures.append(_figure(parts, height))
    words = describe_sweep(sweep, current)
    lines = _wrap(words, LEFT + PLOT_WIDTH)
    parts = [_text(line, MARGIN, 16 + 18 * i, fill=TEXT) for i, line in enumerate(lines)]
    figures.append(_figure(parts, 18 * len(lines) + MARGIN))
    return stack_figures(figures, gap=0)


def describe_sweep(sweep: SegmentSweepRecord, current: int | None = None) -> str:
    """``current`` segments in words (peak, recompute share, time against no checkpointing), or the sweep's best."""
    plain = next((p for p in sweep.points if p.segments == 1), None)
    if current is None:
        best = min(sweep.points, key=lambda p: p.cost.peak_bytes)
        current = best.segments
        head = f"Least memory at k = {current} (sqrt(n) = {math.sqrt(sweep.n_layers):.3g}): "
    else:
        head = f"k = {current}: "
    p = sweep.point(current)
    words = head + f"peak {p.cost.peak_bytes / MiB:.3f} MiB"
    if plain is not None:
        words += f" (no checkpoints: {plain.cost.peak_bytes / MiB:.3f} MiB)"
    words += f", recompute {100 * p.cost.recompute_share:.1f} % of a forward"
    if p.seconds is not None:
        words += f", step {p.seconds * 1e3:.1f} ms"
        if plain is not None and plain.seconds:
            words += f" ({p.seconds / plain.seconds:.2f}x no checkpoints)"
    return words


class SegmentSweep(WidgetFrame):
    """A recorded sweep (default: a 16-layer MLP of width 256, batch 64) with a slider over the segment count."""

    def __init__(self, sweep: SegmentSweepRecord | None = None, current: int | None = None):
        if sweep is None:
            import numpy as np

            from minigrad.tensor import tensor
            from minigrad.viz.checkpoint_costs import deep_mlp

            x = tensor(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32))
            sweep = record_segment_sweep(deep_mlp(16, 256), x)
        self.sweep = sweep
        self.counts = [p.segments for p in sweep.points]
        if current is None:  # the count nearest sqrt(n)
            current = min(self.counts, key=lambda k: abs(k - math.sqrt(sweep.n_layers)))
        self.current = self.counts[0]
        self.set(current)

    def set(self, current: int) -> None:
        if isinstance(current, bool) or current not in self.counts:
            raise ValueError(f"SegmentSweep.set: current must be a measured segment count "
                             f"({', '.join(map(str, self.counts))}), got {current!r}")
        self.current = int(current)
        self._redraw()

    def describe(self) -> str:
        return describe_sweep(self.sweep, self.current)

    def figure(self) -> SVGFigure:
        return draw_segment_sweep(self.sweep, self.current)

    def static_figure(self) -> SVGFigure:
        return draw_segment_sweep(self.sweep, None)

    def _rows(self, widgets) -> list:
        self._slider = widgets.SelectionSlider(options=self.counts, value=self.current, description="segments",
                                               continuous_update=True, layout=widgets.Layout(width="60%"))
        self._slider.observe(self._on_change, names="value")
        self._readout = widgets.HTML()
        return [self._slider, self._readout, self._picture]

    def _on_change(self, change) -> None:
        if not self._syncing:
            self.set(int(change["new"]))

    def _refresh(self) -> None:
        with self._moving_controls():
            self._slider.value = self.current
        self._readout.value = f"<code>{html.escape(self.describe())}</code>"
        super()._refresh()

    def __repr__(self) -> str:
        return f"SegmentSweep({self.sweep.n_layers} layers, {len(self.counts)} segment counts, at k = {self.current})"
