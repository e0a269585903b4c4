"""The GradScaler's state machine over a recorded run: the scale on a log2 axis, the skipped steps, the growths.

``record_scaler_run()`` trains a small linear model with a real
``minigrad.amp.GradScaler`` for ``steps`` steps; at the steps of
``overflow_at`` one gradient is set to inf after backward (what a float16
overflow leaves), so the scaler skips that step and backs off. Each step
records the scale it used, whether a gradient held inf/NaN (read from the
unscaled gradients), whether the optimizer stepped (an optimizer step hook
counts it), and the scale and growth tracker that ``update()`` left.

``draw_scaler_run(run, current)`` draws the scale of each step as a stair
on a log2 axis, a cross on each skipped step (a backoff follows it), a
triangle where the scale grew, the growth tracker under each step, and for
``current`` the state in words. ``ScalerRun`` steps through the run with a
slider and a play button; its static figure shows the whole run.

Invariants
- Every number drawn is one the scaler reported while the run was recorded.
- The figure is a pure function of (run, current): byte-identical SVG.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from minigrad.viz.graph_svg import TEXT, TEXT_SOFT, SVGFigure, _element, _text, _text_width
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["ScalerStep", "record_scaler_run", "describe_step", "draw_scaler_run", "ScalerRun"]

LEFT, PLOT_WIDTH, PLOT_HEIGHT, MARGIN, RIGHT = 64, 780, 200, 12, 24
SMALL = 11
LINE, SKIP, GROW, CURRENT = "#3b7dd8", "#b42318", "#15803d", "#fff4c2"


@dataclass(frozen=True)
class ScalerStep:
    """One training step as the scaler saw it: the scale it used, what it found, and its state after ``update()``."""

    step: int  # 1 = the first
    scale: float
    found_inf: bool
    skipped: bool
    scale_after: float
    tracker_after: int
    injected: bool  # an inf gradient was put in on purpose at this step

    @property
    def event(self) -> str:
        """``"backoff"``, ``"growth"`` or ``"clean"``: what ``update()`` did to the scale."""
        if self.scale_after < self.scale:
            return "backoff"
        return "growth" if self.scale_after > self.scale else "clean"


def record_scaler_run(steps: int = 24, overflow_at=(3, 4, 13), init_scale: float = 2.0**16,
                      growth_interval: int = 4, seed: int = 0) -> list[ScalerStep]:
    """A real ``GradScaler("cpu")`` over ``steps`` SGD steps of a small linear model; inf gradients at ``overflow_at``."""
    import numpy as np

    from minigrad import nn, optim
    from minigrad.amp import GradScaler
    from minigrad.tensor import manual_seed, no_grad, tensor

    bad = sorted(set(int(s) for s in overflow_at))
    if bad and (bad[0] < 1 or bad[-1] > steps):
        raise ValueError(f"record_scaler_run: overflow_at must name steps from 1 to steps={steps}, got {overflow_at!r}")
    manual_seed(seed)
    gen = np.random.default_rng(seed)
    model = nn.Linear(8, 2)
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    stepped = []
    optimizer.register_step_post_hook(lambda opt, args, kwargs: stepped.append(True))
    scaler = GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
    run = []
    for k in range(1, steps + 1):
        x = tensor(gen.standard_normal((16, 8)).astype(np.float32))
        target = tensor(gen.standard_normal((16, 2)).astype(np.float32))
        optimizer.zero_grad()
        scale = scaler.get_scale()
        loss = ((model(x) - target) ** 2).mean()
        scaler.scale(loss).backward()
        if k in bad:
            with no_grad():
                model.weight.grad.fill_(math.inf)
        scaler.unscale_(optimizer)
        found = not all(bool(np.isfinite(p.grad.numpy()).all()) for p in model.parameters())
        before = len(stepped)
        scaler.step(optimizer)
        scaler.update()
        run.append(ScalerStep(k, scale, found, len(stepped) == before, scaler.get_scale(),
                              scaler.state_dict()["_growth_tracker"], k in bad))
    return run


def _power(scale: float) -> str:
    exponent = math.log2(scale)
    return f"2^{exponent:g}" if exponent == int(exponent) else f"{scale:g}"


def describe_step(run: list[ScalerStep], k: int, growth_interval: int | None = None) -> str:
    """Step ``k`` (1-based) in words: what the scaler found, whether it stepped, and how the scale changed."""
    s = run[k - 1]
    head = f"step {s.step}/{len(run)}: scale {_power(s.scale)}; "
    if s.found_inf:
        why = "an inf gradient was put in" if s.injected else "a gradient overflowed"
        return (head + f"{why}, so the optimizer step was skipped and the scale backed off to "
                f"{_power(s.scale_after)}; the growth tracker is reset to 0")
    if s.event == "growth":
        return head + (f"clean step; the tracker reached the growth interval, so the scale grew to "
                       f"{_power(s.scale_after)} and the tracker is back to 0")
    interval = f" of {growth_interval}" if growth_interval else ""
    return head + f"clean step, the optimizer stepped; growth tracker {s.tracker_after}{interval}"


def _wrap(text: str, width: float) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        if line and _text_width(line + " " + word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


def draw_scaler_run(run: list[ScalerStep], current: int | None = None, title: str = "GradScaler over a run") -> SVGFigure:
    """The scale of every step (log2 axis, a stair), skipped steps (x) and growths (triangles), the tracker under
    each step; ``current`` (1-based) highlighted and described. None: the whole run, summed up."""
    if not run:
        raise ValueError("draw_scaler_run: the run has no steps")
    if current is not None and not 1 <= current <= len(run):
        raise ValueError(f"draw_scaler_run: current must be a step from 1 to {len(run)}, got {current!r}")
    n = len(run)
    exponents = [math.log2(s.scale) for s in run] + [math.log2(run[-1].scale_after)]
    low, high = math.floor(min(exponents)) - 1, math.ceil(max(exponents)) + 1
    pitch = PLOT_WIDTH / n
    top = MARGIN + 12 + 12

    def y(exponent: float) -> float:
        return top + (high - exponent) / (high - low) * PLOT_HEIGHT

    def x(k: float) -> float:  # the left edge of step k (1-based); step k spans [x(k), x(k + 1)]
        return LEFT + (k - 1) * pitch

    parts = [_text(title, MARGIN, MARGIN + 12, weight="bold")]
    parts.append(_element("rect", {"fill": "#ffffff", "height": PLOT_HEIGHT, "stroke": "#cbd5e1", "width": PLOT_WIDTH,
                                   "x": LEFT, "y": top}))
    if current is not None:
        parts.append(_element("rect", {"data-current": current, "fill": CURRENT, "height": PLOT_HEIGHT,
                                       "width": f"{pitch:.2f}", "x": f"{x(current):.2f}", "y": top}))
    tick_every = max(1, math.ceil((high - low) / 8))
    for e in range(low, high + 1, tick_every):
        parts.append(_element("line", {"stroke": "#e5e7eb", "x1": LEFT, "x2": LEFT + PLOT_WIDTH, "y1": f"{y(e):.2f}",
                                       "y2": f"{y(e):.2f}"}))
        parts.append(_text(f"2^{e}", LEFT - 6, y(e) + 4, anchor="end", fill=TEXT_SOFT, size=SMALL))
    points = []
    for s in run:
        e = math.log2(s.scale)
        points += [f"{x(s.step):.2f},{y(e):.2f}", f"{x(s.step + 1):.2f},{y(e):.2f}"]
    parts.append(_element("polyline", {"fill": "none", "points": " ".join(points), "stroke": LINE,
                                       "stroke-width": 2}))
    for s in run:
        cx, cy = x(s.step) + pitch / 2, y(math.log2(s.scale))
        if s.skipped:
            d = 5
            parts.append(_element("path", {"d": f"M {cx - d:.2f} {cy - d:.2f} L {cx + d:.2f} {cy + d:.2f} "
                                                f"M {cx - d:.2f} {cy + d:.2f} L {cx + d:.2f} {cy - d:.2f}",
                                           "data-skipped": s.step, "stroke": SKIP, "stroke-width": 2.5}))
        if s.event == "growth":
            gx, gy = x(s.step + 1), y(math.log2(s.scale_after))
            parts.append(_element("polygon", {"data-growth": s.step, "fill": GROW, "points":
                                              f"{gx:.2f},{gy - 7:.2f} {gx - 6:.2f},{gy + 4:.2f} {gx + 6:.2f},{gy + 4:.2f}"}))
    bottom = top + PLOT_HEIGHT
    label_every = max(1, math.ceil(n / (PLOT_WIDTH / (_text_width(str(n)) * SMALL / 12 + 8))))
    parts.append(_text("step", LEFT - 6, bottom + 16, anchor="end", fill=TEXT_SOFT, size=SMALL))
    parts.append(_text("tracker", LEFT - 6, bottom + 32, anchor="end", fill=TEXT_SOFT, size=SMALL))
    for s in run:
        cx = x(s.step) + pitch / 2
        if s.step % label_every == 0 or s.step == 1:
            parts.append(_text(str(s.step), cx, bottom + 16, anchor="middle", fill=TEXT_SOFT, size=SMALL))
            parts.append(_text(str(s.tracker_after), cx, bottom + 32, anchor="middle",
                               fill=SKIP if s.skipped else TEXT_SOFT, size=SMALL))
    y_text = bottom + 52
    key = [(LINE, "scale used at the step"), (SKIP, "x skipped step (inf/NaN found): backoff"),
           (GROW, "triangle: growth")]
    kx = float(MARGIN)
    for colour, name in key:
        parts.append(_element("rect", {"fill": colour, "height": 4, "width": 16, "x": kx, "y": y_text - 5}))
        parts.append(_text(name, kx + 22, y_text, fill=TEXT_SOFT, size=SMALL))
        kx += 22 + _text_width(name) * SMALL / 12 + 18
    width = LEFT + PLOT_WIDTH + RIGHT
    if current is not None:
        words = describe_step(run, current)
    else:
        skipped = sum(s.skipped for s in run)
        growths = sum(s.event == "growth" for s in run)
        words = (f"{n} steps: {skipped} skipped (each halved the scale), {growths} growths (each doubled it); "
                 f"the scale went from {_power(run[0].scale)} to {_power(run[-1].scale_after)}")
    for line in _wrap(words, width - 2 * MARGIN):
        y_text += 18
        parts.append(_text(line, MARGIN, y_text, fill=TEXT))
    height = y_text + MARGIN
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, height)


class ScalerRun(WidgetFrame):
    """A recorded run (default: ``record_scaler_run()``) with a step slider and a play button."""

    def __init__(self, run: list[ScalerStep] | None = None, current: int = 1, growth_interval: int | None = None):
        if run is None:
            run, growth_interval = record_scaler_run(), 4
        self.run, self.growth_interval = list(run), growth_interval
        self.current = 1
        self.set(current)

    def set(self, current: int) -> None:
        if isinstance(current, bool) or not isinstance(current, int) or not 1 <= current <= len(self.run):
            raise ValueError(f"ScalerRun.set: current must be a step from 1 to {len(self.run)}, got {current!r}")
        self.current = current
        self._redraw()

    def describe(self) -> str:
        return describe_step(self.run, self.current, self.growth_interval)

    def figure(self) -> SVGFigure:
        return draw_scaler_run(self.run, self.current)

    def static_figure(self) -> SVGFigure:
        return draw_scaler_run(self.run, None)

    def _rows(self, widgets) -> list:
        last = len(self.run)
        self._slider = widgets.IntSlider(value=self.current, min=1, max=last, description="step",
                                         continuous_update=True, layout=widgets.Layout(width="60%"))
        self._play = widgets.Play(value=self.current, min=1, max=last, interval=600, description="play")
        widgets.jslink((self._play, "value"), (self._slider, "value"))
        self._slider.observe(self._on_change, names="value")
        self._readout = widgets.HTML()
        return [[self._play, self._slider], self._readout, self._picture]

    def _on_change(self, change) -> None:
        if not self._syncing:
            self.set(int(change["new"]))

    def _refresh(self) -> None:
        with self._moving_controls():
            self._slider.value = self.current
        self._readout.value = f"<code>{html.escape(self.describe())}</code>"
        super()._refresh()

    def __repr__(self) -> str:
        return f"ScalerRun({len(self.run)} steps, at step {self.current})"
