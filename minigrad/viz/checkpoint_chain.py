"""A chain of layers cut into segments, each checkpointed or stored: what the placement costs, measured.

``CheckpointChain(model, x)`` holds a placement on a chain (``list(model)``
of a ``Sequential``): cuts between layers make the segments, and each
segment is checkpointed (only its input is kept; its layers run again in
backward) or stored (its layers keep what they save). ``toggle_cut(b)``
places or removes the cut before layer ``b``; ``toggle_segment(i)`` flips the
segment holding layer ``i``. After each change the placement is run under
the tracker (:func:`~minigrad.viz.checkpoint_costs.measure_placement`, once
per placement, remembered), so what is shown is measured:

- the peak the tracker saw (everything but parameters and gradients) beside
  the layer model's prediction and the peak with no checkpoint;
- the recompute cost: the checkpointed layers' FLOPs over one forward's;
- the placement as a ring on the peak curve of ``checkpoint_sequential``'s
  uniform cuts (:func:`~minigrad.viz.segment_sweep.draw_peak_curve`: the
  measured points over the ``(n/k + k) L`` theory, ``sqrt(n)`` marked).

Starts from ``checkpoint_sequential``'s placement with ``round(sqrt(n))``
segments; its static figure is the figure of that sample placement.

Invariants
- The segments always tile the chain; cuts are at 1..n-1.
- The figure is a pure function of the placement and the measurements: byte-identical SVG.
"""

from __future__ import annotations

import html
import math

from minigrad.viz.checkpoint_costs import LayerCost, PlacementCost
from minigrad.viz.graph_svg import TEXT, TEXT_SOFT, SVGFigure, _element, _text, _text_width, stack_figures
from minigrad.viz.scaler_run import _wrap
from minigrad.viz.segment_sweep import SegmentSweepRecord, draw_peak_curve
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["CheckpointChain", "draw_checkpoint_chain", "describe_placement"]

LEFT, WIDTH, MARGIN, RIGHT, BOX_HEIGHT = 76, 772, 12, 24, 34
SMALL = 11
STORED, CHECKPOINTED, CUT = ("#dbeafe", "#3b7dd8"), ("#fff7ed", "#e07b1a"), "#111827"
MiB = 2**20


def describe_placement(segments, cost: PlacementCost, plain: PlacementCost | None = None) -> str:
    """The placement and its measured costs in words."""
    ranges = ", ".join(f"{s}-{e}" if s != e else f"{s}" for s, e, c in segments if c) or "none"
    words = (f"{len(segments)} segments, checkpointed layers {ranges}: peak {cost.peak_bytes / MiB:.3f} MiB "
             f"by the tracker (layer model: {cost.predicted_bytes / MiB:.3f} MiB")
    if plain is not None:
        words += f"; no checkpoint: {plain.peak_bytes / MiB:.3f} MiB"
    return words + (f"); recompute {cost.recompute_flops / 1e6:,.1f} MFLOP = "
                    f"{100 * cost.recompute_share:.1f} % of one forward")


def draw_checkpoint_chain(costs: list[LayerCost], segments, cost: PlacementCost | None = None,
                          plain: PlacementCost | None = None, title: str | None = None) -> SVGFigure:
    """The layers as boxes, the cuts as bars, checkpointed segments dashed and orange, stored ones blue."""
    n = len(costs)
    pitch = WIDTH / n
    top = MARGIN + 12 + 12
    checkpointed = sum(c for _, _, c in segments)
    parts = [_text(title or f"A {n}-layer chain: {len(segments)} segments, {checkpointed} checkpointed",
                   MARGIN, MARGIN + 12, weight="bold")]
    parts.append(_text("layers", LEFT - 12, top + BOX_HEIGHT / 2 + 4, anchor="end", fill=TEXT_SOFT, size=SMALL))
    for start, end, ck in segments:
        fill, stroke = CHECKPOINTED if ck else STORED
        for i in range(start, end + 1):
            attrs = {"data-layer": i, "data-checkpointed": int(ck), "fill": fill, "height": BOX_HEIGHT, "rx": 3,
                     "stroke": stroke, "stroke-width": 1.5, "width": f"{pitch - 4:.2f}",
                     "x": f"{LEFT + i * pitch + 2:.2f}", "y": top}
            if ck:
                attrs["stroke-dasharray"] = "4 3"
            parts.append(_element("rect", attrs))
        if start:
            x = LEFT + start * pitch
            parts.append(_element("line", {"data-cut": start, "stroke": CUT, "stroke-width": 3, "x1": f"{x:.2f}",
                                           "x2": f"{x:.2f}", "y1": top - 6, "y2": top + BOX_HEIGHT + 6}))
    every = max(1, math.ceil(n / (WIDTH / (_text_width(str(n - 1)) * SMALL / 12 + 8))))
    label_y = top + BOX_HEIGHT + 20
    for i in range(n):
        if i % every == 0:
            parts.append(_text(str(i), LEFT + (i + 0.5) * pitch, label_y, anchor="middle", fill=TEXT_SOFT, size=SMALL))
    bracket_y = label_y + 10
    for start, end, ck in segments:
        x0, x1 = LEFT + start * pitch + 2, LEFT + (end + 1) * pitch - 2
        colour = CHECKPOINTED[1] if ck else STORED[1]
        parts.append(_element("path", {"d": f"M {x0:.2f} {bracket_y} L {x0:.2f} {bracket_y + 5} L {x1:.2f} "
                                            f"{bracket_y + 5} L {x1:.2f} {bracket_y}", "fill": "none",
                                       "stroke": colour, "stroke-width": 1.5}))
        for word in (("recomputed", "ckpt") if ck else ("stored", "kept")):
            if _text_width(word) * SMALL / 12 + 4 <= x1 - x0:
                parts.append(_text(word, (x0 + x1) / 2, bracket_y + 19, anchor="middle", fill=colour, size=SMALL))
                break
    y = bracket_y + 38
    key = [(CHECKPOINTED, "checkpointed: keeps its input, runs again in backward"),
           (STORED, "stored: keeps what its layers save"), (None, "| a cut")]
    kx = float(MARGIN)
    for style, name in key:
        if style is not None:
            parts.append(_element("rect", {"fill": style[0], "height": 11, "stroke": style[1], "width": 16, "x": kx,
                                           "y": y - 9}))
            kx += 22
        parts.append(_text(name, kx, y, fill=TEXT_SOFT, size=SMALL))
        kx += _text_width(name) * SMALL / 12 + 18
    if cost is not None:
        for line in _wrap(describe_placement(segments, cost, plain), LEFT + WIDTH - MARGIN):
            y += 18
            parts.append(_text(line, MARGIN, y, fill=TEXT))
    height = y + MARGIN
    width = LEFT + WIDTH + RIGHT
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, height)


class CheckpointChain(WidgetFrame):
    """A placement of checkpoints on ``model`` (a Sequential; default: a 16-layer MLP of width 256) run on ``x``
    (default: a batch of 32), measured by the tracker at each change; buttons place cuts and flip segments."""

    def __init__(self, model=None, x=None, segments=None, sweep: SegmentSweepRecord | None = None):
        from minigrad.viz.checkpoint_costs import chain_layers, deep_mlp, layer_costs, uniform_segments
        from minigrad.viz.segment_sweep import record_segment_sweep

        if x is None:
            import numpy as np

            from minigrad.tensor import tensor

            width = 256 if model is None else getattr(next(iter(model)), "in_features", 256)
            x = tensor(np.random.default_rng(0).standard_normal((32, width)).astype(np.float32))
        self.layers = chain_layers(deep_mlp(16, 256) if model is None else model)
        self.x = x
        self.costs = layer_costs(self.layers, x)
        n = len(self.layers)
        self.sweep = sweep if sweep is not None else record_segment_sweep(self.layers, x, timed=False)
        self._measured: dict[tuple, PlacementCost] = {p.cost.segments: p.cost for p in self.sweep.points}
        self.set_segments(segments if segments is not None else uniform_segments(n, max(1, round(math.sqrt(n)))))

    # ------------------------------------------------------------- the placement

    @property
    def segments(self) -> list[tuple[int, int, bool]]:
        ends = [*self._starts[1:], len(self.layers)]
        return [(s, e - 1, self._checkpointed[s]) for s, e in zip(self._starts, ends)]

    def set_segments(self, segments) -> None:
        """Take a whole placement ``[(start, end, checkpointed), ...]`` (it must tile the chain)."""
        from minigrad.checkpoint.chain_run import check_segments

        segments = [tuple(s) for s in segments]
        check_segments(self.layers, segments, "CheckpointChain.set_segments")
        self._starts = [s for s, _, _ in segments]
        self._checkpointed = {s: bool(c) for s, _, c in segments}
        self._redraw()

    def toggle_cut(self, boundary: int) -> None:
        """Place a cut before layer ``boundary`` (1..n-1), or remove it; the pieces keep their segment's choice."""
        n = len(self.layers)
        if isinstance(boundary, bool) or not isinstance(boundary, int) or not 1 <= boundary < n:
            raise ValueError(f"CheckpointChain.toggle_cut: a cut goes before layer 1 to {n - 1}, got {boundary!r}")
        if boundary in self._starts:
            self._starts.remove(boundary)
            del self._checkpointed[boundary]  # the merged segment keeps the choice of its left part
        else:
            left = max(s for s in self._starts if s < boundary)
            self._starts = sorted([*self._starts, boundary])
            self._checkpointed[boundary] = self._checkpointed[left]
        self._redraw()

    def toggle_segment(self, layer: int) -> None:
        """Flip the segment holding ``layer`` between checkpointed and stored."""
        n = len(self.layers)
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < n:
            raise ValueError(f"CheckpointChain.toggle_segment: layer must be 0 to {n - 1}, got {layer!r}")
        start = max(s for s in self._starts if s <= layer)
        self._checkpointed[start] = not self._checkpointed[start]
        self._redraw()

    # ------------------------------------------------------------- measured

    @property
    def cost(self) -> PlacementCost:
        """The tracker's measurement of the current placement (made once per placement)."""
        from minigrad.viz.checkpoint_costs import measure_placement

        key = tuple(self.segments)
        if key not in self._measured:
            self._measured[key] = measure_placement(self.layers, self.x, key, self.costs)
        return self._measured[key]

    def _plain(self) -> PlacementCost | None:
        return next((p.cost for p in self.sweep.points if p.segments == 1), None)

    def describe(self) -> str:
        return describe_placement(self.segments, self.cost, self._plain())

    def figure(self) -> SVGFigure:
        cost = self.cost
        chain = draw_checkpoint_chain(self.costs, self.segments, cost, self._plain())
        curve = draw_peak_curve(self.sweep, marked=(len(self.segments), cost.peak_bytes),
                                title=f"This placement (ring) on checkpoint_sequential's curve, k = {len(self.segments)}")
        return stack_figures([chain, curve], gap=0)

    # ------------------------------------------------------------- the widget

    def _rows(self, widgets) -> list:
        n = len(self.layers)
        wrap = widgets.Layout(flex_flow="row wrap")
        self._layer_buttons = []
        for i in range(n):
            button = widgets.Button(description=str(i), tooltip=f"layer {i}: flip its segment",
                                    layout=widgets.Layout(width="44px"))
            button.on_click(lambda _, i=i: self.toggle_segment(i))
            self._layer_buttons.append(button)
        self._cut_buttons = {}
        for b in range(1, n):
            toggle = widgets.ToggleButton(value=b in self._starts, description=f"{b - 1}|{b}",
                                          tooltip=f"a cut between layers {b - 1} and {b}",
                                          layout=widgets.Layout(width="60px"))
            toggle.observe(lambda change, b=b: self._on_cut(b, change), names="value")
            self._cut_buttons[b] = toggle
        self._readout = widgets.HTML()
        return [widgets.HTML("<b>click a layer</b> to flip its segment (checkpointed / stored)"),
                widgets.HBox(self._layer_buttons, layout=wrap),
                widgets.HTML("<b>cuts</b> between layers"), widgets.HBox(list(self._cut_buttons.values()), layout=wrap),
                self._readout, self._picture]

    def _on_cut(self, boundary: int, change) -> None:
        if not self._syncing and bool(change["new"]) != (boundary in self._starts):
            self.toggle_cut(boundary)

    def _refresh(self) -> None:
        with self._moving_controls():
            for b, toggle in self._cut_buttons.items():
                toggle.value = b in self._starts
        for start, end, ck in self.segments:
            for i in range(start, end + 1):
                self._layer_buttons[i].button_style = "warning" if ck else "info"
        self._readout.value = f"<code>{html.escape(self.describe())}</code>"
        super()._refresh()

    def __repr__(self) -> str:
        return f"CheckpointChain({len(self.layers)} layers, {len(self.segments)} segments)"
