"""Will it fit? A training step's memory, stacked by category, against a consumer GPU's capacity.

``draw_will_it_fit(peak_by_category, gpu)`` draws two horizontal bars on one
byte scale: the card (the CUDA context, then what is usable) and the step
(the same context, then the step's peak split by category in the segment
map's colours, then the bytes the caching allocator reserves beyond them), with the card's capacity as a dashed line; the verdict, the
margin and the largest batch that fits are written above. Every rectangle is
``bytes * scale`` pixels wide, one scale for the figure.

``WillItFit()`` picks a model (the chapter-05 MLP or the chapter-06 CNN),
its width (the MLP's hidden sizes or the CNN's channels, times 1, 2, 4 or 8),
a GPU profile, the batch size, the optimizer and the dtype; its widget has a
control for each, and its static figure shows without ipywidgets (or without
a kernel). Estimates are cached per (model, width, optimizer, dtype): moving
the batch slider or switching the card reads ``Estimate.at(batch)``, no new
measurement. There is no checkpointing control: minigrad has no
checkpointing yet (chapter 10 will plug it into ``estimate(checkpoint=...)``).

Invariants
- The figure is a pure function of its arguments: the same state draws byte-identical SVG.
- The figure is wide enough for its title and verdict lines.
- Amounts are written by ``format_bytes``, in the figure as in ``verdict()``: the same bytes read the same.
- The verdict is the card's (``Estimate.fits``): the step's allocations replayed through its caching
  allocator, in reserved bytes; the bar shows the allocated peak by category, then what the allocator
  holds beyond it (rounding to 512 B, 2/20 MiB segments, unsplit blocks) up to the reserved peak.
"""

from __future__ import annotations

import html

from minigrad.viz.graph_svg import TEXT, TEXT_SOFT, SVGFigure, _element, _escape, _text, _text_width
from minigrad.viz.segment_map import CATEGORY_COLOURS, DARK_TEXT_ON
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["WillItFit", "build_model", "draw_will_it_fit", "MODELS", "WIDTHS"]

MODELS = ("mnist-cnn", "mnist-mlp")
WIDTHS = (1, 2, 4, 8)
DTYPES = ("float32", "float16", "bfloat16", "float64")
INPUT_SHAPE = (1, 28, 28)

LEFT, BAR_WIDTH, RIGHT = 110, 600.0, 24
BAR_HEIGHT, MIN_LABEL_WIDTH = 24, 64
CONTEXT_FILL, USABLE_FILL, CAPACITY, RESERVED_FILL = "#9ca3af", "#f8fafc", "#b91c1c", "#cbd5e1"
FITS_COLOUR, OVER_COLOUR = "#15803d", "#b91c1c"
GiB, MiB = 1024**3, 1024**2


def _bytes(n: float) -> str:
    """``minigrad.memory``'s ``format_bytes``: the figure writes every amount as the verdict's text does."""
    from minigrad.memory.estimate import format_bytes  # viz imports no stage at module level

    return format_bytes(n)


def build_model(name: str, width: int = 1):
    """The chapter-05 MLP (hidden 256w, 128w) or the chapter-06 CNN (channels 16w, 32w); width 1 is the recipe's."""
    from minigrad import nn  # viz imports no stage at module level

    if name == "mnist-mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256 * width), nn.ReLU(),
                             nn.Linear(256 * width, 128 * width), nn.ReLU(), nn.Linear(128 * width, 10))
    if name == "mnist-cnn":
        return nn.Sequential(
            nn.Conv2d(1, 16 * width, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16 * width, 32 * width, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * width * 4 * 4, 10))
    raise ValueError(f"build_model: unknown model {name!r}; choose one of {', '.join(MODELS)}")


def describe_width(name: str, width: int) -> str:
    return f"hidden {256 * width}-{128 * width}" if name == "mnist-mlp" else f"channels {16 * width}-{32 * width}"


def _ticks(span: float) -> list[int]:
    """Tick positions in bytes: a round step (a power of two of MiB or GiB) giving at most 8 ticks."""
    step = MiB
    while span / step > 8:
        step *= 2
    return [i * step for i in range(int(span // step) + 1)]


def draw_will_it_fit(peak_by_category: dict, gpu, title: str = "", max_batch: int | None = None,
                     reserved: int | None = None, fits: bool | None = None,
                     span_bytes: int | None = None) -> SVGFigure:
    """The step's peak (by category, after the CUDA context) against ``gpu``'s capacity; the verdict above.

    ``peak_by_category``: bytes per category at the step's peak (``Estimate.peak_by_category``);
    ``gpu``: a profile name or ``GPUProfile``; ``max_batch``: the largest batch that fits, if known.
    ``reserved``: the caching allocator's bytes (``Estimate.reserved``, or its replay on the card): the
    part above the tensors' bytes is drawn as "reserved, unallocated", and the verdict is in reserved
    bytes, as the card decides; ``fits``: the card's answer (``Estimate.fits``), if known.
    ``span_bytes``: the bytes the bars' axis spans, to draw several figures on one scale (default: 4 % past
    the larger of the card and the step; a span too short for this figure's bars is widened to that).
    """
    from minigrad.memory.profiles import get_profile

    profile = get_profile(gpu)
    parts = {c: int(b) for c, b in peak_by_category.items() if b}
    if any(b < 0 for b in parts.values()):
        raise ValueError(f"draw_will_it_fit: bytes must be >= 0, got {parts}")
    peak = sum(parts.values())
    context, capacity = profile.context_bytes, profile.memory_bytes
    held = peak if reserved is None else max(int(reserved), peak)
    span = max(capacity, context + held) * 1.04
    if span_bytes is not None:
        if isinstance(span_bytes, bool) or not isinstance(span_bytes, (int, float)) or not span_bytes > 0 \
                or span_bytes == float("inf"):
            raise ValueError(f"draw_will_it_fit: span_bytes must be a positive number of bytes, got {span_bytes!r}")
        span = max(span, float(span_bytes))
    scale = BAR_WIDTH / span
    margin = profile.usable_bytes - held
    fits = margin >= 0 if fits is None else bool(fits)
    if reserved is None:
        verdict = (f"{'fits' if fits else 'does NOT fit'}: peak {_bytes(peak)} + CUDA context {_bytes(context)} "
                   f"{'<=' if fits else '>'} {_bytes(capacity)} ({_bytes(abs(margin))} "
                   f"{'to spare' if margin >= 0 else 'over'})")
    else:
        verdict = (f"{'fits' if fits else 'does NOT fit'}: reserved {_bytes(held)} (allocated {_bytes(peak)}) + "
                   f"CUDA context {_bytes(context)} {'<=' if margin >= 0 else '>'} {_bytes(capacity)} "
                   f"({_bytes(abs(margin))} {'to spare' if margin >= 0 else 'over'})")
    body = []
    y = 18
    for line in (title.splitlines() if title else []):
        body.append(_text(line, 12, y, weight="bold"))
        y += 16
    body.append(_text(verdict, 12, y, fill=FITS_COLOUR if fits else OVER_COLOUR, weight="bold"))
    if max_batch is not None:
        y += 16
        body.append(_text(f"largest batch that fits: {max_batch}" if max_batch else "not even a batch of one fits",
                          12, y, fill=TEXT_SOFT))
    card_y = y + 24
    step_y = card_y + BAR_HEIGHT + 10

    def rect(x_bytes, nbytes, y_top, fill, category, label=""):
        width = nbytes * scale
        attrs = {"data-bytes": nbytes, "data-category": category, "fill": fill, "height": BAR_HEIGHT,
                 "stroke": "#ffffff", "stroke-width": 0.5, "width": f"{width:.3f}",
                 "x": f"{LEFT + x_bytes * scale:.3f}", "y": y_top}
        body.append(_element("rect", attrs, _element("title", {}, _escape(f"{category}: {_bytes(nbytes)}"))))
        if label and width >= MIN_LABEL_WIDTH:
            dark = category in DARK_TEXT_ON or fill in (USABLE_FILL, CONTEXT_FILL, RESERVED_FILL)
            body.append(_text(label, LEFT + (x_bytes + nbytes / 2) * scale, y_top + 16, anchor="middle", size=10,
                              fill=TEXT if dark else "#ffffff"))

    body.append(_text(profile.short_name, 12, card_y + 16))
    rect(0, context, card_y, CONTEXT_FILL, "cuda_context", "CUDA context")
    rect(context, profile.usable_bytes, card_y, USABLE_FILL, "usable", f"usable {_bytes(profile.usable_bytes)}")
    body.append(_element("rect", {"fill": "none", "height": BAR_HEIGHT, "stroke": "#94a3b8",
                                  "width": f"{capacity * scale:.3f}", "x": LEFT, "y": card_y}))
    body.append(_text("step peak", 12, step_y + 16))
    rect(0, context, step_y, CONTEXT_FILL, "cuda_context")
    offset = context
    for category, nbytes in parts.items():
        rect(offset, nbytes, step_y, CATEGORY_COLOURS.get(category, CATEGORY_COLOURS["other"]), category,
             _bytes(nbytes))
        offset += nbytes
    if held > peak:
        rect(offset, held - peak, step_y, RESERVED_FILL, "reserved_unallocated", "reserved, unallocated")
    x_capacity = LEFT + capacity * scale
    body.append(_element("line", {"stroke": CAPACITY, "stroke-dasharray": "5 3", "stroke-width": 1.5,
                                  "x1": f"{x_capacity:.3f}", "x2": f"{x_capacity:.3f}", "y1": card_y - 6,
                                  "y2": step_y + BAR_HEIGHT + 6}))
    body.append(_text(f"capacity {_bytes(capacity)}", x_capacity, card_y - 9, anchor="end", size=10, fill=CAPACITY))
    axis_y = step_y + BAR_HEIGHT + 8
    body.append(_element("line", {"stroke": TEXT_SOFT, "x1": LEFT, "x2": LEFT + BAR_WIDTH, "y1": axis_y, "y2": axis_y}))
    for tick in _ticks(span):
        x = LEFT + tick * scale
        body.append(_element("line", {"stroke": TEXT_SOFT, "x1": f"{x:.3f}", "x2": f"{x:.3f}", "y1": axis_y,
                                      "y2": axis_y + 4}))
        label = "0" if not tick else f"{tick / GiB:g} GiB" if tick >= GiB else f"{tick // MiB} MiB"
        body.append(_text(label, x, axis_y + 16, anchor="middle", size=10, fill=TEXT_SOFT))
    legend_y, x = axis_y + 36, 12.0
    legend = [("cuda_context", context), *parts.items()] + ([("reserved_unallocated", held - peak)] if held > peak else [])
    for category, nbytes in legend:
        name = "CUDA context" if category == "cuda_context" else category.replace("_", " ")
        label = f"{name} {_bytes(nbytes)}"
        if x + 18 + _text_width(label) * 10 / 12 > LEFT + BAR_WIDTH:
            x, legend_y = 12.0, legend_y + 18
        fill = (CONTEXT_FILL if category == "cuda_context" else RESERVED_FILL if category == "reserved_unallocated"
                else CATEGORY_COLOURS.get(category, CATEGORY_COLOURS["other"]))
        body.append(_element("rect", {"fill": fill, "height": 10, "width": 14, "x": x, "y": legend_y - 9}))
        body.append(_text(label, x + 18, legend_y, size=10))
        x += 18 + _text_width(label) * 10 / 12 + 14
    lines = [*(title.splitlines() if title else []), verdict]
    width, height = max(LEFT + BAR_WIDTH + RIGHT, 24 + max(map(_text_width, lines))), legend_y + 12
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(body), width, height)


class WillItFit(WidgetFrame):
    """A model, its width, a GPU, a batch size, an optimizer and a dtype: does one training step fit?

    ``set(...)`` changes any of them; ``estimate()``, ``verdict()`` and
    ``figure()`` read the current choice; ``widget`` (ipywidgets) has a
    control for each. ``measurements`` counts the estimates really measured.
    """

    def __init__(self, model: str = "mnist-cnn", gpu="gtx1050", batch_size: int = 4096, width: int = 1,
                 optimizer: str = "adam", dtype: str = "float32", max_batch_size: int = 32768):
        self.model, self.gpu, self.batch_size, self.width = "mnist-cnn", "gtx1050", 1, 1
        self.optimizer, self.dtype = "adam", "float32"
        self.max_batch_size = int(max_batch_size)
        self.measurements = 0
        self._cache: dict[tuple, object] = {}
        self.set(model=model, gpu=gpu, batch_size=batch_size, width=width, optimizer=optimizer, dtype=dtype)

    # ------------------------------------------------------------------ the state

    def set(self, model=None, gpu=None, batch_size=None, width=None, optimizer=None, dtype=None) -> None:
        """Change the choice (None keeps a value); a bad value raises ValueError naming the valid ones."""
        from minigrad.memory.estimate import OPTIMIZERS
        from minigrad.memory.profiles import PROFILES, get_profile

        def check(name, value, valid):
            if value is not None and value not in valid:
                raise ValueError(f"WillItFit: unknown {name} {value!r}; choose one of "
                                 f"{', '.join(map(str, valid))}")

        check("model", model, MODELS)
        check("width", width, WIDTHS)
        check("optimizer", optimizer, list(OPTIMIZERS))
        check("dtype", dtype, DTYPES)
        if gpu is not None:  # a known card by its short name; a profile of one's own as itself
            profile = get_profile(gpu)
            gpu = profile.short_name if PROFILES.get(profile.short_name) == profile else profile
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or not 1 <= batch_size <= self.max_batch_size):
            raise ValueError(f"WillItFit: batch_size must be a whole number from 1 to {self.max_batch_size}, "
                             f"got {batch_size!r}")
        for name, value in (("model", model), ("gpu", gpu), ("batch_size", batch_size), ("width", width),
                            ("optimizer", optimizer), ("dtype", dtype)):
            if value is not None:
                setattr(self, name, value)
        self._redraw()

    def estimate(self):
        """The step's ``Estimate`` at the current batch size (measured once per model, width, optimizer and dtype)."""
        from minigrad.memory.estimate import estimate

        key = (self.model, self.width, self.optimizer, self.dtype)
        if key not in self._cache:
            self._cache[key] = estimate(build_model(self.model, self.width), INPUT_SHAPE, 2, optimizer=self.optimizer,
                                        dtype=self.dtype)
            self.measurements += 1
        return self._cache[key].at(self.batch_size)

    def fits(self) -> bool:
        return self.estimate().fits(self.gpu)

    def largest_batch(self) -> int:
        return self.estimate().max_batch_size(self.gpu)

    def title(self) -> str:
        from minigrad.memory.profiles import get_profile

        return (f"{self.model} ({describe_width(self.model, self.width)}), batch {self.batch_size}, {self.dtype}, "
                f"{self.optimizer} on the {get_profile(self.gpu).name}")

    def verdict(self) -> str:
        """One line: fits or not, the peak, the margin and the largest batch that fits."""
        return self.estimate().fit_report(self.gpu)

    def figure(self) -> SVGFigure:
        step = self.estimate()
        fits = step.fits(self.gpu)
        reserved = step.replay(self.gpu).peak_reserved if fits else step.reserved
        return draw_will_it_fit(step.peak_by_category, self.gpu, self.title(), step.max_batch_size(self.gpu),
                                reserved=reserved, fits=fits)

    # ------------------------------------------------------------------ the widget

    def _rows(self, widgets) -> list:
        from minigrad.memory.estimate import OPTIMIZERS
        from minigrad.memory.profiles import PROFILES

        self._controls = {
            "model": widgets.ToggleButtons(options=list(MODELS), description="model"),
            "width": widgets.ToggleButtons(options=list(WIDTHS), description="width x"),
            "gpu": widgets.Dropdown(options=[(p.name.replace("NVIDIA ", ""), k) for k, p in PROFILES.items()],
                                    description="GPU"),
            "batch_size": widgets.IntSlider(min=1, max=self.max_batch_size, description="batch",
                                            continuous_update=True, layout=widgets.Layout(width="60%")),
            "optimizer": widgets.Dropdown(options=list(OPTIMIZERS), description="optimizer"),
            "dtype": widgets.ToggleButtons(options=list(DTYPES), description="dtype"),
        }
        self._readout = widgets.HTML()
        for control in self._controls.values():
            control.observe(self._on_change, names="value")
        c = self._controls
        return [[c["model"]], [c["width"]], [c["gpu"], c["optimizer"]], c["batch_size"], c["dtype"], self._readout,
                self._picture]

    def _on_change(self, change) -> None:
        if not self._syncing:
            self.set(**{name: control.value for name, control in self._controls.items()})

    def _refresh(self) -> None:
        with self._moving_controls():
            cards = self._controls["gpu"]
            if all(value != self.gpu for _, value in cards.options):  # a profile of one's own joins the list
                cards.options = [*cards.options, (self.gpu.name, self.gpu)]
            for name, control in self._controls.items():
                control.value = getattr(self, name)
        self._readout.value = f"<code>{html.escape(self.verdict())}</code>"
        super()._refresh()

    def __repr__(self) -> str:
        card = self.gpu if isinstance(self.gpu, str) else self.gpu.short_name
        return (f"WillItFit({self.model}, width {self.width}, {card}, batch {self.batch_size}, {self.optimizer}, "
                f"{self.dtype})")
