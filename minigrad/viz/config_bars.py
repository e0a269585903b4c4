"""The capstone's configuration bars: one stacked bar per training configuration, against the card's usable memory.

``draw_config_bars(steps, card)`` draws, for each configuration's step
(:class:`minigrad.capstone.fit_plan.StepFit`), a horizontal bar of its
allocated peak split into parameters, gradients, optimizer state,
activations and other (the batch, temporaries, buffers), then the bytes the
caching allocator reserves beyond them, up to the reserved peak the card
sees. The verdict is the card's (``StepFit.fits_card``: the step replayed
through its allocator, which empties its cache and retries when full); a
step that fits shows its reserved peak on the card, one that does not its
peak on a card big enough - what it would need. A dashed line marks the card's usable memory (its
memory less the CUDA context), labelled; each bar's row says, on the
left, its configuration, its reserved bytes and the verdict. One byte scale for the
figure: every rectangle is ``bytes * scale`` pixels wide.

``ConfigBars(model, input_shape, batch_size, card)`` is the widget: controls
for the precision (``amp``), the checkpoint segments and the number of
accumulated micro-batches, findable by their descriptions
(``CONTROL_DESCRIPTIONS``); its picture shows the float32 step beside the
configuration the knobs make. Each configuration is estimated once
(cached). Its static figure shows without ipywidgets or a kernel.

Invariants
- The figure is a pure function of its arguments: the same steps draw byte-identical SVG.
- Amounts are written by ``format_bytes``: the same bytes read the same in the figure and in tables.
- A bar's parts sum to its reserved peak (the last part is ``reserved - allocated``, never negative).
"""

from __future__ import annotations

import html

from minigrad.viz.graph_svg import TEXT, TEXT_SOFT, SVGFigure, _element, _escape, _text, _text_width
from minigrad.viz.segment_map import CATEGORY_COLOURS
from minigrad.viz.widget_frame import WidgetFrame, widget_error

__all__ = ["draw_config_bars", "ConfigBars", "PART_COLOURS", "CONTROL_DESCRIPTIONS"]

PART_COLOURS = {
    "parameters": CATEGORY_COLOURS["parameter"], "gradients": CATEGORY_COLOURS["gradient"],
    "optimizer state": CATEGORY_COLOURS["optimizer_state"], "activations": CATEGORY_COLOURS["activation"],
    "other": CATEGORY_COLOURS["temporary"], "reserved beyond allocated": "#cbd5e1",
}
DARK_TEXT = ("optimizer state", "reserved beyond allocated")
CONTROL_DESCRIPTIONS = {"amp": "precision", "checkpoint": "checkpoint segments", "accumulate": "accumulate"}

BAR_WIDTH, RIGHT, BAR_HEIGHT, ROW = 520.0, 24, 22, 44
USABLE_COLOUR, FITS_COLOUR, OVER_COLOUR = "#b91c1c", "#15803d", "#b91c1c"
MIN_LABEL_WIDTH = 56


def _bytes(n) -> str:
    from minigrad.memory import format_bytes  # viz imports no stage at module level

    return format_bytes(n)


def _parts_of(step) -> dict:
    parts = getattr(step, "bars", None)
    if not isinstance(parts, dict):
        raise TypeError(f"draw_config_bars: each step must be a StepFit (minigrad.capstone.estimate_step), got "
                        f"{type(step).__name__}")
    wrong = {name: nbytes for name, nbytes in parts.items() if not isinstance(nbytes, int) or nbytes < 0}
    if wrong or set(parts) != set(PART_COLOURS):
        raise ValueError(f"draw_config_bars: a bar's parts must be {', '.join(PART_COLOURS)} as bytes >= 0, got "
                         f"{parts}")
    return parts


def _on_card(step, profile) -> tuple[bool, int]:
    """The card's verdict on ``step`` and the reserved peak it sees (on a card big enough when it does not fit)."""
    if step.how == "measured" or step.estimate is None:  # one real step on the card: its figures are the card's
        return bool(step.fits if step.fits is not None else step.known), step.reserved
    fits = step.fits_card(profile)
    return fits, (step.estimate.replay(profile).peak_reserved if fits else step.estimate.reserved)


def draw_config_bars(steps, card, title: str = "") -> SVGFigure:
    """One stacked bar per step in ``steps`` (StepFit, in order) against ``card``'s usable memory (see the module)."""
    from minigrad.memory import get_profile

    steps = list(steps)
    if not steps:
        raise ValueError("draw_config_bars: no configuration to draw; pass a list of StepFit "
                         "(e.g. fitting_configuration(...).tried)")
    profile = get_profile(card)
    usable = profile.usable_bytes
    bars = [_parts_of(step) for step in steps]
    verdicts = [_on_card(step, profile) for step in steps]
    for step, parts, (_, reserved) in zip(steps, bars, verdicts):
        parts["reserved beyond allocated"] = max(reserved - step.peak, 0)
    labels = [step.label + (f" (micro-batch {step.config.micro_batch})" if step.config.accumulate > 1 else "")
              for step in steps]
    verdict_width = _text_width("reserved 1000.0 MiB: does NOT fit (measured)") * 10 / 12
    left = 12 + max(verdict_width, *(_text_width(label) * 11 / 12 for label in labels)) + 12
    span = max(usable, *(sum(parts.values()) for parts in bars)) * 1.06
    scale = BAR_WIDTH / span
    body, y = [], 18
    for line in (title.splitlines() if title else []):
        body.append(_text(line, 12, y, weight="bold"))
        y += 16
    body.append(_text(f"the {profile.name}: {_bytes(usable)} usable ({_bytes(profile.memory_bytes)} less the CUDA "
                      f"context, {_bytes(profile.context_bytes)})", 12, y, fill=TEXT_SOFT))
    top = y + 22
    for row, (step, parts, label, (fits, reserved)) in enumerate(zip(steps, bars, labels, verdicts)):
        y_bar = top + row * ROW
        body.append(_text(label, 12, y_bar + 15, size=11))
        offset = 0
        for name, nbytes in parts.items():
            width = nbytes * scale
            attrs = {"data-bytes": nbytes, "data-part": name, "fill": PART_COLOURS[name], "height": BAR_HEIGHT,
                     "stroke": "#ffffff", "stroke-width": 0.5, "width": f"{width:.3f}",
                     "x": f"{left + offset * scale:.3f}", "y": y_bar}
            body.append(_element("rect", attrs, _element("title", {}, _escape(f"{label}: {name} {_bytes(nbytes)}"))))
            if width >= MIN_LABEL_WIDTH:
                body.append(_text(_bytes(nbytes), left + (offset + nbytes / 2) * scale, y_bar + 15, anchor="middle",
                                  size=10, fill=TEXT if name in DARK_TEXT else "#ffffff"))
            offset += nbytes
        verdict = f"reserved {_bytes(reserved)}: {'fits' if fits else 'does NOT fit'}" + (
            " (measured)" if step.how == "measured" else "")
        body.append(_text(verdict, 12, y_bar + BAR_HEIGHT + 11, size=10, fill=FITS_COLOUR if fits else OVER_COLOUR))
    bottom = top + len(steps) * ROW
    x_usable = left + usable * scale
    body.append(_element("line", {"stroke": USABLE_COLOUR, "stroke-dasharray": "5 3", "stroke-width": 1.5,
                                  "x1": f"{x_usable:.3f}", "x2": f"{x_usable:.3f}", "y1": top - 8, "y2": bottom - 4}))
    body.append(_text(f"usable {_bytes(usable)}", x_usable, top - 11, anchor="middle", size=10, fill=USABLE_COLOUR))
    legend_y, x = bottom + 14, 12.0
    for name, colour in PART_COLOURS.items():
        if x + 18 + _text_width(name) * 10 / 12 > left + BAR_WIDTH:
            x, legend_y = 12.0, legend_y + 18
        body.append(_element("rect", {"fill": colour, "height": 10, "width": 14, "x": x, "y": legend_y - 9}))
        body.append(_text(name, x + 18, legend_y, size=10))
        x += 18 + _text_width(name) * 10 / 12 + 14
    texts = [*(title.splitlines() if title else [])]
    width = max(left + BAR_WIDTH + RIGHT, 24 + max(map(_text_width, texts), default=0))
    height = legend_y + 12
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(body), width, height)


class ConfigBars(WidgetFrame):
    """A model, an effective batch and a card; the knobs (precision, segments, accumulation) make the configuration.

    ``set(amp=, checkpoint=, accumulate=)`` turns them (None for float32 / no
    checkpointing); ``steps()`` gives the float32 step and the current one,
    ``figure()`` draws them; ``widget`` has a control for each knob.
    ``measurements`` counts the estimates really made.
    """

    def __init__(self, model, input_shape, batch_size: int, card="gtx1050", amp=None, checkpoint=None,
                 accumulate: int = 1, optimizer: str = "adam"):
        from minigrad import nn
        from minigrad.capstone.config import TrainConfig

        if not isinstance(model, nn.Sequential):
            raise TypeError(f"ConfigBars: model must be an nn.Sequential (its layers are what checkpointing cuts), "
                            f"got {type(model).__name__}")
        self.model, self.input_shape = model, tuple(input_shape)
        self.base = TrainConfig(batch_size, card=card, optimizer=optimizer)
        self.config = self.base
        self.measurements = 0
        self._cache: dict = {}
        self._error = ""
        self.set(amp=amp, checkpoint=checkpoint, accumulate=accumulate)

    def set(self, **knobs) -> None:
        """Turn knobs (``amp``, ``checkpoint``, ``accumulate``); a bad value raises ValueError saying the valid ones."""
        unknown = set(knobs) - set(CONTROL_DESCRIPTIONS)
        if unknown:
            raise ValueError(f"ConfigBars.set: unknown knob {sorted(unknown)[0]!r}; the knobs are "
                             f"{', '.join(CONTROL_DESCRIPTIONS)}")
        if knobs.get("amp") == "float32":
            knobs["amp"] = None
        if knobs.get("checkpoint") in (0, "none"):
            knobs["checkpoint"] = None
        segments = knobs.get("checkpoint")
        if isinstance(segments, int) and not isinstance(segments, bool) and segments > len(self.model):
            raise ValueError(f"ConfigBars.set: checkpoint={segments} segments, but the model has {len(self.model)} "
                             f"layers; choose 1 to {len(self.model)}")
        try:
            self.config = self.config.but(**knobs)
        except ValueError as error:
            raise ValueError(f"ConfigBars.set: {error}") from None
        self._redraw()

    def _step(self, config):
        from minigrad.capstone.fit_plan import estimate_step

        if config not in self._cache:
            self._cache[config] = estimate_step(self.model, self.input_shape, config)
            self.measurements += 1
        return self._cache[config]

    def steps(self) -> list:
        """The float32 step, then the current configuration's (once, when it is float32)."""
        configs = [self.base] + ([self.config] if self.config != self.base else [])
        return [self._step(config) for config in configs]

    def figure(self) -> SVGFigure:
        return draw_config_bars(self.steps(), self.base.card,
                                f"{type(self.model).__name__} of {len(self.model)} layers, input {self.input_shape}, "
                                f"effective batch {self.base.batch_size}, {self.base.optimizer}")

    # ------------------------------------------------------------------ the widget

    def _rows(self, widgets) -> list:
        from minigrad.capstone.fitting import accumulation_choices

        d = CONTROL_DESCRIPTIONS
        self._controls = {
            "amp": widgets.ToggleButtons(options=["float32", "float16", "bfloat16"], description=d["amp"]),
            "checkpoint": widgets.Dropdown(options=[("none", 0)] + [(str(n), n) for n in range(1, len(self.model) + 1)],
                                           description=d["checkpoint"]),
            "accumulate": widgets.Dropdown(options=[1, *accumulation_choices(self.base.batch_size)],
                                           description=d["accumulate"]),
        }
        self._readout = widgets.HTML()
        for control in self._controls.values():
            control.observe(self._on_change, names="value")
        c = self._controls
        return [[c["amp"]], [c["checkpoint"], c["accumulate"]], self._readout, self._picture]

    def _on_change(self, change) -> None:
        if self._syncing:
            return
        try:
            self.set(**{name: control.value for name, control in self._controls.items()})
            self._error = ""
        except ValueError as error:
            self._error = str(error)
            self._refresh()

    def _refresh(self) -> None:
        with self._moving_controls():
            self._controls["amp"].value = self.config.amp or "float32"
            self._controls["checkpoint"].value = self.config.checkpoint if isinstance(self.config.checkpoint, int) else 0
            self._controls["accumulate"].value = self.config.accumulate
        step = self._step(self.config)
        self._readout.value = widget_error(self._error) if self._error else f"<code>{html.escape(str(step))}</code>"
        super()._refresh()

    def __repr__(self) -> str:
        return f"ConfigBars({self.config.label()}, batch {self.base.batch_size})"
