"""Draw a computation graph as a self-contained SVG (no graphviz, no network).

Each value is a rounded box (its label, data and grad); each op is a small
round node between its inputs and its output, as in micrograd's pictures.
The graph is read through duck-typed attributes only (``_children``,
``_local_grads``, ``_op``, ``data``, ``grad``, ``label``), so a learner's own
copy of ``Value`` draws as well as ``minigrad.scalar.Value``.

Invariants
- Byte-deterministic: the same graph gives the same bytes (fixed number
  formatting, sorted attributes, no ids, timestamps or randomness).
- All text is escaped, so labels may contain ``&``, ``<`` or ``>``.
- The figure ends ``MARGIN`` past what is drawn: nothing reserved for an
  edge routed along a side is left empty, so a caption sits right below.
- A node's position depends only on the sizes of all boxes, never on their
  colours; ``min_widths`` lets frames of one animation share those sizes.
- A left-to-right figure is at most ``max_width`` wide (``FIT_WIDTH`` by
  default) unless one layer alone is wider: its layers wrap into the fewest
  rows, the longest as short as that allows, and an edge from one row to the next turns down past
  the row's right end, runs left under it and enters the next row from the left.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Any

from minigrad.viz.graph_layout import layered_layout
from minigrad.viz.svg_png import display_bundle, svg_png

__all__ = [
    "SVGFigure", "draw_graph", "draw_legend", "graph_nodes", "stack_figures", "value_box_width",
    "format_number", "PALETTE", "FIT_WIDTH",
]

FONT_FAMILY = "DejaVu Sans Mono, Menlo, Consolas, monospace"
FONT_SIZE = 12
CHAR_WIDTH = 7.2  # advance of one monospace character at FONT_SIZE
LINE_HEIGHT = 16
BASELINE = 12  # from the top of a text line to its baseline
BOX_PAD_X, BOX_PAD_Y, BOX_RADIUS, BOX_MIN_WIDTH = 10, 6, 6, 64
OP_HEIGHT = 26
LAYER_GAP = 34  # between neighbouring layers: room for the edges
SLOT_GAP = 14  # between neighbouring nodes of one layer
MARGIN = 12
ARROW_LENGTH, ARROW_HALF_WIDTH = 7, 3.5
EDGE_WIDTH = 1.3
COUNT_SIZE = 10  # font size of the ×n mark on an edge
FIT_WIDTH = 900
"""Default ``max_width`` of a left-to-right graph: JupyterLab's output area in a 1,400 px window is about 968 px
wide, so a figure this wide is shown unscaled there, its text at ``FONT_SIZE`` px."""
ROW_GAP = LAYER_GAP  # between the rows of a wrapped graph: room for the edges that go on to the next row
TURN = LAYER_GAP / 2  # beside a wrapped row: room for the edges turning down from it or into it
TURN_SPACING, TURN_RADIUS = 6, 6  # between neighbouring turning edges; their corners' radius
SWATCH_WIDTH, SWATCH_HEIGHT, SWATCH_GAP, LEGEND_GAP = 18, 12, 6, 18

TEXT, TEXT_SOFT, EDGE = "#1f2937", "#4b5563", "#98a2b3"
LEAF_STYLE = ("#f1f6fd", "#9db4d6")  # (fill, stroke)
VALUE_STYLE = ("#ffffff", "#b8c1cc")
ROOT_STYLE = ("#ffffff", "#4a6fa5")
OP_STYLE = ("#f4f4f5", "#a1a1aa")
OP_TEXT = "#3f3f46"

PALETTE: dict[str, tuple[str, str]] = {
    "yellow": ("#fff4c2", "#d4a017"),
    "orange": ("#ffe4cc", "#e07b1a"),
    "green": ("#dcf2e2", "#3f9e5a"),
    "blue": ("#e0ecfb", "#3b7dd8"),
    "red": ("#fde2e2", "#d64545"),
    "purple": ("#ece4fa", "#8a5cc7"),
    "grey": ("#eceff3", "#8a94a3"),
    "gray": ("#eceff3", "#8a94a3"),
}
"""Highlight colour names and their soft (fill, stroke) pair; other names are used as CSS colours."""


# --------------------------------------------------------------------- figure

FIT_TO_WIDTH = "max-width: 100%; height: auto"
"""Style of every figure's ``<svg>``: shrink to the available width, keeping the aspect ratio."""


class SVGFigure:
    """An SVG picture: ``.svg`` is the markup.

    Jupyter gets the picture as PNG when it can be rendered here (``svg_png``;
    see :mod:`minigrad.viz.svg_png` for why not the SVG), else the SVG.
    Either way it is shown at its natural size and shrunk to the output width:
    the PNG by the front end, the SVG by its own style (``max-width: 100%``
    with the ``viewBox``, height following; an inline ``<svg>`` in a widget,
    in a static HTML page or in an output without PNG). Never scaled up.
    """

    def __init__(self, body: str, width: float, height: float):
        self.body = body  # the markup inside <svg>, reused by stack_figures
        self.width = width
        self.height = height

    @property
    def svg(self) -> str:
        attrs = {
            "font-family": FONT_FAMILY,
            "font-size": FONT_SIZE,
            "height": self.height,
            "style": FIT_TO_WIDTH,
            "viewBox": f"0 0 {_num(self.width)} {_num(self.height)}",
            "width": self.width,
            "xmlns": "http://www.w3.org/2000/svg",
        }
        return _element("svg", attrs, self.body) + "\n"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return display_bundle(self.svg, self.width, self.height)

    def scaled(self, factor: float) -> "SVGFigure":
        """The same drawing ``factor`` times as large (text included): for a projector, ``scaled(1.5)``.

        A new figure; this one is unchanged. Its natural size grows, so where
        the output is narrower it is still shrunk to fit. ``scaled(1)`` draws
        the same SVG.
        """
        if isinstance(factor, bool) or not isinstance(factor, Real) or not math.isfinite(factor) or factor <= 0:
            raise ValueError(f"SVGFigure.scaled: factor must be a positive finite number, got {factor!r}; "
                             f"1.5 draws the figure half as large again")
        if factor == 1:
            return SVGFigure(self.body, self.width, self.height)
        body = _element("g", {"transform": f"scale({float(factor):g})"}, self.body)
        return SVGFigure(body, self.width * factor, self.height * factor)

    def png(self) -> bytes | None:
        """The figure as PNG bytes (None when no rasterizer is installed)."""
        return svg_png(self.svg)

    def save(self, path) -> Path:
        """Write the SVG (UTF-8) to ``path`` and return it as a Path."""
        path = Path(path)
        path.write_bytes(self.svg.encode("utf-8"))
        return path

    def __repr__(self) -> str:
        return f"SVGFigure(width={_num(self.width)}, height={_num(self.height)})"


def stack_figures(figures: Sequence[SVGFigure], gap: float = 8) -> SVGFigure:
    """One figure with ``figures`` placed top to bottom, left-aligned."""
    parts, y, width = [], 0.0, 0.0
    for i, figure in enumerate(figures):
        if i:
            y += gap
        parts.append(_element("g", {"transform": f"translate(0 {_num(y)})"}, figure.body))
        y += figure.height
        width = max(width, figure.width)
    background = _element("rect", {"fill": "#ffffff", "height": y, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, y)


# ------------------------------------------------------------------ the graph


def graph_nodes(root: Any, max_nodes: int | None = None, who: str = "draw_graph") -> list[Any]:
    """Every node reachable from ``root`` through ``_children``, each after its children.

    Iterative depth-first search that visits children in their stored order;
    nodes are told apart by identity, so a Value class with a custom ``__eq__``
    or ``__hash__`` works too. Raises ValueError beyond ``max_nodes`` nodes.
    """
    if not hasattr(root, "data"):
        raise TypeError(
            f"{who}: expected a Value (something with .data and ._children), got "
            f"{type(root).__name__}; for a list of outputs, draw one of them (or their sum)"
        )
    order: list[Any] = []
    seen: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in reversed(tuple(_children(node))):
            if id(child) not in seen:
                stack.append((child, False))
    if max_nodes is not None and len(order) > max_nodes:
        raise ValueError(
            f"{who}: this graph has {len(order)} values, more than max_nodes={max_nodes}; "
            f"a picture that big is unreadable. Draw a smaller example (one neuron, or a "
            f"tiny MLP on a single input), or pass a larger max_nodes if you really want it."
        )
    return order


def format_number(x: Any) -> str:
    """Numbers as ``:.4g`` (with -0 shown as 0); anything else as short text."""
    if isinstance(x, Real) and not isinstance(x, bool):
        x = float(x)
        return format(0.0 if x == 0 else x, ".4g")
    text = str(x)
    return text if len(text) <= 24 else text[:23] + "…"


def default_description(node: Any) -> list[str]:
    """The label (if any), then ``data = ...`` and ``grad = ...``."""
    label = _label(node)
    lines = [label] if label else []
    lines.append(f"data = {format_number(node.data)}")
    lines.append(f"grad = {format_number(getattr(node, 'grad', None))}")
    return lines


def draw_graph(
    root: Any,
    *,
    describe: Callable[[Any], list[str]] | None = None,
    highlight: Mapping[Any, str] | Iterable[tuple[Any, str]] | None = None,
    highlight_ops: Mapping[Any, str] | Iterable[tuple[Any, str]] | None = None,
    rankdir: str = "LR",
    max_nodes: int = 400,
    caption: str | Sequence[str] | None = None,
    min_widths: Mapping[Any, float] | Iterable[tuple[Any, float]] | None = None,
    max_width: float | None = FIT_WIDTH,
) -> SVGFigure:
    """Draw the graph that computed ``root``.

    ``describe(node)`` gives the lines of text in a value's box (default: label,
    data, grad); a line equal to the node's label is drawn bold. ``highlight``
    maps nodes to colour names (keys of ``PALETTE``, or CSS colours); the op
    node that computed a value takes the value's colour unless ``highlight_ops``
    is given, which then maps values to the colour of their op. ``rankdir`` is ``"LR"``
    (inputs left, output right) or ``"TB"`` (inputs top, output bottom).
    ``caption`` adds lines of text under the graph. ``min_widths`` maps values
    to the least width of their box: frames of an animation that pass the
    widest box each value ever needs get identical geometry. A left-to-right
    graph wider than ``max_width`` wraps into rows (None: one row, however wide).
    """
    if rankdir not in ("LR", "TB"):
        raise ValueError(f"draw_graph: rankdir must be 'LR' or 'TB', got {rankdir!r}")
    nodes = graph_nodes(root, max_nodes)
    colours = _colour_by_node_id(highlight)
    op_colours = colours if highlight_ops is None else _colour_by_node_id(highlight_ops)
    widths = _by_node_id(min_widths, float)
    shapes = _make_shapes(nodes, describe or default_description, colours, op_colours, widths)
    layout = layered_layout(shapes, lambda shape: shape.children)
    horizontal = rankdir == "LR"
    body, width, height = _render(shapes, layout, horizontal, max_width if horizontal else None)

    if caption is not None:
        lines = caption.splitlines() if isinstance(caption, str) else [str(c) for c in caption]
        texts = [
            _text(line, MARGIN, height + i * LINE_HEIGHT + BASELINE, fill=TEXT_SOFT)
            for i, line in enumerate(lines)
        ]
        body += "".join(texts)
        width = max(width, 2 * MARGIN + max((_text_width(s) for s in lines), default=0))
        height += len(lines) * LINE_HEIGHT + MARGIN
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + body, width, height)


# ------------------------------------------------------------------ shapes


@dataclass(eq=False)
class _Shape:
    """A box for a value or a pill for an op, with the size its text needs."""

    kind: str  # "value" or "op"
    node: Any
    lines: list[str]
    bold_line: str | None
    width: float
    height: float
    style: tuple[str, str]
    stroke_width: float = 1.0
    children: list[_Shape] = field(default_factory=list)
    multiplicity: dict[int, int] = field(default_factory=dict)  # id(child shape) -> times listed


def value_box_width(lines: Sequence[str]) -> float:
    """The width of a value box holding ``lines``: the widest line plus padding."""
    return max(BOX_MIN_WIDTH, 2 * BOX_PAD_X + max((_text_width(str(s)) for s in lines), default=0))


def _make_shapes(nodes: list[Any], describe, colours: dict, op_colours: dict, min_widths: dict) -> list[_Shape]:
    """Shapes in children-first order: each op directly before the value it computes."""
    shapes: list[_Shape] = []
    value_shape: dict[int, _Shape] = {}
    root = nodes[-1]
    for node in nodes:
        kids = tuple(_children(node))
        colour = colours.get(id(node))
        if kids:
            op_text = str(getattr(node, "_op", "") or "?")
            op = _Shape(
                "op", node, [op_text], None,
                width=max(OP_HEIGHT, _text_width(op_text) + 14), height=OP_HEIGHT,
                style=op_colours.get(id(node)) or OP_STYLE,
            )
            for kid in kids:
                kid_shape = value_shape[id(kid)]
                if id(kid_shape) in op.multiplicity:
                    op.multiplicity[id(kid_shape)] += 1
                else:
                    op.multiplicity[id(kid_shape)] = 1
                    op.children.append(kid_shape)
            shapes.append(op)
        lines = [str(line) for line in describe(node)]
        label = _label(node)
        style = colour or (ROOT_STYLE if node is root else VALUE_STYLE if kids else LEAF_STYLE)
        value = _Shape(
            "value", node, lines, label or None,
            width=max(value_box_width(lines), min_widths.get(id(node), 0.0)),
            height=2 * BOX_PAD_Y + LINE_HEIGHT * max(1, len(lines)),
            style=style,
            stroke_width=2.0 if node is root or colour else 1.0,
            children=[op] if kids else [],
        )
        value_shape[id(node)] = value
        shapes.append(value)
    return shapes


def _colour_by_node_id(highlight) -> dict[int, tuple[str, str]]:
    return _by_node_id(highlight, _colour)


def _by_node_id(pairs, convert) -> dict[int, Any]:
    """``{id(node): convert(value)}`` from a mapping or from (node, value) pairs."""
    if not pairs:
        return {}
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return {id(node): convert(value) for node, value in items}


def _colour(name: Any) -> tuple[str, str]:
    """(fill, stroke) for a ``PALETTE`` name or a CSS colour; a (fill, stroke) pair as is."""
    if isinstance(name, tuple) and len(name) == 2:
        return (_colour(name[0])[0], _colour(name[1])[0])
    name = str(name)
    if name in PALETTE:
        return PALETTE[name]
    if name and all(c.isalnum() or c in "#(),.% " for c in name):
        return (name, TEXT_SOFT)
    raise ValueError(f"draw_graph: colour {name!r} is not a colour name (a PALETTE key or a CSS colour)")


# ------------------------------------------------------------------ legend


def draw_legend(entries: Sequence[tuple[Any, str]], max_width: float = 0) -> SVGFigure:
    """A key of colour swatches: ``entries`` are (colour, text) pairs.

    A colour is a ``PALETTE`` name, a CSS colour or a (fill, stroke) pair.
    Entries flow left to right and wrap to stay within ``max_width`` (when
    given); the strip has no bottom margin, so a graph stacked under it with
    ``gap=0`` keeps its own ``MARGIN`` as the space between them.
    """
    parts, rows, x, width = [], 0, float(MARGIN), 0.0
    for colour, text in entries:
        fill, stroke = _colour(colour)
        needed = SWATCH_WIDTH + SWATCH_GAP + _text_width(str(text))
        if max_width and x > MARGIN and x + needed > max_width - MARGIN:
            rows, x = rows + 1, float(MARGIN)
        top = MARGIN + rows * LINE_HEIGHT
        parts.append(_element("rect", {
            "fill": fill, "height": SWATCH_HEIGHT, "rx": 3, "stroke": stroke, "stroke-width": 1.5,
            "width": SWATCH_WIDTH, "x": x, "y": top + (LINE_HEIGHT - SWATCH_HEIGHT) / 2,
        }))
        parts.append(_text(str(text), x + SWATCH_WIDTH + SWATCH_GAP, top + BASELINE, fill=TEXT_SOFT))
        width = max(width, x + needed + MARGIN)
        x += needed + LEGEND_GAP
    height = MARGIN + (rows + 1) * LINE_HEIGHT if parts else 0.0
    width = max(width, max_width)
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, height)


# ------------------------------------------------------------------ geometry


def _render(shapes: list[_Shape], layout, horizontal: bool, max_width: float | None = None) -> tuple[str, float, float]:
    """SVG markup for edges, then ops, then values; returns (body, width, height).

    Geometry is computed along the flow (``a``) and across it (``c``), and
    turned into (x, y) only when written, so "LR" and "TB" share all the code.
    A horizontal graph longer than ``max_width`` is handed to ``_wrap``.
    """

    def along_size(shape):
        return shape.width if horizontal else shape.height

    def across_size(shape):
        return shape.height if horizontal else shape.width

    extent = [0.0] * layout.num_layers
    for shape, layer in zip(shapes, layout.layer_of):
        extent[layer] = max(extent[layer], along_size(shape))
    layer_start, a = [], float(MARGIN)
    for size in extent:
        layer_start.append(a)
        a += size + LAYER_GAP
    layer_end = [start + size for start, size in zip(layer_start, extent)]
    total_along = layer_end[-1] + MARGIN if extent else 2.0 * MARGIN
    bands = _bands(extent, max_width - 2 * (MARGIN + TURN)) if max_width and total_along > max_width else []

    thickest = max(across_size(shape) for shape in shapes)
    pitch = thickest + SLOT_GAP
    shift = 0.0  # set below, once the drawn extent across the flow is known

    def across(slot):
        return MARGIN + thickest / 2 + slot * pitch

    def centre(i):
        layer = layout.layer_of[i]
        return (layer_start[layer] + layer_end[layer]) / 2, across(layout.slot_of[i])

    def xy(a, c):
        return (a, c - shift) if horizontal else (c - shift, a)

    edges_into: dict[int, list] = {}
    for edge in layout.edges:
        edges_into.setdefault(edge.parent, []).append(edge)

    routes = []  # (points, tip, times) of every edge
    for parent in sorted(edges_into):
        target = shapes[parent]
        target_a, target_c = centre(parent)
        incoming = []
        for edge in edges_into[parent]:
            child_a, child_c = centre(edge.child)
            points = [(child_a + along_size(shapes[edge.child]) / 2, child_c)]
            for layer, slot in edge.bends:
                points += [(layer_start[layer], across(slot)), (layer_end[layer], across(slot))]
            incoming.append((points[-1][1], edge.child, points))
        incoming.sort(key=lambda item: (item[0], item[1]))
        offsets = _port_offsets(len(incoming), across_size(target))
        for (_, child, points), offset in zip(incoming, offsets):
            half_a, half_c = along_size(target) / 2, across_size(target) / 2
            radius = min(target.width, target.height) / 2 if target.kind == "op" else BOX_RADIUS
            tip = (target_a - _reach(half_a, half_c, radius, offset), target_c + offset)
            times = target.multiplicity.get(id(shapes[child]), 1)
            routes.append((points, tip, times))

    if len(bands) > 1:
        return _wrap(shapes, layout, routes, bands, layer_start, layer_end, centre, across_size)

    # What is drawn across the flow: boxes, edges (their curves stay between
    # their points) and the ×n marks. Rows kept free for an edge routed along
    # a side are trimmed away by shifting everything by ``shift``.
    spans = []
    for i, shape in enumerate(shapes):
        c, half = centre(i)[1], across_size(shape) / 2
        spans.append((c - half, c + half))
    for points, tip, times in routes:
        spans += [(c - EDGE_WIDTH / 2, c + EDGE_WIDTH / 2) for _, c in points]
        if times > 1:
            spans.append(_count_span(tip[1], times, horizontal))
    low, high = math.floor(min(lo for lo, _ in spans)), math.ceil(max(hi for _, hi in spans))
    shift = low - MARGIN
    total_across = high - low + 2 * MARGIN
    edge_parts = [_edge(points, tip, xy, times) for points, tip, times in routes]

    shape_parts = []
    for kind in ("op", "value"):  # values on top of ops, ops on top of edges
        for i, shape in enumerate(shapes):
            if shape.kind == kind:
                x, y = xy(*centre(i))
                shape_parts.append(_op_node(shape, x, y) if kind == "op" else _value_box(shape, x, y))

    width, height = (total_along, total_across) if horizontal else (total_across, total_along)
    return "".join(edge_parts) + "".join(shape_parts), width, height


def _bands(extent: list[float], room: float) -> list[list[int]]:
    """Layers cut into the fewest runs of at most ``room`` (a wider layer alone), the longest as short as that allows."""

    def cut(limit: float) -> list[list[int]]:
        bands: list[list[int]] = []
        length = 0.0
        for layer, size in enumerate(extent):
            if bands and length + LAYER_GAP + size <= limit:
                bands[-1].append(layer)
                length += LAYER_GAP + size
            else:
                bands.append([layer])
                length = size
        return bands

    fewest = len(cut(room))
    low, high = max(extent), max(room, max(extent))
    for _ in range(40):  # bisect for the shortest limit that needs no more rows
        middle = (low + high) / 2
        low, high = (middle, high) if len(cut(middle)) > fewest else (low, middle)
    return cut(high)


def _wrap(shapes, layout, routes, bands, layer_start, layer_end, centre, across_size) -> tuple[str, float, float]:
    """``_render`` for a horizontal graph cut into rows (``bands`` of layers): returns (body, width, height).

    Row ``b`` is moved left by ``shift_a[b]`` and down to ``row_top[b]``; each
    row keeps only the height of what it draws. An edge between neighbouring
    rows turns at ``TURN`` past the right end of its row, runs along the gap
    below it and turns in ``TURN`` before the next row's first layer.
    """
    band_of_layer = {layer: b for b, band in enumerate(bands) for layer in band}
    band_start = [layer_start[band[0]] for band in bands]
    shift_a = [start - (MARGIN + TURN) for start in band_start]

    def band_of(a: float) -> int:
        return max(b for b, start in enumerate(band_start) if b == 0 or a >= start - LAYER_GAP / 2)

    low = [math.inf] * len(bands)
    high = [-math.inf] * len(bands)

    def reach(b: int, lo: float, hi: float) -> None:
        low[b], high[b] = min(low[b], lo), max(high[b], hi)

    for i, shape in enumerate(shapes):
        c, half = centre(i)[1], across_size(shape) / 2
        reach(band_of_layer[layout.layer_of[i]], c - half, c + half)
    for points, tip, times in routes:
        for a, c in points:
            reach(band_of(a), c - EDGE_WIDTH / 2, c + EDGE_WIDTH / 2)
        if times > 1:
            reach(band_of(tip[0]), *_count_span(tip[1], times, True))
    row_top = [float(MARGIN)]
    for b in range(1, len(bands)):
        row_top.append(row_top[-1] + math.ceil(high[b - 1]) - math.floor(low[b - 1]) + ROW_GAP)

    def xy_in(b: int):
        return lambda a, c: (a - shift_a[b], c - math.floor(low[b]) + row_top[b])

    mapped = []  # every edge in (x, y), with the band of each point of its route
    for points, tip, times in routes:
        base = (tip[0] - ARROW_LENGTH, tip[1])
        route_bands = [band_of(a) for a, _ in points] + [band_of(base[0])]
        xy_points = [xy_in(b)(*p) for b, p in zip(route_bands, points)]
        mapped.append((xy_points, xy_in(route_bands[-1])(*tip), times, route_bands))

    turns: dict[int, list] = {}  # band -> the (edge, junction) pairs that leave it for the next row
    for e, (xy_points, tip, _, route_bands) in enumerate(mapped):
        for k in range(1, len(route_bands)):
            if route_bands[k] != route_bands[k - 1]:
                turns.setdefault(route_bands[k - 1], []).append((e, k))
    ends = [layer_end[band[-1]] - shift_a[b] for b, band in enumerate(bands)]
    loops: dict[int, dict[int, tuple[float, float, float]]] = {}
    for b, leaving in turns.items():
        spacing = min(TURN_SPACING, (TURN - 4) / max(1, len(leaving) - 1))
        gap_middle = row_top[b] + math.ceil(high[b]) - math.floor(low[b]) + ROW_GAP / 2
        for n, (e, k) in enumerate(sorted(leaving)):
            gutter = gap_middle + (n - (len(leaving) - 1) / 2) * spacing
            loops.setdefault(e, {})[k] = (ends[b] + TURN - n * spacing, gutter, MARGIN + n * spacing)

    edge_parts = [
        _edge(xy_points, tip, lambda a, c: (a, c), times, loops.get(e, {}))
        for e, (xy_points, tip, times, _) in enumerate(mapped)
    ]
    shape_parts = []
    for kind in ("op", "value"):
        for i, shape in enumerate(shapes):
            if shape.kind == kind:
                x, y = xy_in(band_of_layer[layout.layer_of[i]])(*centre(i))
                shape_parts.append(_op_node(shape, x, y) if kind == "op" else _value_box(shape, x, y))
    width = max(end + (TURN if b in turns else 0) for b, end in enumerate(ends)) + MARGIN
    height = row_top[-1] + math.ceil(high[-1]) - math.floor(low[-1]) + MARGIN
    return "".join(edge_parts) + "".join(shape_parts), width, height


def _rounded_path(corners: list[tuple[float, float]]) -> list[str]:
    """Path commands along straight lines from ``corners[0]`` (already reached) to ``corners[-1]``, corners rounded."""
    commands = []
    for (x0, y0), (x1, y1), (x2, y2) in zip(corners, corners[1:], corners[2:]):
        radius = min(TURN_RADIUS, math.dist((x0, y0), (x1, y1)) / 2, math.dist((x1, y1), (x2, y2)) / 2)
        into = _toward((x1, y1), (x0, y0), radius)
        out = _toward((x1, y1), (x2, y2), radius)
        commands.append("L {} {}".format(*map(_num, into)))
        commands.append("C " + " ".join(_num(v) for v in (x1, y1, x1, y1, *out)))
    commands.append("L {} {}".format(*map(_num, corners[-1])))
    return commands


def _toward(start: tuple[float, float], end: tuple[float, float], distance: float) -> tuple[float, float]:
    length = math.dist(start, end)
    if not length:
        return start
    return (start[0] + (end[0] - start[0]) * distance / length, start[1] + (end[1] - start[1]) * distance / length)


def _count_span(tip_across: float, times: int, horizontal: bool) -> tuple[float, float]:
    """Where the ``×n`` mark next to an arrow at ``tip_across`` lies across the flow (see ``_edge``)."""
    if horizontal:  # above the arrow, baseline 4 px above it
        return tip_across - 4 - COUNT_SIZE, tip_across
    start = tip_across + 5  # right of the arrow
    return start, start + _text_width(f"×{times}") * COUNT_SIZE / FONT_SIZE


def _port_offsets(count: int, across: float) -> list[float]:
    """Where ``count`` arrows meet a side of length ``across``: spread, centred on 0."""
    if count <= 1:
        return [0.0] * count
    step = min(8.0, 0.6 * across / (count - 1))
    return [(k - (count - 1) / 2) * step for k in range(count)]


def _reach(half_along: float, half_across: float, radius: float, offset: float) -> float:
    """Distance from a rounded rectangle's centre to its border, along the flow, at ``offset`` across."""
    straight = half_across - radius
    if abs(offset) <= straight:
        return half_along
    into_corner = min(abs(offset) - straight, radius)
    return half_along - radius + (radius * radius - into_corner * into_corner) ** 0.5


def _edge(points, tip, xy, times: int, loops: Mapping[int, tuple[float, float, float]] | None = None) -> str:
    """A smooth path through ``points`` to an arrowhead at ``tip``.

    Consecutive points are joined by S-curves leaving and arriving along the
    flow; pairs of points that cross a dummy's layer are joined straight.
    ``loops[k] = (right, gutter, left)`` (points in (x, y), left to right)
    joins points ``k - 1`` and ``k`` of a wrapped graph through those lines instead.
    """
    base = (tip[0] - ARROW_LENGTH, tip[1])
    route = points + [base]
    commands = ["M {} {}".format(*map(_num, xy(*route[0])))]
    for k in range(1, len(route)):
        (a0, c0), (a1, c1) = route[k - 1], route[k]
        if loops and k in loops:
            right, gutter, left = loops[k]
            commands += _rounded_path([(a0, c0), (right, c0), (right, gutter), (left, gutter), (left, c1), (a1, c1)])
            continue
        if k % 2 == 0 and k < len(route) - 1:  # inside a dummy's layer
            commands.append("L {} {}".format(*map(_num, xy(a1, c1))))
            continue
        half = (a1 - a0) / 2
        coords = [*xy(a0 + half, c0), *xy(a1 - half, c1), *xy(a1, c1)]
        commands.append("C " + " ".join(_num(v) for v in coords))
    path = _element("path", {"d": " ".join(commands), "fill": "none", "stroke": EDGE, "stroke-width": EDGE_WIDTH})
    corners = [tip, (base[0], base[1] - ARROW_HALF_WIDTH), (base[0], base[1] + ARROW_HALF_WIDTH)]
    arrow = _element(
        "polygon", {"fill": EDGE, "points": " ".join(f"{_num(x)},{_num(y)}" for x, y in (xy(*p) for p in corners))}
    )
    if times == 1:
        return path + arrow
    horizontal = xy(0, 1) == (0, 1)
    beside_arrow = (base[0] - 2, base[1] + (-4 if horizontal else 5))  # above it in LR, right of it in TB
    label = _text(
        f"×{times}", *xy(*beside_arrow), anchor="end" if horizontal else "start", fill=TEXT_SOFT, size=COUNT_SIZE
    )
    return path + arrow + label


def _op_node(shape: _Shape, x: float, y: float) -> str:
    fill, stroke = shape.style
    pill = _element(
        "rect",
        {
            "fill": fill, "height": shape.height, "rx": shape.height / 2, "stroke": stroke,
            "stroke-width": 1.2, "width": shape.width, "x": x - shape.width / 2, "y": y - shape.height / 2,
        },
    )
    label = _text(shape.lines[0], x, y + 4, anchor="middle", fill=OP_TEXT, weight="bold")
    return _element("g", {}, pill + label)


def _value_box(shape: _Shape, x: float, y: float) -> str:
    fill, stroke = shape.style
    left, top = x - shape.width / 2, y - shape.height / 2
    box = _element(
        "rect",
        {
            "fill": fill, "height": shape.height, "rx": BOX_RADIUS, "stroke": stroke,
            "stroke-width": shape.stroke_width, "width": shape.width, "x": left, "y": top,
        },
    )
    texts = []
    for i, line in enumerate(shape.lines):
        bold = shape.bold_line is not None and line == shape.bold_line
        baseline = top + BOX_PAD_Y + i * LINE_HEIGHT + BASELINE
        texts.append(
            _text(line, left + BOX_PAD_X, baseline, fill=TEXT if bold else TEXT_SOFT, weight="bold" if bold else None)
        )
    return _element("g", {}, _tooltip(shape.node) + box + "".join(texts))


def _tooltip(node: Any) -> str:
    """Full-precision data and grad, shown on hover; empty for non-numbers."""
    data, grad = node.data, getattr(node, "grad", None)
    if not isinstance(data, Real) or not isinstance(grad, Real):
        return ""
    name = _label(node)
    return _element("title", {}, _escape(f"{name + ': ' if name else ''}data={data!r} grad={grad!r}"))


# ------------------------------------------------------------------ markup


def _text(content: str, x: float, y: float, *, anchor=None, fill=TEXT, weight=None, size=None) -> str:
    attrs = {"fill": fill, "x": x, "y": y, "xml:space": "preserve"}
    if anchor:
        attrs["text-anchor"] = anchor
    if weight:
        attrs["font-weight"] = weight
    if size:
        attrs["font-size"] = size
    return _element("text", attrs, _escape(content))


def _element(tag: str, attrs: dict[str, Any], content: str | None = None) -> str:
    """``<tag a="..." b="...">content</tag>`` with attributes sorted by name."""
    rendered = "".join(f' {key}="{_attribute(value)}"' for key, value in sorted(attrs.items()))
    return f"<{tag}{rendered}/>" if content is None else f"<{tag}{rendered}>{content}</{tag}>"


def _attribute(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _num(value)
    return _escape(str(value)).replace('"', "&quot;")


def _num(value: float) -> str:
    """One decimal at most: ``12``, ``12.5``, never ``-0``."""
    text = f"{value:.1f}".removesuffix(".0")
    return "0" if text == "-0" else text


def _escape(text: str) -> str:
    """Escape ``&``, ``<``, ``>`` and drop characters XML 1.0 forbids."""
    text = "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else "?" for c in text)
    text = "".join(c for c in text if not 0xD800 <= ord(c) <= 0xDFFF and c not in "\ufffe\uffff")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _text_width(text: str) -> float:
    """Width in pixels of ``text`` in the monospace font; wide (East Asian) characters count twice."""
    return CHAR_WIDTH * sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _children(node: Any) -> Iterable[Any]:
    return getattr(node, "_children", ()) or ()


def _label(node: Any) -> str:
    return str(getattr(node, "label", "") or "")
