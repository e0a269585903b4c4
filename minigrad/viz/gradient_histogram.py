"""Gradient magnitudes on a log2 axis against float16's and bfloat16's limits, and what a loss scale does to them.

``collect_gradients()`` trains the chapter-05 MLP (784-256-128-10, Adam) on
the shipped MNIST subset for a few hundred steps and keeps every
parameter's gradient magnitudes at the steps asked for (early and late):
``{"step 1": {"1.weight": |g|, ...}, "step 200": {...}}``. A chapter may
pass gradients of its own in the same shape (or ``{label: array}``).

``precision_shares(magnitudes, scale, fmt)`` is the model: of the nonzero
magnitudes multiplied by ``scale``, the share that rounds to 0 in ``fmt``
(underflow), that lands on a subnormal (fewer bits of precision), and that
rounds to inf (overflow; NaN in a format without inf). A gradient of exactly
0 is not counted: nothing is lost by storing it.

``draw_gradient_histogram`` draws one histogram bar per binade of
``log2(|g| * scale)`` with float16's limits (smallest subnormal, smallest
normal, max) as lines over it and its underflow, subnormal and overflow
zones shaded; bfloat16's limits lie far off either end of the axis (it has
float32's range) and are written at the ends. ``GradientHistogram`` adds a
loss-scale slider (``log2`` of the scale, 0 to 24), a choice of the
recorded step and of the layer.

Invariants
- Rounding is round-to-nearest-even from the exact product (a float32
  magnitude times a power of two is exact in float64): ``precision_shares``
  agrees with ``float_explorer.encode`` on every value.
- The figure is a pure function of its arguments: byte-identical SVG.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from minigrad.viz.float_explorer import FORMATS, FloatFormat
from minigrad.viz.graph_svg import TEXT_SOFT, SVGFigure, _element, _text, _text_width, stack_figures
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["Shares", "precision_shares", "rounding_thresholds", "collect_gradients", "draw_gradient_histogram",
           "GradientHistogram", "AXIS"]

AXIS = (-48, 32)  # log2 range of the x axis: float16's whole range and gradients scaled up to 2**24
LEFT, PLOT_WIDTH, PLOT_HEIGHT, MARGIN, RIGHT = 56, 780, 170, 12, 28
BAR, ZONE_LOST, ZONE_SUBNORMAL, LIMIT = "#3b7dd8", "#fde2e2", "#fff4c2", "#b42318"
SMALL = 11
MAX_SCALE_LOG2 = 24


@dataclass(frozen=True)
class Shares:
    """Shares of the nonzero magnitudes (0 to 1): rounded to 0, to a subnormal, to inf; ``count`` magnitudes."""

    underflow: float
    subnormal: float
    overflow: float
    count: int

    def __iter__(self):
        return iter((self.underflow, self.subnormal, self.overflow))


def _fmt(fmt) -> FloatFormat:
    if isinstance(fmt, FloatFormat):
        return fmt
    if fmt in FORMATS:
        return FORMATS[fmt]
    raise ValueError(f"unknown float format {fmt!r}; choose one of {', '.join(FORMATS)}")


def rounding_thresholds(fmt) -> tuple[float, float, float]:
    """(to 0 at or below, subnormal below, to inf at or above): the float64 magnitudes where round-to-nearest-even flips.

    Half the smallest subnormal ties to the even 0; halfway between the
    largest subnormal and the smallest normal ties up (the subnormal's
    mantissa, all ones, is odd); halfway past ``max`` ties up, out of range,
    unless ``max``'s mantissa is even (float8_e4m3fn's 1.110): then the
    first float64 past that tie overflows.
    """
    f = _fmt(fmt)
    tiny = f.smallest_subnormal
    top = f.max + 2.0 ** (f.max_exponent - f.mantissa_bits) / 2
    max_is_odd = f.has_inf  # all ones, or all ones but the last where the all-ones mantissa is NaN
    return tiny / 2, f.smallest_normal - tiny / 2, top if max_is_odd else float(np.nextafter(top, np.inf))


def _magnitudes(values) -> np.ndarray:
    """The nonzero magnitudes of ``values`` (an array, or a mapping of arrays: all of them) as float64."""
    if isinstance(values, Mapping):
        values = [np.ravel(np.asarray(v)) for v in values.values()]
        values = np.concatenate(values) if values else np.zeros(0)
    a = np.abs(np.ravel(np.asarray(values, dtype=np.float64)))
    if not np.isfinite(a).all():
        raise ValueError("gradient magnitudes must be finite: an inf or NaN gradient is an overflow already")
    return a[a > 0]


def precision_shares(magnitudes, scale: float, fmt) -> Shares:
    """What ``fmt`` does to ``magnitudes * scale``: shares of the nonzero ones lost to 0, subnormal, lost to inf."""
    if not (isinstance(scale, (int, float)) and 0 < scale < math.inf):
        raise ValueError(f"precision_shares: scale must be a finite number > 0, got {scale!r}")
    a = _magnitudes(magnitudes) * float(scale)
    zero, normal, inf = rounding_thresholds(fmt)
    n = a.size
    if n == 0:
        return Shares(0.0, 0.0, 0.0, 0)
    under = int(np.count_nonzero(a <= zero))
    sub = int(np.count_nonzero((a > zero) & (a < normal)))
    over = int(np.count_nonzero(a >= inf))
    return Shares(under / n, sub / n, over / n, n)


# ------------------------------------------------------------------ real gradients


def collect_gradients(steps: int = 200, record_at=(1, 200), batch_size: int = 32, lr: float = 1e-3,
                      seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """Train the chapter-05 MLP with Adam on the shipped MNIST subset; the float32 ``|grad|`` of every parameter
    at each step of ``record_at`` (1 = the first), as ``{"step k": {name: array}}``. Seeded: the same every run."""
    from minigrad import nn, optim
    from minigrad.data import MNIST, DataLoader, Normalize
    from minigrad.tensor import manual_seed
    from minigrad.training.recipes import MNIST_MEAN, MNIST_STD, mnist_mlp

    wanted = sorted(set(int(k) for k in record_at))
    if not wanted or wanted[0] < 1 or wanted[-1] > steps:
        raise ValueError(f"collect_gradients: record_at must name steps from 1 to steps={steps}, got {record_at!r}")
    manual_seed(seed)
    model = mnist_mlp()
    optimizer = optim.Adam(model.parameters(), lr=lr)
    data = MNIST(train=True, subset=True, download=False, transform=Normalize([MNIST_MEAN], [MNIST_STD]))
    loader = DataLoader(data, batch_size=batch_size, shuffle=True, seed=seed)
    loss_fn = nn.CrossEntropyLoss()
    recorded: dict[str, dict[str, np.ndarray]] = {}
    step = 0
    while step < steps:
        for x, y in loader:
            step += 1
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            if step in wanted:
                recorded[f"step {step}"] = {name: np.abs(p.grad.numpy()).astype(np.float32).ravel()
                                            for name, p in model.named_parameters()}
            optimizer.step()
            if step == steps:
                break
    return recorded


# ------------------------------------------------------------------ the figure


def _x(log2_value: float) -> float:
    low, high = AXIS
    return LEFT + (min(max(log2_value, low), high) - low) / (high - low) * PLOT_WIDTH


def _percent(share: float) -> str:
    """A share as a percentage: ``0 %`` only when nothing, ``<0.01 %`` when something tiny."""
    if share == 0:
        return "0 %"
    if share < 1e-4:
        return "<0.01 %"
    return f"{100 * share:.2f} %"


def shares_line(magnitudes, scale_log2: int, fmt) -> str:
    """``float16 at scale 2^8: 1.23 % flushed to 0, 4.56 % subnormal, 0 % overflow to inf``."""
    s = precision_shares(magnitudes, 2.0**scale_log2, fmt)
    return (f"{_fmt(fmt).name:<8} at scale 2^{scale_log2}: {_percent(s.underflow)} flushed to 0, "
            f"{_percent(s.subnormal)} subnormal, {_percent(s.overflow)} overflow to inf")


def _place(labels: list[tuple[float, str]], row_height: float, top: float) -> list[tuple[float, float, str]]:
    """Each (x, text) in the first row from ``top`` (upwards) where it overlaps no label already there."""
    rows: list[list[tuple[float, float]]] = []
    placed = []
    for x, text in labels:
        width = _text_width(text) * SMALL / 12
        for r, taken in enumerate(rows):
            if all(x + width + 6 <= a or b + 6 <= x for a, b in taken):
                break
        else:
            rows.append([])
            r = len(rows) - 1
        rows[r].append((x, x + width))
        placed.append((x, top - r * row_height, text))
    return placed


def draw_gradient_histogram(magnitudes, scale_log2: int = 0, title: str = "gradient magnitudes") -> SVGFigure:
    """One bar per binade of ``log2(|g| * 2^scale_log2)`` (its count, on a log scale), float16's zones and
    limits over it, bfloat16's written at the ends, and the shares each format loses at this scale."""
    if isinstance(scale_log2, bool) or not isinstance(scale_log2, (int, np.integer)):
        raise ValueError(f"draw_gradient_histogram: scale_log2 must be a whole number, got {scale_log2!r}")
    scale_log2 = int(scale_log2)
    a = _magnitudes(magnitudes)
    if a.size == 0:
        raise ValueError("draw_gradient_histogram: no nonzero gradient magnitudes to draw")
    low, high = AXIS
    exponents = np.floor(np.log2(a)).astype(np.int64) + scale_log2  # exact: a power of two moves the binade
    below, above = int(np.count_nonzero(exponents < low)), int(np.count_nonzero(exponents >= high))
    counts = np.bincount(np.clip(exponents, low, high - 1) - low, minlength=high - low)
    decades = max(1.0, math.log10(float(counts.max())))  # bars on a log scale of counts: the tails show
    f16 = FORMATS["float16"]
    zero16, normal16, inf16 = (math.log2(t) for t in rounding_thresholds(f16))

    parts = [_text(f"{title}: {a.size:,} nonzero, x = log2(|g| x 2^{scale_log2})", MARGIN, MARGIN + 12,
                   weight="bold")]
    limits = [(math.log2(f16.smallest_subnormal), "float16 smallest subnormal 2^-24"),
              (math.log2(f16.smallest_normal), "float16 smallest normal 2^-14"),
              (math.log2(f16.max), "float16 max 65504")]
    placed = _place([(_x(v) + 3, text) for v, text in limits], 15, 0)
    rows = 1 - min(y for _, y, _ in placed) // 15
    plot_top = MARGIN + 12 + 10 + rows * 15 + 4
    plot_bottom = plot_top + PLOT_HEIGHT
    for x, y, text in placed:
        parts.append(_text(text, x, plot_top - 6 + y, fill=LIMIT, size=SMALL))
    parts.append(_element("rect", {"fill": "#ffffff", "height": PLOT_HEIGHT, "stroke": "#cbd5e1",
                                   "width": PLOT_WIDTH, "x": LEFT, "y": plot_top}))
    for start, end, fill, zone in ((low, zero16, ZONE_LOST, "underflow"), (zero16, normal16, ZONE_SUBNORMAL,
                                   "subnormal"), (inf16, high, ZONE_LOST, "overflow")):
        parts.append(_element("rect", {"data-zone": zone, "fill": fill, "height": PLOT_HEIGHT,
                                       "width": f"{_x(end) - _x(start):.2f}", "x": f"{_x(start):.2f}",
                                       "y": plot_top}))
    bin_width = PLOT_WIDTH / (high - low)
    def height_of(count: float) -> float:
        return (1 + math.log10(count)) / (1 + decades) * (PLOT_HEIGHT - 8)

    for k, count in enumerate(counts):
        if count:
            h = height_of(count)
            parts.append(_element("rect", {"data-binade": low + k, "data-count": int(counts[k]), "fill": BAR,
                                           "height": f"{h:.2f}", "width": f"{bin_width - 1:.2f}",
                                           "x": f"{LEFT + k * bin_width + 0.5:.2f}", "y": f"{plot_bottom - h:.2f}"}))
    for v, _ in limits:
        parts.append(_element("line", {"stroke": LIMIT, "stroke-width": 1.5, "x1": f"{_x(v):.2f}",
                                       "x2": f"{_x(v):.2f}", "y1": plot_top - 4, "y2": plot_bottom}))
    for power in range(0, int(decades) + 1):
        y_tick = plot_bottom - height_of(10**power)
        parts.append(_element("line", {"stroke": "#cbd5e1", "x1": LEFT - 3, "x2": LEFT, "y1": f"{y_tick:.2f}",
                                       "y2": f"{y_tick:.2f}"}))
        parts.append(_text(f"{10**power:g}" if power < 3 else f"1e{power}", LEFT - 5, y_tick + 4, anchor="end",
                           fill=TEXT_SOFT, size=SMALL))
    parts.append(_text("count", LEFT - 5, plot_top - 6, anchor="end", fill=TEXT_SOFT, size=SMALL))
    for tick in range(low, high + 1, 8):
        x = _x(tick)
        parts.append(_element("line", {"stroke": TEXT_SOFT, "x1": x, "x2": x, "y1": plot_bottom, "y2": plot_bottom + 4}))
        parts.append(_text(f"2^{tick}", x, plot_bottom + 17, anchor="middle", fill=TEXT_SOFT, size=SMALL))
    y = plot_bottom + 34
    ends = [f"<- {below:,} below 2^{low}" if below else f"<- bfloat16: 0 below 2^-134, subnormal below 2^-126",
            f"{above:,} above 2^{high} ->" if above else "bfloat16 max 2^128 ->"]
    if below:
        ends[0] += " (bfloat16 keeps them down to 2^-133)"
    parts.append(_text(ends[0], LEFT, y, fill=TEXT_SOFT, size=SMALL))
    parts.append(_text(ends[1], LEFT + PLOT_WIDTH, y, anchor="end", fill=TEXT_SOFT, size=SMALL))
    lines = [shares_line(a, scale_log2, "float16"), shares_line(a, scale_log2, "bfloat16")]
    for line in lines:
        y += 18
        parts.append(_text(line, MARGIN, y))
    y += 8
    for x0, fill, name in ((MARGIN, ZONE_LOST, "lost (to 0 or inf) in float16"),
                           (MARGIN + 260, ZONE_SUBNORMAL, "subnormal in float16"), (MARGIN + 460, BAR, "gradients")):
        parts.append(_element("rect", {"fill": fill, "height": 11, "stroke": "#cbd5e1", "width": 16, "x": x0, "y": y + 4}))
        parts.append(_text(name, x0 + 22, y + 14, fill=TEXT_SOFT, size=SMALL))
    height = y + 22 + MARGIN
    width = LEFT + PLOT_WIDTH + RIGHT
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, height)


# ------------------------------------------------------------------ the widget


def _groups(gradients) -> dict[str, dict[str, np.ndarray]]:
    """``{group: {layer: array}}`` from that, or from ``{label: array}`` (one group per label, one layer)."""
    if not isinstance(gradients, Mapping) or not gradients:
        raise ValueError("GradientHistogram: pass {'step 1': {'layer': |grad|, ...}, ...} or {label: array}")
    out = {}
    for group, value in gradients.items():
        out[str(group)] = ({str(k): np.asarray(v) for k, v in value.items()} if isinstance(value, Mapping)
                           else {"all": np.asarray(value)})
    return out


class GradientHistogram(WidgetFrame):
    """Gradients of a few recorded steps with a loss-scale slider (``log2`` 0 to 24), a step and a layer choice.

    ``set(scale_log2=..., group=..., layer=...)`` changes the view; ``shares(fmt)``
    is ``precision_shares`` of what is shown; ``static_figure()`` stacks every
    recorded step at the current scale.
    """

    ALL = "all layers"

    def __init__(self, gradients=None, scale_log2: int = 0, group: str | None = None, layer: str | None = None):
        self.gradients = _groups(collect_gradients() if gradients is None else gradients)
        self.scale_log2, self.group, self.layer = 0, next(iter(self.gradients)), self.ALL
        self.set(scale_log2=scale_log2, group=group, layer=layer)

    def set(self, scale_log2: int | None = None, group: str | None = None, layer: str | None = None) -> None:
        """Change the view (None keeps a value); a bad value raises ValueError and changes nothing."""
        if scale_log2 is not None and (isinstance(scale_log2, bool) or not isinstance(scale_log2, (int, np.integer))
                                       or not 0 <= scale_log2 <= MAX_SCALE_LOG2):
            raise ValueError(f"GradientHistogram: scale_log2 must be a whole number from 0 to {MAX_SCALE_LOG2}, "
                             f"got {scale_log2!r}")
        if group is not None and group not in self.gradients:
            raise ValueError(f"GradientHistogram: unknown step {group!r}; choose one of {', '.join(self.gradients)}")
        group = self.group if group is None else group
        if layer is not None and layer != self.ALL and layer not in self.gradients[group]:
            raise ValueError(f"GradientHistogram: unknown layer {layer!r} at {group}; choose one of {self.ALL!r}, "
                             f"{', '.join(self.gradients[group])}")
        layer = self.layer if layer is None else layer
        self.scale_log2 = self.scale_log2 if scale_log2 is None else int(scale_log2)
        self.group, self.layer = group, layer if layer == self.ALL or layer in self.gradients[group] else self.ALL
        self._redraw()

    def magnitudes(self, group: str | None = None):
        """The magnitudes shown: the current layer's at ``group`` (default: the current step), or all its layers."""
        layers = self.gradients[group or self.group]
        return layers[self.layer] if self.layer in layers else layers

    def layer_shown(self, group: str | None = None) -> str:
        return self.layer if self.layer in self.gradients[group or self.group] else self.ALL

    def shares(self, fmt="float16") -> Shares:
        return precision_shares(self.magnitudes(), 2.0**self.scale_log2, fmt)

    def figure(self, group: str | None = None) -> SVGFigure:
        group = group or self.group
        return draw_gradient_histogram(self.magnitudes(group), self.scale_log2, f"{group}, {self.layer_shown(group)}")

    def static_figure(self) -> SVGFigure:
        return stack_figures([self.figure(g) for g in self.gradients], gap=0)

    def _rows(self, widgets) -> list:
        self._scale = widgets.IntSlider(value=self.scale_log2, min=0, max=MAX_SCALE_LOG2, description="log2 scale",
                                        continuous_update=True, layout=widgets.Layout(width="60%"))
        self._group = widgets.ToggleButtons(options=list(self.gradients), value=self.group, description="step")
        layers = sorted({name for layers in self.gradients.values() for name in layers})
        self._layer = widgets.Dropdown(options=[self.ALL, *layers], value=self.layer, description="layer")
        self._readout = widgets.HTML()
        for control in (self._scale, self._group, self._layer):
            control.observe(self._on_change, names="value")
        return [self._scale, [self._group, self._layer], self._readout, self._picture]

    def _on_change(self, change) -> None:
        if not self._syncing:
            self.set(scale_log2=self._scale.value, group=self._group.value, layer=self._layer.value)

    def _refresh(self) -> None:
        with self._moving_controls():
            self._scale.value, self._group.value, self._layer.value = self.scale_log2, self.group, self.layer
        lines = [shares_line(self.magnitudes(), self.scale_log2, f) for f in ("float16", "bfloat16")]
        self._readout.value = "<br>".join(f"<code>{html.escape(line)}</code>" for line in lines)
        super()._refresh()

    def __repr__(self) -> str:
        return f"GradientHistogram({', '.join(self.gradients)}; {self.group}, {self.layer}, scale 2^{self.scale_log2})"
