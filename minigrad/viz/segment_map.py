"""The allocator's segment map: every reserved segment as a bar, cut into its blocks, coloured by what they hold.

``draw_segment_map(state)`` draws a ``CachingAllocator`` (or its
``snapshot()``, the shape of ``torch.cuda.memory_snapshot()``): one
horizontal bar per segment, grouped by pool (large, then small), its length
proportional to the segment's bytes, each block a rectangle at its offset in
the segment and of its size on the same scale. Allocated blocks are filled
with their tag's colour (PyTorch's memory-profiler palette, ``CATEGORY_COLOURS``);
free blocks are hatched grey, and those that share their segment with an
allocated block (*inactive split*: ``empty_cache()`` cannot give them back)
get a dashed red outline. The title states reserved and allocated bytes and
the fragmentation ``1 - largest free block / free bytes``.

``SegmentMap(trace)`` replays a trace (:mod:`minigrad.memory.allocator.trace_replay`)
and shows the state after event ``k`` under a policy: the block the event
allocated or freed outlined, and under the map reserved, allocated and
fragmentation over the whole replay (``draw_replay_timeline``) marked at
``k``. It opens at event 0, the first allocation, so a learner steps forward. Its widget has a slider (and a play button) over the events, a
best-fit/first-fit switch that replays the same trace, and the figures of
the moment in a line above the picture. Without ipywidgets (and in a
notebook rendered without a kernel) its static figure shows.

Invariants
- The figure is a pure function of the snapshot and the options: the same
  state draws byte-identical SVG.
- Within one figure every segment and block is ``bytes * scale`` pixels
  long, one scale for all (``full_width_bytes`` fills ``BAR_WIDTH``) unless
  the small pool is zoomed (then it has its own, stated in its heading); a
  ``SegmentMap`` keeps its scales for the whole trace, so frames compare.
- A ``SegmentMap``'s picture depends on the trace's sizes, tags and order,
  not on its ids (buffers are numbered in the order they are allocated), so
  a recorded trace draws the same in every process.
"""

from __future__ import annotations

import html
from functools import lru_cache

from minigrad.viz.graph_svg import (
    TEXT, TEXT_SOFT, SVGFigure, _element, _escape, _num, _text, _text_width, stack_figures,
)
from minigrad.viz.widget_frame import WidgetFrame

__all__ = [
    "CATEGORY_COLOURS", "FREE_COLOUR", "SegmentMap", "draw_replay_timeline", "draw_segment_map", "segment_figures",
]

CATEGORY_COLOURS: dict[str, str] = {
    # PyTorch's memory profiler colours (torch.profiler._memory_profiler: darkgreen, goldenrod, black,
    # mediumpurple, red, mediumblue, grey) ...
    "parameter": "#006400",
    "optimizer_state": "#daa520",
    "input": "#000000",
    "temporary": "#9370db",
    "activation": "#ff0000",
    "gradient": "#0000cd",
    # ... and minigrad's own tags beside them: an unsaved op output (kin of an activation), a factory's tensor
    "output": "#fa8072",
    "tensor": "#008080",
    "other": "#808080",
}
"""Fill of an allocated block by its tag; a tag not listed (or none) is drawn as ``"other"``."""
FREE_COLOUR = "#c2c8d0"  # the hatching of a free block
SPLIT_OUTLINE = "#d64545"  # dashed outline of an inactive split block
HIGHLIGHT = "#111827"  # outline of the highlighted block
DARK_TEXT_ON = {"optimizer_state", "output", "other"}  # fills light enough for black labels

BAR_WIDTH = 720.0
TIMELINE_HEIGHT = 56
LEFT, MARGIN = 150, 12
ROW, ROW_GAP, POOL_GAP = 20, 6, 10
MIN_LABEL_WIDTH = 58  # a block at least this wide carries its size
POOL_TITLES = (("large", "large pool: requests > 1 MiB, 20 MiB segments (own segment from 10 MiB)"),
               ("small", "small pool: requests <= 1 MiB, 2 MiB segments"))
HATCH = (f"<defs><pattern height='6' id='segment-map-free' patternTransform='rotate(45)' patternUnits='userSpaceOnUse'"
         f" width='6'><rect fill='#ffffff' height='6' width='6'/><line stroke='{FREE_COLOUR}' stroke-width='2.5'"
         f" x1='0' x2='0' y1='0' y2='6'/></pattern></defs>")


def _bytes(n: int) -> str:
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    if n >= 2**10:
        return f"{n / 2**10:.1f} KiB"
    return f"{n} B"


def _snapshot(state) -> list[dict]:
    if isinstance(state, list):
        return state
    if hasattr(state, "snapshot"):
        return state.snapshot()
    raise TypeError(f"draw_segment_map: expected a CachingAllocator or its snapshot() (a list of segments), "
                    f"got {type(state).__name__}")


def segment_figures(snapshot: list[dict]) -> dict[str, float]:
    """Reserved, allocated and free bytes, the largest free block, inactive split bytes and the fragmentation.

    Read from the snapshot alone; they agree with the allocator's own figures
    (its pools hold exactly the free blocks).
    """
    free_blocks = [(b["size"], len(s["blocks"]) > 1)  # (size, is inactive split)
                   for s in snapshot for b in s["blocks"] if b["state"] != "active_allocated"]
    reserved = sum(s["total_size"] for s in snapshot)
    allocated = sum(s["allocated_size"] for s in snapshot)
    free = reserved - allocated
    largest = max((size for size, _ in free_blocks), default=0)
    return {
        "reserved": reserved, "allocated": allocated, "free": free, "largest_free_block": largest,
        "inactive_split": sum(size for size, split in free_blocks if split),
        "fragmentation": 0.0 if free == 0 else 1.0 - largest / free,
        "segments": len(snapshot),
    }


def _colour(tag) -> str:
    return CATEGORY_COLOURS.get(tag, CATEGORY_COLOURS["other"])


def _block(block: dict, x: float, y: float, width: float, split: bool) -> str:
    allocated = block["state"] == "active_allocated"
    tag = (block["tag"] if block["tag"] in CATEGORY_COLOURS else "other") if allocated else None
    if allocated:
        tip = f"{tag}: {_bytes(block['size'])} ({block['requested_size']} B requested) at {block['address']:#x}"
        attrs = {"fill": _colour(tag), "stroke": "#ffffff", "stroke-width": 0.5}
    else:
        kind = "inactive split (empty_cache cannot release it)" if split else "whole segment (empty_cache releases it)"
        tip = f"free, {kind}: {_bytes(block['size'])} at {block['address']:#x}"
        attrs = {"fill": "url(#segment-map-free)", "stroke": SPLIT_OUTLINE if split else FREE_COLOUR,
                 "stroke-width": 1.2 if split else 0.8}
        if split:
            attrs["stroke-dasharray"] = "3 2"
    attrs.update({"height": ROW, "width": width, "x": x, "y": y})
    parts = [_element("rect", attrs, _element("title", {}, _escape(tip)))]
    label = _bytes(block["size"])
    if width >= max(MIN_LABEL_WIDTH, _text_width(label) * 0.75 + 6):
        fill = TEXT_SOFT if not allocated else ("#000000" if tag in DARK_TEXT_ON else "#ffffff")
        parts.append(_text(label, x + width / 2, y + ROW / 2 + 3.5, anchor="middle", fill=fill, size=9))
    return "".join(parts)


def _legend(categories, y: float, width: float, highlight: bool) -> tuple[str, float]:
    entries = [(_colour(c), c, {}) for c in categories]
    entries.append(("url(#segment-map-free)", "free (whole segment)", {"stroke": FREE_COLOUR}))
    entries.append(("url(#segment-map-free)", "free, inactive split",
                    {"stroke": SPLIT_OUTLINE, "stroke-dasharray": "3 2", "stroke-width": 1.2}))
    if highlight:
        entries.append(("#ffffff", "outlined: the block of this event", {"stroke": HIGHLIGHT, "stroke-width": 2}))
    parts, x = [], MARGIN
    for fill, name, extra in entries:
        step = 18 + _text_width(name) * 10 / 12 + 14
        if x + step > width - MARGIN and x > MARGIN:
            x, y = MARGIN, y + 18
        parts.append(_element("rect", {"fill": fill, "height": 12, "width": 12, "x": x, "y": y, **extra}))
        parts.append(_text(name, x + 17, y + 10, size=10))
        x += step
    return "".join(parts), y + 18


def draw_segment_map(state, title: str = "allocator", full_width_bytes: int | None = None,
                     categories=None, highlight: int | None = None, zoom_small_pool: bool = False) -> SVGFigure:
    """The segment map of ``state`` (a ``CachingAllocator`` or its ``snapshot()``); see the module docstring.

    ``title`` may hold several lines (the first is bold).

    ``full_width_bytes``: the bytes a bar of ``BAR_WIDTH`` pixels stands for
    (default: the largest segment); ``categories``: the tags the legend
    lists (default: those of the allocated blocks, in ``CATEGORY_COLOURS`` order);
    ``highlight``: an address whose block gets a thick outline (e.g. the block an event touched);
    ``zoom_small_pool``: draw the small pool on its own scale, a 2 MiB segment
    filling the bar (its heading says how much larger than the large pool).
    """
    snapshot = _snapshot(state)
    figures = segment_figures(snapshot)
    largest_segment = max((s["total_size"] for s in snapshot), default=0)
    full = full_width_bytes or largest_segment or 1
    if full < largest_segment:
        raise ValueError(f"draw_segment_map: full_width_bytes={full} is smaller than the largest segment "
                         f"({largest_segment} B); pass at least that, or None")
    width = LEFT + BAR_WIDTH + MARGIN
    lines = title.splitlines() or [""]
    parts = [HATCH] + [_text(line, MARGIN, 20 + 18 * i, weight="bold" if i == 0 else None, size=13 if i == 0 else 12)
                       for i, line in enumerate(lines)]
    top = 18 * (len(lines) - 1)
    totals = [f"reserved {_bytes(figures['reserved'])}, allocated {_bytes(figures['allocated'])}, "
              f"free {_bytes(figures['free'])} (inactive split {_bytes(figures['inactive_split'])})",
              f"fragmentation {figures['fragmentation']:.3f} = 1 - largest free block "
              f"{_bytes(figures['largest_free_block'])} / free {_bytes(figures['free'])}"]
    parts += [_text(line, MARGIN, top + 38 + 15 * i, size=11) for i, line in enumerate(totals)]
    top += 15
    width = max(width, *(2 * MARGIN + _text_width(line) * 11 / 12 for line in totals),
                *(2 * MARGIN + _text_width(line) * (13 if i == 0 else 12) / 12 for i, line in enumerate(lines)))
    y = top + 52
    if not snapshot:
        parts.append(_text("no segment reserved", MARGIN, y + 16, fill=TEXT_SOFT))
        y += 28
    for pool, pool_title in POOL_TITLES:
        segments = [s for s in snapshot if s["segment_type"] == pool]
        if not segments:
            continue
        heading = f"{pool_title} - {len(segments)} segment{'s' * (len(segments) != 1)}"
        scale = BAR_WIDTH / full
        if pool == "small" and zoom_small_pool:
            zoom = full / max(s["total_size"] for s in segments)
            scale *= zoom
            heading += f", drawn {zoom:g}x larger" if zoom != 1 else ""
        parts.append(_text(heading, MARGIN, y + 14, fill=TEXT, weight="bold", size=11))
        y += 22
        for segment in segments:
            parts.append(_text(f"{_bytes(segment['total_size'])} @{segment['address']:#x}", MARGIN, y + 14,
                               fill=TEXT_SOFT, size=10))
            split = len(segment["blocks"]) > 1
            outline = ""
            for block in segment["blocks"]:
                x = LEFT + (block["address"] - segment["address"]) * scale
                parts.append(_block(block, x, y, block["size"] * scale, split))
                if highlight is not None and block["address"] <= highlight < block["address"] + block["size"]:
                    outline = _element("rect", {"fill": "none", "height": ROW + 4, "stroke": HIGHLIGHT,
                                                "stroke-width": 2,
                                                "width": max(block["size"] * scale, 2) + 4, "x": x - 2, "y": y - 2})
            parts.append(_element("rect", {"fill": "none", "height": ROW, "stroke": "#4b5563", "stroke-width": 1,
                                           "width": segment["total_size"] * scale, "x": LEFT, "y": y}))
            parts.append(outline)
            y += ROW + ROW_GAP
        y += POOL_GAP
    if categories is None:
        present = {b["tag"] if b["tag"] in CATEGORY_COLOURS else "other"
                   for s in snapshot for b in s["blocks"] if b["state"] == "active_allocated"}
        categories = [c for c in CATEGORY_COLOURS if c in present]
    legend, y = _legend(categories, y, width, highlight is not None)
    height = y + MARGIN
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts) + legend, width, height)


def draw_replay_timeline(reserved, allocated, fragmentation, event: int) -> SVGFigure:
    """Reserved (line) and allocated (area) bytes and fragmentation (dashed, 0 to 1) over a replay's events.

    One point per event, spread over ``BAR_WIDTH``; a marker stands at ``event``.
    """
    n = len(reserved)
    if not n == len(allocated) == len(fragmentation) or not 0 <= event < n:
        raise ValueError(f"draw_replay_timeline: three timelines of one length and an event inside them, got "
                         f"lengths {len(reserved)}, {len(allocated)}, {len(fragmentation)} and event {event}")
    top, height = 22, TIMELINE_HEIGHT
    peak = max(reserved) or 1
    step = BAR_WIDTH / max(n - 1, 1)

    def points(values, full):
        return " ".join(f"{_num(LEFT + i * step)},{_num(top + height - v / full * height)}"
                        for i, v in enumerate(values))

    area = f"{_num(LEFT)},{top + height} {points(allocated, peak)} {_num(LEFT + (n - 1) * step)},{top + height}"
    x = LEFT + event * step
    parts = [
        _text("over the trace", MARGIN, top + 10, weight="bold", size=11),
        _text(f"peak reserved {_bytes(peak)}", MARGIN, top + 26, fill=TEXT_SOFT, size=10),
        _element("rect", {"fill": "#f8fafc", "height": height, "stroke": "#cbd5e1", "width": BAR_WIDTH, "x": LEFT,
                          "y": top}),
        _element("polygon", {"fill": "#bfdbfe", "points": area, "stroke": "none"}),
        _element("polyline", {"fill": "none", "points": points(reserved, peak), "stroke": "#1d4ed8",
                              "stroke-width": 1.5}),
        _element("polyline", {"fill": "none", "points": points(fragmentation, 1.0), "stroke": "#b45309",
                              "stroke-dasharray": "4 2", "stroke-width": 1.2}),
        _element("line", {"stroke": HIGHLIGHT, "stroke-width": 1.5, "x1": x, "x2": x, "y1": top - 4,
                          "y2": top + height + 4}),
    ]
    legend = [("#1d4ed8", "reserved"), ("#bfdbfe", "allocated"), ("#b45309", "fragmentation (0 to 1, dashed)"),
              (HIGHLIGHT, f"event {event}")]
    lx = LEFT
    for colour, name in legend:
        parts.append(_element("rect", {"fill": colour, "height": 4, "width": 14, "x": lx, "y": top - 13}))
        parts.append(_text(name, lx + 18, top - 8, size=10))
        lx += 18 + _text_width(name) * 10 / 12 + 16
    figure_height = top + height + 10
    background = _element("rect", {"fill": "#ffffff", "height": figure_height, "width": LEFT + BAR_WIDTH + MARGIN,
                                   "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), LEFT + BAR_WIDTH + MARGIN, figure_height)


class SegmentMap(WidgetFrame):
    """A replayed trace's allocator state after event ``event`` under ``policy``, with a slider and a policy switch.

    ``figure()``, ``state()`` and ``figures()`` work without ipywidgets; the
    default event is 0, the start of the replay. Every policy replays the same trace (a
    trace that runs out of ``capacity`` raises ``AllocatorOutOfMemoryError``
    when its state is asked for).
    """

    def __init__(self, trace, policy: str = "best_fit", event: int | None = None, capacity: int | None = None,
                 policies=("best_fit", "first_fit"), title: str | None = None, zoom_small_pool: bool = False):
        from minigrad.memory.allocator.policies import POLICIES

        self.trace = list(trace)
        if not any(event[0] == "alloc" for event in self.trace):
            raise ValueError(f"SegmentMap: the trace ({len(self.trace)} events) allocates nothing; record one with "
                             "minigrad.memory.record_training_step")
        unknown = [p for p in policies if p not in POLICIES]
        if unknown:
            raise ValueError(f"SegmentMap: unknown policies {unknown}; choose from {sorted(POLICIES)}")
        self.policies, self.capacity, self.title = tuple(policies), capacity, title
        self.zoom_small_pool = bool(zoom_small_pool)
        self.policy, self.event = policies[0], 0
        self.full_width_bytes = self._largest_segment()
        self.categories = self._categories()
        self._descriptions = self._describe_events()
        self._state = lru_cache(maxsize=64)(self._replay_to)
        self._results: dict = {}
        self.set(event=0 if event is None else event, policy=policy)

    @classmethod
    def from_training_step(cls, model: str = "mnist-cnn", batch_size: int = 64, steps: int = 1, **options):
        """Record ``steps`` training steps of ``model`` (see ``record_training_step``) and map them."""
        from minigrad.memory.allocator.trace_recording import MODELS, record_training_step

        trace = record_training_step(model, batch_size, steps)
        options.setdefault("title", f"{MODELS[model][0]}, Adam, batch {batch_size}")
        return cls(trace, **options)

    # ------------------------------------------------------------------ the trace

    def _largest_segment(self) -> int:
        from minigrad.memory.allocator.sizes import round_size, segment_size

        return max(segment_size(round_size(e[2])) for e in self.trace if e[0] == "alloc")

    def _categories(self) -> list[str]:
        tags = {(e[3] if len(e) > 3 else None) for e in self.trace if e[0] == "alloc"}
        tags = {t if t in CATEGORY_COLOURS else "other" for t in tags}
        return [c for c in CATEGORY_COLOURS if c in tags]

    def _describe_events(self) -> list[str]:
        """One line per event; buffers are numbered in the order the trace allocates them (ids may be anything)."""
        alive, lines, allocs = {}, [], 0
        for event in self.trace:
            if event[0] == "alloc":
                alive[event[1]] = (event[2], event[3] if len(event) > 3 else None, allocs)
                allocs += 1
                nbytes, tag, number = alive[event[1]]
                lines.append(f"alloc {_bytes(nbytes)} ({tag or 'untagged'}) as buffer {number}")
            else:
                nbytes, tag, number = alive.pop(event[1], (0, None, "?"))
                lines.append(f"free buffer {number}: {_bytes(nbytes)} ({tag or 'untagged'})")
        return lines

    def _replay_to(self, policy: str, event: int) -> tuple[list[dict], int]:
        """The snapshot after ``event`` and an address inside the block the event allocated or freed."""
        from minigrad.memory.allocator.trace_replay import replay_states

        before: set = set()
        for index, _, allocator in replay_states(self.trace, policy, self.capacity):
            if index == event - 1:
                before = set(allocator.allocated)
            if index == event:
                after = set(allocator.allocated)
                touched = (after - before) or (before - after)  # the new block, or the freed one's address
                return allocator.snapshot(), next(iter(touched))
        raise AssertionError("unreachable: the event index was checked")

    def result(self, policy: str | None = None):
        """The ``ReplayResult`` of the whole trace under ``policy`` (default: the current one)."""
        from minigrad.memory.allocator.trace_replay import replay

        policy = policy or self.policy
        if policy not in self._results:
            self._results[policy] = replay(self.trace, policy, self.capacity)
        return self._results[policy]

    # ------------------------------------------------------------------ the state

    def set(self, event: int | None = None, policy: str | None = None, zoom_small_pool: bool | None = None) -> None:
        """Show the state after ``event`` (0 to len(trace) - 1) under ``policy`` (None keeps a value)."""
        event = self.event if event is None else event
        policy = self.policy if policy is None else policy
        if not isinstance(event, int) or isinstance(event, bool) or not 0 <= event < len(self.trace):
            raise ValueError(f"SegmentMap.set: event must be an int from 0 to {len(self.trace) - 1} "
                             f"(the trace has {len(self.trace)} events), got {event!r}")
        if policy not in self.policies:
            raise ValueError(f"SegmentMap.set: policy must be one of {list(self.policies)}, got {policy!r}")
        self.event, self.policy = event, policy
        if zoom_small_pool is not None:
            self.zoom_small_pool = bool(zoom_small_pool)
        self._redraw()

    def state(self) -> list[dict]:
        """The allocator's ``snapshot()`` after the current event."""
        return self._state(self.policy, self.event)[0]

    def touched_address(self) -> int:
        """An address inside the block the current event allocated (or freed: the free block now holding it)."""
        return self._state(self.policy, self.event)[1]

    def figures(self) -> dict[str, float]:
        """``segment_figures`` of the current state, with the peak reserved bytes of the whole replay."""
        return {**segment_figures(self.state()), "peak_reserved": self.result().peak_reserved}

    def readout(self) -> str:
        f = self.figures()
        return (f"event {self.event}/{len(self.trace) - 1}: {self._descriptions[self.event]} | {self.policy}: "
                f"reserved {_bytes(f['reserved'])} (peak {_bytes(f['peak_reserved'])}), allocated "
                f"{_bytes(f['allocated'])}, fragmentation {f['fragmentation']:.3f}")

    def figure_title(self) -> str:
        head = f"{self.title}\n" if self.title else ""
        return f"{head}{self.policy}, after event {self.event}/{len(self.trace) - 1}: {self._descriptions[self.event]}"

    def map_figure(self) -> SVGFigure:
        """The segment map after the current event, the block it touched outlined."""
        return draw_segment_map(self.state(), self.figure_title(), self.full_width_bytes, self.categories,
                                highlight=self.touched_address(), zoom_small_pool=self.zoom_small_pool)

    def figure(self) -> SVGFigure:
        """The segment map above the replay's timelines, marked at the current event."""
        result = self.result()
        timeline = draw_replay_timeline(result.reserved, result.allocated, result.fragmentation, self.event)
        return stack_figures([self.map_figure(), timeline], gap=0)

    # ------------------------------------------------------------------ the widget

    def _rows(self, widgets) -> list:
        last = len(self.trace) - 1
        self._slider = widgets.IntSlider(value=self.event, min=0, max=last, description="after event",
                                         continuous_update=True, layout=widgets.Layout(width="60%"))
        self._play = widgets.Play(value=self.event, min=0, max=last, interval=150, description="play")
        widgets.jslink((self._play, "value"), (self._slider, "value"))
        self._policy = widgets.ToggleButtons(options=list(self.policies), value=self.policy, description="policy")
        self._zoom = widgets.Checkbox(value=self.zoom_small_pool, description="zoom the small pool", indent=False)
        self._readout = widgets.HTML()
        for control in (self._slider, self._policy, self._zoom):
            control.observe(self._on_change, names="value")
        return [[self._play, self._slider], [self._policy, self._zoom], self._readout, self._picture]

    def _on_change(self, change) -> None:
        if not self._syncing:
            self.set(event=self._slider.value, policy=self._policy.value, zoom_small_pool=self._zoom.value)

    def _refresh(self) -> None:
        with self._moving_controls():
            self._slider.value, self._policy.value, self._zoom.value = self.event, self.policy, self.zoom_small_pool
        self._readout.value = f"<code>{html.escape(self.readout())}</code>"
        super()._refresh()

    def __repr__(self) -> str:
        return f"SegmentMap({len(self.trace)} events, {self.policy}, event {self.event})"
