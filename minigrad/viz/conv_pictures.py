"""Pictures for chapter 06: why a convolution is one matrix product, and what a trained CNN sees.

``draw_im2col`` draws the im2col picture for a small single-channel input:

1. one small copy of the (padded) input per output pixel, with the cells under
   the kernel at that pixel filled in the pixel's colour ("the window slides");
2. the column matrix: one row per output pixel, in the same colour, holding
   the input cells its window read, in the kernel's tap order (i, j);
3. the filter written as one row of taps above the matrix, so each output is
   the dot product of its row with the filter: ``out = cols @ w``, a column
   that reshapes to the ``Ho x Wo`` output grid drawn on the right.

Every input cell is labelled with its position ``h*W + w`` in the input, so
one number can be followed from the input into every row that copied it.
The index matrix comes from the library's own ``im2col``
(:func:`im2col_indices`), run on an input whose cells hold their own
positions, so the picture shows exactly what the library computes.

``plot_filters`` draws a layer's kernels as a grid of small images, and
``feature_maps`` / ``plot_feature_maps`` run one image through a
``Sequential`` and show the channels after each layer.

Invariants
- ``draw_im2col`` is byte-deterministic: the same arguments give the same bytes.
- Like the rest of ``minigrad.viz``, this module imports no stage at module
  level: the library's ``im2col`` and ``no_grad`` are imported when first needed.
- The matplotlib figures are made with ``matplotlib.figure.Figure`` (no
  pyplot state) and show as PNG under IPython (``show_figures_as_png``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minigrad.viz.figure_display import show_figures_as_png
from minigrad.viz.graph_svg import (
    LINE_HEIGHT, MARGIN, TEXT, TEXT_SOFT, SVGFigure, _element, _escape, _text, _text_width, stack_figures,
)

__all__ = [
    "WINDOW_COLOURS", "conv_geometry", "im2col_indices", "draw_im2col",
    "plot_filters", "feature_maps", "plot_feature_maps",
]

WINDOW_COLOURS: tuple[tuple[str, str], ...] = (
    ("#fde2e2", "#d64545"), ("#dcf2e2", "#3f9e5a"), ("#e0ecfb", "#3b7dd8"), ("#ffe4cc", "#e07b1a"),
    ("#ece4fa", "#8a5cc7"), ("#fff4c2", "#d4a017"), ("#d9f3f3", "#2b9a9a"), ("#fbe0f0", "#c0468f"),
    ("#e6efd0", "#6b8e23"), ("#e3e5f7", "#5560b8"), ("#f6e3d6", "#a0522d"), ("#dff0fa", "#1f8ac0"),
    ("#f9e8c9", "#b7791f"), ("#eadcf0", "#7e3f98"), ("#d8efe6", "#2e8b6a"), ("#f5dede", "#a33a3a"),
)
"""(fill, stroke) of each output pixel's window, in row-major output order."""

PADDING_STYLE = ("#f1f2f4", "#b8bec8")
PLAIN_STYLE = ("#ffffff", "#c9ced6")
FILTER_STYLE = ("#f4f4f5", "#71717a")
CELL, SMALL_CELL, CELL_FONT, SMALL_FONT = 28, 20, 11, 9
PAD_LABEL = "·"  # a padding cell (zero): not "0", which is the label of input cell 0
OUT_W = 44  # width of an output cell: room for its "oh,ow" label
PANEL_GAP, ROW_BUDGET = 16, 900
MAX_SIDE, MAX_OUTPUTS, MAX_TAPS = 9, 16, 25


def _pair(value, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pair):
        raise ValueError(f"draw_im2col: {name} must be an int or a pair of ints, got {value!r}")
    return int(pair[0]), int(pair[1])


def conv_geometry(input_size=4, kernel_size=3, stride=1, padding=0, dilation=1) -> dict[str, tuple[int, int]]:
    """Sizes of a single-channel convolution, each a (height, width) pair.

    Keys: ``input``, ``kernel``, ``stride``, ``padding``, ``dilation``,
    ``padded`` (input plus padding) and ``output``, from PyTorch's formula
    ``(size + 2*padding - dilation*(kernel - 1) - 1) // stride + 1``.
    Raises ValueError for a non-positive size or an empty output.
    """
    g = {name: _pair(v, name) for name, v in (("input", input_size), ("kernel", kernel_size), ("stride", stride),
                                               ("padding", padding), ("dilation", dilation))}
    if min(g["input"] + g["kernel"] + g["stride"] + g["dilation"]) < 1 or min(g["padding"]) < 0:
        raise ValueError(f"draw_im2col: sizes, strides and dilations must be >= 1 and padding >= 0, got {g}")
    g["padded"] = tuple(s + 2 * p for s, p in zip(g["input"], g["padding"]))
    g["output"] = tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, k, st, p, d in zip(g["input"], g["kernel"], g["stride"], g["padding"], g["dilation"])
    )
    if min(g["output"]) < 1:
        raise ValueError(
            f"draw_im2col: the (dilated) kernel {g['kernel']} does not fit in the padded input {g['padded']}; "
            f"use a smaller kernel or dilation, or more padding"
        )
    return g


def im2col_indices(input_size=4, kernel_size=3, stride=1, padding=0, dilation=1) -> np.ndarray:
    """The im2col matrix of an input whose cells hold their own positions ``h*W + w`` (-1: padding).

    Shape (Ho*Wo, kh*kw), int64: row ``oh*Wo + ow`` lists the input cells under
    the kernel at output pixel (oh, ow), in tap order (i, j). Computed with the
    library's ``minigrad.nn.functional.conv.im2col``.
    """
    from minigrad.nn.functional.conv import im2col

    g = conv_geometry(input_size, kernel_size, stride, padding, dilation)
    (H, W), (ph, pw), (Hp, Wp) = g["input"], g["padding"], g["padded"]
    x = np.full((1, 1, Hp, Wp), -1.0)
    x[0, 0, ph : ph + H, pw : pw + W] = np.arange(H * W, dtype=np.float64).reshape(H, W)
    cols = im2col(x, g["kernel"], g["stride"], g["dilation"])
    return np.asarray(cols).astype(np.int64)


def _cell(x: float, y: float, size: float, style, label: str, tip: str, font: int, dashed: bool = False,
          width: float | None = None) -> str:
    fill, stroke = style
    width = size if width is None else width
    attrs = {"fill": fill, "height": size, "stroke": stroke, "stroke-width": 1.2, "width": width, "x": x, "y": y}
    if dashed:
        attrs["stroke-dasharray"] = "3 2"
    rect = _element("rect", attrs)
    text = _text(label, x + width / 2, y + size / 2 + font * 0.35, anchor="middle", fill=TEXT, size=font) if label else ""
    return _element("g", {}, _element("title", {}, _escape(tip)) + rect + text)


def _window_panels(g, cols) -> SVGFigure:
    """One small copy of the padded input per output pixel, its window filled in the pixel's colour."""
    (H, W), (ph, pw), (Hp, Wp), (Ho, Wo) = g["input"], g["padding"], g["padded"], g["output"]
    (sh, sw), (dh, dw), (kh, kw) = g["stride"], g["dilation"], g["kernel"]
    parts = [_text("1. the kernel slides: the cells it covers at each output pixel", MARGIN, MARGIN + 12,
                   fill=TEXT, weight="bold")]
    grid_w = Wp * SMALL_CELL
    panel_w = max(grid_w, _text_width("out[0,0]") * SMALL_FONT / 12) + PANEL_GAP
    x, y = float(MARGIN), MARGIN + LINE_HEIGHT + 6
    panel_h = LINE_HEIGHT + Hp * SMALL_CELL
    right = x
    for oh in range(Ho):
        for ow in range(Wo):
            r = oh * Wo + ow
            if x > MARGIN and x + panel_w - PANEL_GAP > ROW_BUDGET:
                x, y = float(MARGIN), y + panel_h + 10
            style = WINDOW_COLOURS[r % len(WINDOW_COLOURS)]
            covered = {(oh * sh + i * dh, ow * sw + j * dw) for i in range(kh) for j in range(kw)}
            parts.append(_text(f"out[{oh},{ow}]", x, y + 12, fill=style[1], size=SMALL_FONT + 1, weight="bold"))
            for hp in range(Hp):
                for wp in range(Wp):
                    inside = ph <= hp < ph + H and pw <= wp < pw + W
                    label = str((hp - ph) * W + (wp - pw)) if inside else PAD_LABEL
                    hit = (hp, wp) in covered
                    cell_style = style if hit else (PLAIN_STYLE if inside else PADDING_STYLE)
                    tip = (f"input cell {label} (row {hp - ph}, column {wp - pw})" if inside else "padding (zero)")
                    tip += f"; under the kernel at out[{oh},{ow}]" if hit else ""
                    parts.append(_cell(x + wp * SMALL_CELL, y + LINE_HEIGHT + hp * SMALL_CELL, SMALL_CELL,
                                       cell_style, label, tip, SMALL_FONT, dashed=not inside))
            right = max(right, x + panel_w - PANEL_GAP)
            x += panel_w
    return SVGFigure("".join(parts), right + MARGIN, y + panel_h + 6)


def _matrix_panel(g, cols) -> SVGFigure:
    """The column matrix (rows coloured per output pixel), the filter as a row of taps, out = cols @ w."""
    (Ho, Wo), (kh, kw) = g["output"], g["kernel"]
    rows, taps = cols.shape
    title = "2. im2col: each window becomes one row; the filter is one row of taps; out = cols @ w"
    row_label_w = _text_width("out[0,0]") + 10
    left = MARGIN + row_label_w
    parts = [_text(title, MARGIN, MARGIN + 12, fill=TEXT, weight="bold")]
    y = MARGIN + LINE_HEIGHT + 8
    parts.append(_text(f"filter w, taps (i, j) in order ({kh}x{kw} = {taps} numbers):", left, y + 10,
                       fill=TEXT_SOFT, size=CELL_FONT - 1))
    y += LINE_HEIGHT
    for t in range(taps):
        i, j = divmod(t, kw)
        parts.append(_cell(left + t * CELL, y, CELL, FILTER_STYLE, f"w{i}{j}" if max(kh, kw) <= 10 else "",
                           f"filter tap (i, j) = ({i}, {j})", CELL_FONT - 2))
    y += CELL + 12
    parts.append(_text(f"cols ({rows} x {taps})", left, y + 10, fill=TEXT_SOFT, size=CELL_FONT - 1))
    y += LINE_HEIGHT + 2
    out_x = left + taps * CELL + 38
    for r in range(rows):
        oh, ow = divmod(r, Wo)
        style = WINDOW_COLOURS[r % len(WINDOW_COLOURS)]
        ry = y + r * CELL
        parts.append(_text(f"out[{oh},{ow}]", MARGIN, ry + CELL / 2 + 4, fill=style[1], size=CELL_FONT, weight="bold"))
        for t in range(taps):
            i, j = divmod(t, kw)
            v = int(cols[r, t])
            label = str(v) if v >= 0 else PAD_LABEL
            tip = (f"row {r} (out[{oh},{ow}]), tap ({i}, {j}): "
                   + (f"input cell {v}" if v >= 0 else "padding (zero)"))
            parts.append(_cell(left + t * CELL, ry, CELL, style if v >= 0 else PADDING_STYLE, label, tip, CELL_FONT,
                               dashed=v < 0))
        parts.append(_text("·w =", left + taps * CELL + 4, ry + CELL / 2 + 4, fill=TEXT_SOFT, size=CELL_FONT))
        parts.append(_cell(out_x, ry, CELL, style, f"{oh},{ow}",
                           f"out[{oh},{ow}] = row {r} of cols, dotted with w", CELL_FONT - 1, width=OUT_W))
    matrix_bottom = y + rows * CELL
    # the output column reshaped to the Ho x Wo grid
    grid_x = out_x + OUT_W + 70
    parts.append(_text(f"out ({rows} x 1)", out_x, y - 12, fill=TEXT_SOFT, size=CELL_FONT - 1))
    parts.append(_text(f"reshaped to {Ho}x{Wo}", grid_x, y - 12, fill=TEXT_SOFT, size=CELL_FONT - 1))
    parts.append(_text("→", grid_x - 35, y + CELL / 2 + 5, anchor="middle", fill=TEXT_SOFT, size=CELL_FONT + 4))
    for oh in range(Ho):
        for ow in range(Wo):
            r = oh * Wo + ow
            parts.append(_cell(grid_x + ow * OUT_W, y + oh * CELL, CELL, WINDOW_COLOURS[r % len(WINDOW_COLOURS)],
                               f"{oh},{ow}", f"output pixel ({oh}, {ow})", CELL_FONT - 1, width=OUT_W))
    right = max(grid_x + Wo * OUT_W, grid_x + _text_width(f"reshaped to {Ho}x{Wo}") * (CELL_FONT - 1) / 12)
    y = max(matrix_bottom, y + Ho * CELL) + 8
    summary = [
        f"one row per output pixel, one column per tap: cols ({rows} x {taps}) @ w ({taps} x 1) = out ({rows} x 1), "
        f"reshaped to {Ho} x {Wo}",
        f"with C input channels a row holds {taps}*C numbers; with O filters w has O columns, "
        f"and one product gives all O output channels",
    ]
    for k, line in enumerate(summary):
        parts.append(_text(line, MARGIN, y + 12 + k * LINE_HEIGHT, fill=TEXT_SOFT, size=CELL_FONT - 1))
    width = max([right, MARGIN + _text_width(title)] + [MARGIN + _text_width(line) * (CELL_FONT - 1) / 12 for line in summary])
    return SVGFigure("".join(parts), width + MARGIN, y + len(summary) * LINE_HEIGHT + 4)


def draw_im2col(input_size=4, kernel_size=3, stride=1, padding=0, dilation=1) -> SVGFigure:
    """The im2col picture for a single-channel ``input_size`` input and one ``kernel_size`` filter.

    Arguments as for ``Conv2d`` (ints or (height, width) pairs). The picture
    stays readable up to a 9x9 padded input, 16 output pixels and 25 taps;
    larger values raise ValueError.
    """
    g = conv_geometry(input_size, kernel_size, stride, padding, dilation)
    (Hp, Wp), (Ho, Wo), (kh, kw) = g["padded"], g["output"], g["kernel"]
    if max(Hp, Wp) > MAX_SIDE or Ho * Wo > MAX_OUTPUTS or kh * kw > MAX_TAPS:
        raise ValueError(
            f"draw_im2col: a {Hp}x{Wp} padded input with {Ho * Wo} output pixels and {kh * kw} taps is too large to "
            f"draw; keep the padded input within {MAX_SIDE}x{MAX_SIDE}, the output within {MAX_OUTPUTS} pixels and "
            f"the kernel within {MAX_TAPS} taps, e.g. draw_im2col(4, 3)"
        )
    cols = im2col_indices(input_size, kernel_size, stride, padding, dilation)
    (H, W), (sh, sw), (ph, pw), (dh, dw) = g["input"], g["stride"], g["padding"], g["dilation"]
    head = (f"input {H}x{W}, kernel {kh}x{kw}, stride ({sh}, {sw}), padding ({ph}, {pw}), dilation ({dh}, {dw}) "
            f"-> output {Ho}x{Wo}")
    note = f"each input cell is labelled with its position h*{W} + w; dashed grey cells ({PAD_LABEL}) are zero padding"
    header = SVGFigure(_text(head, MARGIN, MARGIN + 12, fill=TEXT) + _text(note, MARGIN, MARGIN + 12 + LINE_HEIGHT,
                                                                             fill=TEXT_SOFT),
                       MARGIN * 2 + max(_text_width(head), _text_width(note)), MARGIN + 18 + LINE_HEIGHT)
    figure = stack_figures([header, _window_panels(g, cols), _matrix_panel(g, cols)], gap=4)
    background = _element("rect", {"fill": "#ffffff", "height": figure.height + MARGIN, "width": figure.width,
                                   "x": 0, "y": 0})
    return SVGFigure(background + figure.body, figure.width, figure.height + MARGIN)


# ------------------------------------------------------------- matplotlib figures


def _array(value: Any, who: str) -> np.ndarray:
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach()
        if hasattr(value, "cpu"):
            value = value.cpu()
        value = value.numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: expected a Tensor or an array, got {type(value).__name__}") from None


def plot_filters(weight, ncols: int = 8, channel: int = 0, title: str = "First-layer filters", cmap: str = "RdBu_r"):
    """The kernels of a conv layer as a grid of small images, one per output channel.

    ``weight``: a Conv2d weight (O, C, kh, kw) (Tensor or array; ``channel``
    picks the input channel shown) or kernels (O, kh, kw). One colour scale,
    symmetric around 0, is shared by all kernels: red is positive, blue
    negative, so strong and weak filters can be compared.
    """
    from matplotlib.figure import Figure

    show_figures_as_png()
    w = _array(weight, "plot_filters")
    if w.ndim == 4:
        if not 0 <= channel < w.shape[1]:
            raise ValueError(f"plot_filters: channel {channel} is out of range for weight of shape {w.shape}")
        w = w[:, channel]
    if w.ndim != 3:
        raise ValueError(f"plot_filters: expected a weight (O, C, kh, kw) or kernels (O, kh, kw), got shape {w.shape}")
    count = w.shape[0]
    ncols = max(1, min(ncols, count))
    nrows = -(-count // ncols)
    limit = float(np.abs(w).max()) or 1.0
    fig = Figure(figsize=(1.1 * ncols + 0.6, 1.1 * nrows + 0.5), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    image = None
    for k, ax in enumerate(axes.flat):
        ax.set_xticks([])
        ax.set_yticks([])
        if k >= count:
            ax.set_axis_off()
            continue
        image = ax.imshow(w[k], cmap=cmap, vmin=-limit, vmax=limit, interpolation="nearest")
        ax.set_title(str(k), fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.8, aspect=25)
    fig.suptitle(title)
    return fig


def _describe(module) -> str:
    describe = getattr(module, "describe", None)
    return describe() if callable(describe) else type(module).__name__


def feature_maps(model, image, layers: Sequence[int] | None = None) -> list[tuple[str, np.ndarray]]:
    """Run one ``image`` through the layers of ``model`` (a ``Sequential``) and keep the image-shaped outputs.

    ``image``: (1, C, H, W), (C, H, W) or (H, W), a Tensor or an array. Returns
    ``[(name, maps)]`` for every layer whose output is (1, C', H', W'), as a
    (C', H', W') array, or only for the layer indices in ``layers``. Runs in
    eval mode without a graph and restores the model's mode.
    """
    from minigrad.tensor import no_grad, tensor

    x = _array(image, "feature_maps")
    x = x.reshape((1,) * (4 - x.ndim) + x.shape) if x.ndim in (2, 3) else x
    if x.ndim != 4 or x.shape[0] != 1:
        raise ValueError(f"feature_maps: expected one image (1, C, H, W), (C, H, W) or (H, W), got shape {x.shape}")
    children = list(model)
    wanted = set(range(len(children))) if layers is None else {i % len(children) for i in layers}
    dtype = next((p.dtype for p in model.parameters()), None)
    out = tensor(x, dtype=dtype)
    was_training = model.training
    model.eval()
    found = []
    try:
        with no_grad():
            for i, module in enumerate(children):
                out = module(out)
                if i in wanted and out.ndim == 4:
                    found.append((f"{i}: {_describe(module)}", np.array(out.numpy()[0], dtype=np.float64)))
    finally:
        model.train(was_training)
    return found


def plot_feature_maps(model, image, layers: Sequence[int] | None = None, max_maps: int = 8,
                      title: str = "Feature maps of one image", cmap: str = "viridis"):
    """The input image, then one row per layer of ``feature_maps``: its first ``max_maps`` channels."""
    from matplotlib.figure import Figure

    show_figures_as_png()
    x = _array(image, "plot_feature_maps")
    maps = feature_maps(model, x, layers)
    picture = x.reshape(x.shape[-2:]) if x.size == x.shape[-1] * x.shape[-2] else x.reshape(-1, *x.shape[-2:])[0]
    ncols = max([min(max_maps, m.shape[0]) for _, m in maps] + [1])
    nrows = 1 + len(maps)
    fig = Figure(figsize=(1.15 * ncols + 1.8, 1.2 * nrows + 0.5), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_axis_off()
    axes[0, 0].set_axis_on()
    axes[0, 0].imshow(picture, cmap="gray_r", interpolation="nearest")
    axes[0, 0].set_ylabel("input", rotation=0, ha="right", va="center", fontsize=8)
    for row, (name, m) in enumerate(maps, start=1):
        for c in range(min(max_maps, m.shape[0])):
            ax = axes[row, c]
            ax.set_axis_on()
            ax.imshow(m[c], cmap=cmap, interpolation="nearest")
            if row == 1:
                ax.set_title(f"channel {c}", fontsize=7)
        axes[row, 0].set_ylabel(f"{name}\n{m.shape[0]}x{m.shape[1]}x{m.shape[2]}", rotation=0, ha="right",
                                va="center", fontsize=8)
    fig.suptitle(title)
    return fig
