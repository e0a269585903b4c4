"""One small image batch, two memory layouts: NCHW (channels first) and NHWC (channels last).

A batch of images has four dimensions: N (images), C (channels), H (rows) and
W (columns). Both layouts describe the *same* tensor of shape (N, C, H, W);
they differ only in the order its elements sit in memory, that is, in the
strides:

- NCHW stores each channel as a whole H×W plane, one after the other
  (PyTorch's default): strides ``(C·H·W, H·W, W, 1)``;
- NHWC stores the C channel values of each pixel side by side ("channels
  last", what cuDNN's tensor-core kernels and most image files prefer):
  strides ``(H·W·C, 1, W·C, C)``, still listed in (N, C, H, W) order.

``draw_layouts`` draws the tensor, coloured by channel, and both memory rows;
the positions come from :mod:`minigrad.tensor.strides` (``strides_for_shape``,
``permute_strides``, ``index_to_position``), imported when first needed.

Invariant: byte-deterministic, like every figure of ``minigrad.viz``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from minigrad.viz.graph_svg import (
    LINE_HEIGHT, MARGIN, PALETTE, TEXT, TEXT_SOFT, SVGFigure, _element, _escape, _text, _text_width, draw_legend,
    stack_figures,
)

__all__ = ["LAYOUTS", "layout_strides", "layout_positions", "draw_layouts"]

LAYOUTS = ("NCHW", "NHWC")
CHANNEL_COLOURS = ("red", "green", "blue", "purple", "orange", "yellow")
CELL_H, CELL_FONT, CHAR_W, SMALL_FONT = 24, 11, 6.6, 10
MAX_ELEMENTS = 48
ROW_BUDGET = 860


def _strides_module():
    from minigrad.tensor import strides

    return strides


def _check_shape(shape: Sequence[int]) -> tuple[int, int, int, int]:
    shape = tuple(shape)
    if len(shape) != 4 or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in shape):
        raise ValueError(f"draw_layouts: shape must be four positive ints (N, C, H, W), got {shape!r}")
    if _strides_module().numel(shape) > MAX_ELEMENTS:
        raise ValueError(
            f"draw_layouts: shape {shape} has {_strides_module().numel(shape)} elements; "
            f"keep it to at most {MAX_ELEMENTS} so the picture stays readable, e.g. (1, 3, 2, 3)"
        )
    return shape


def layout_strides(shape: Sequence[int], layout: str = "NCHW") -> tuple[int, ...]:
    """Strides, in (N, C, H, W) order, of a tensor of ``shape`` stored in ``layout`` ("NCHW" or "NHWC")."""
    st = _strides_module()
    n, c, h, w = tuple(shape)
    if layout == "NCHW":
        return st.strides_for_shape((n, c, h, w))
    if layout == "NHWC":  # contiguous (N, H, W, C), then read as (N, C, H, W): dims (0, 3, 1, 2)
        _, strides = st.permute_strides((n, h, w, c), st.strides_for_shape((n, h, w, c)), (0, 3, 1, 2))
        return strides
    raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")


def layout_positions(shape: Sequence[int], layout: str = "NCHW") -> dict[tuple[int, int, int, int], int]:
    """Memory position of every element (n, c, h, w) in ``layout``."""
    st = _strides_module()
    strides = layout_strides(shape, layout)
    return {
        index: st.index_to_position(index, strides)
        for index in itertools.product(*(range(s) for s in shape))
    }


def _label(index: tuple[int, int, int, int], batch: int) -> str:
    n, _, h, w = index
    return f"{n}:{h},{w}" if batch > 1 else f"{h},{w}"


def _cell(x: float, y: float, width: float, colour: str, label: str, tip: str, strong: bool = False) -> str:
    fill, stroke = PALETTE[colour]
    rect = _element("rect", {
        "fill": fill, "height": CELL_H, "stroke": TEXT if strong else stroke, "stroke-width": 2.2 if strong else 1.2,
        "width": width, "x": x, "y": y,
    })
    text = _text(label, x + width / 2, y + CELL_H / 2 + 4, anchor="middle", fill=TEXT, size=CELL_FONT,
                 weight="bold" if strong else None)
    return _element("g", {}, _element("title", {}, _escape(tip)) + rect + text)


def _small(content: str, x: float, y: float, anchor: str = "middle") -> str:
    return _text(content, x, y, anchor=anchor, fill=TEXT_SOFT, size=SMALL_FONT)


def _shape_text(values: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, values)) + ")"


def _tensor_panel(shape, pixel, cell_w: float) -> SVGFigure:
    """The tensor as it is indexed: per image, one H×W plane per channel."""
    n_, c_, h_, w_ = shape
    title = f"the tensor, shape (N, C, H, W) = {_shape_text(shape)}; each cell is labelled " + (
        "n:h,w" if n_ > 1 else "h,w"
    )
    parts = [_text(title, MARGIN, MARGIN + 12, fill=TEXT_SOFT)]
    gap = 18
    x, y = float(MARGIN), MARGIN + LINE_HEIGHT + 6
    right = x
    plane_h = LINE_HEIGHT + h_ * CELL_H
    for n in range(n_):
        for c in range(c_):
            name = f"image {n}, channel {c}" if n_ > 1 else f"channel {c}"
            plane_w = max(w_ * cell_w, _text_width(name) * SMALL_FONT / 12)
            if x > MARGIN and x + plane_w > ROW_BUDGET:
                x, y = float(MARGIN), y + plane_h + 10
            parts.append(_text(name, x, y + 12, fill=TEXT_SOFT, size=SMALL_FONT))
            for h in range(h_):
                for w in range(w_):
                    index = (n, c, h, w)
                    parts.append(_cell(
                        x + w * cell_w, y + LINE_HEIGHT + h * CELL_H, cell_w, CHANNEL_COLOURS[c % len(CHANNEL_COLOURS)],
                        _label(index, n_), f"x[{', '.join(map(str, index))}]", strong=(n, h, w) == pixel,
                    ))
            right = max(right, x + plane_w)
            x += plane_w + gap
    return SVGFigure("".join(parts), right + MARGIN, y + plane_h + 6)


def _memory_panel(shape, layout: str, pixel, cell_w: float) -> SVGFigure:
    """The layout's memory, position by position, each cell coloured by its channel."""
    positions = layout_positions(shape, layout)
    strides = layout_strides(shape, layout)
    by_position = {p: index for index, p in positions.items()}
    n_, c_, h_, w_ = shape
    kind = (
        "channels first: each channel a whole plane" if layout == "NCHW"
        else "channels last: a pixel's channels side by side"
    )
    head = f"{layout} ({kind}): strides in (N, C, H, W) order = {_shape_text(strides)}"
    mine = sorted(p for index, p in positions.items() if (index[0], index[2], index[3]) == pixel)
    note = (
        f"pixel (h, w) = {pixel[1:]}{f' of image {pixel[0]}' if n_ > 1 else ''}: its {c_} channels are at "
        f"positions {', '.join(map(str, mine))} (stride {strides[1]} apart)"
    )
    parts = [
        _text(head, MARGIN, MARGIN + 12, fill=TEXT, weight="bold"),
        _text(note, MARGIN, MARGIN + LINE_HEIGHT + 12, fill=TEXT_SOFT),
    ]
    total = len(positions)
    fit = max(1, int((ROW_BUDGET - 2 * MARGIN) // cell_w))
    per_row = min(total, fit)
    top = MARGIN + 2 * LINE_HEIGHT + 4
    for row_start in range(0, total, per_row):
        for p in range(row_start, min(total, row_start + per_row)):
            index = by_position[p]
            x = MARGIN + (p - row_start) * cell_w
            parts.append(_small(str(p), x + cell_w / 2, top + 10))
            parts.append(_cell(
                x, top + 14, cell_w, CHANNEL_COLOURS[index[1] % len(CHANNEL_COLOURS)], _label(index, n_),
                f"position {p}: x[{', '.join(map(str, index))}] (channel {index[1]})",
                strong=(index[0], index[2], index[3]) == pixel,
            ))
        top += 14 + CELL_H + 6
    width = 2 * MARGIN + max(per_row * cell_w, _text_width(head), _text_width(note))
    return SVGFigure("".join(parts), width, top)


def draw_layouts(shape: Sequence[int] = (1, 3, 2, 3), pixel: Sequence[int] = (0, 0, 1)) -> SVGFigure:
    """The tensor of ``shape`` (N, C, H, W), coloured by channel, and its memory in NCHW and in NHWC.

    ``pixel`` = (n, h, w) is outlined everywhere, to show where one pixel's
    channels lie in each layout: far apart in NCHW, next to each other in NHWC.
    """
    shape = _check_shape(shape)
    pixel = tuple(pixel)
    if len(pixel) != 3 or not all(0 <= p < s for p, s in zip(pixel, (shape[0], shape[2], shape[3]))):
        raise ValueError(f"draw_layouts: pixel must be (n, h, w) inside the shape {shape}, got {pixel!r}")
    cell_w = max(30.0, len(_label(tuple(s - 1 for s in shape), shape[0])) * CHAR_W + 12)
    panels = [
        _tensor_panel(shape, pixel, cell_w),
        _memory_panel(shape, "NCHW", pixel, cell_w),
        _memory_panel(shape, "NHWC", pixel, cell_w),
    ]
    width = max(panel.width for panel in panels)
    legend = draw_legend(
        [(CHANNEL_COLOURS[c % len(CHANNEL_COLOURS)], f"channel {c}") for c in range(shape[1])]
        + [(("#ffffff", TEXT), f"pixel {pixel}")],
        width,
    )
    figure = stack_figures([legend, *panels], gap=6)
    background = _element("rect", {"fill": "#ffffff", "height": figure.height + MARGIN, "width": figure.width,
                                   "x": 0, "y": 0})
    return SVGFigure(background + figure.body, figure.width, figure.height + MARGIN)
