"""Explore views: pick a shape and a view op, see its strides and which storage cells it reads.

The tensor being viewed is always ``x = arange(n).view(shape)``: a fresh,
contiguous storage whose element at position ``p`` holds the number ``p``, so
reading the view *is* reading its storage positions. A view op only computes a
new (shape, strides, offset) for the same storage; ``strided_view`` does that
with the plain-Python functions of :mod:`minigrad.tensor.strides` (the ones the
chapter 03 exercises build), and ``offset_map`` walks the view's indices in
row-major order, turning each into a storage position with
``index_to_position``.

The ops, named as in PyTorch (``VIEW_OPS`` lists them with their parameters):
``transpose``, ``permute``, ``slice`` (with a step), ``select`` (an integer
index), ``expand`` (broadcast: stride 0), ``unsqueeze``, ``reshape`` (as a
view: ``x.view(...)``) and ``reshape_copy`` (a transpose then a flatten: no
strides can describe it, so ``reshape`` copies into a new storage).

Invariants
- The figure is byte-deterministic: the same arguments give the same bytes.
- Everything is computed by plain functions (``strided_view``, ``offset_map``,
  ``touched_cells``, ``position_formula``, ``draw_strided_view``);
  ``StrideExplorer`` is a thin ipywidgets shell around them.
- ``offset_map`` agrees with NumPy: for the NumPy view of ``np.arange(n)``
  made by the same op, ``view.ravel()`` equals the positions (tests check it).
- Like the rest of ``minigrad.viz``, this module imports no stage at module
  level: ``minigrad.tensor.strides`` is imported when first needed.
"""

from __future__ import annotations

import html
import itertools
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from minigrad.viz.graph_svg import (
    LINE_HEIGHT, MARGIN, PALETTE, TEXT, TEXT_SOFT, SVGFigure, _element, _escape, _text, _text_width,
    draw_legend, stack_figures,
)
from minigrad.viz.widget_display import widget_picture
from minigrad.viz.widget_frame import WidgetFrame, widget_error

__all__ = [
    "VIEW_OPS", "ViewInfo", "strided_view", "offset_map", "touched_cells", "position_formula",
    "offset_table", "draw_strided_view", "StrideExplorer",
]

VIEW_OPS: dict[str, str] = {
    "transpose": "dim0=-2, dim1=-1: swap two dimensions (sizes and strides)",
    "permute": "dims=None (reversed): reorder all dimensions, like .T",
    "slice": "dim=-1, start=1, stop=None, step=2: x[..., start:stop:step]",
    "select": "dim=0, index=1: x[index] along dim; the dimension disappears",
    "expand": "sizes=None: broadcast size-1 (or new leading) dimensions with stride 0",
    "unsqueeze": "dim=0: insert a dimension of size 1",
    "reshape": "new_shape=None: x.view(new_shape), possible without a copy",
    "reshape_copy": "dim0=-2, dim1=-1, new_shape=(-1,): transpose, then reshape; needs a copy",
}
"""The ops ``strided_view`` knows, each with its parameters and their defaults."""

_PARAMS = {
    "transpose": ("dim0", "dim1"), "permute": ("dims",), "slice": ("dim", "start", "stop", "step"),
    "select": ("dim", "index"), "expand": ("sizes",), "unsqueeze": ("dim",), "reshape": ("new_shape",),
    "reshape_copy": ("dim0", "dim1", "new_shape"),
}
_ALIASES = {"broadcast": "expand", "view": "reshape", "copy": "reshape_copy"}
MAX_STORAGE, MAX_VIEW = 64, 128  # elements: beyond that the picture is unreadable

CELL_W, CELL_H, CELL_FONT = 34, 24, 11
CHAR_W = 6.6  # advance of one character at CELL_FONT
INDEX_FONT = 10
BLOCK_GAP = 22
VIEW_STYLE = PALETTE["blue"]
READ_STYLE = PALETTE["blue"]
REREAD_STYLE = PALETTE["orange"]
UNREAD_STYLE = ("#ffffff", "#c9ced6")
COPY_STYLE = PALETTE["green"]
CURRENT_STYLE = PALETTE["yellow"]
INDEX_NAMES = "ijkl"


def _strides_module():
    from minigrad.tensor import strides

    return strides


@dataclass(frozen=True)
class ViewInfo:
    """What an op does to ``x = arange(n).view(base_shape)``.

    ``shape``, ``strides`` and ``offset`` describe the strided view that reads
    x's storage (for ``reshape_copy``: the transposed view the copy reads).
    ``copy_shape`` is None for a view; for a copy it is the shape of the new,
    contiguous tensor whose k-th element is the view's k-th element.
    """

    op: str
    code: str  # the PyTorch-style expression, e.g. "x.transpose(-2, -1)"
    base_shape: tuple[int, ...]
    base_strides: tuple[int, ...]
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    copy_shape: tuple[int, ...] | None
    note: str

    @property
    def is_view(self) -> bool:
        return self.copy_shape is None

    @property
    def storage_size(self) -> int:
        return _strides_module().numel(self.base_shape)

    @property
    def numel(self) -> int:
        return _strides_module().numel(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """Whether the view reads its elements in storage order without gaps (from position ``offset``)."""
        return _strides_module().is_contiguous(self.shape, self.strides)


# ------------------------------------------------------------------ the ops


def _as_shape(shape: Any, what: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"StrideExplorer: {what} must be a tuple of ints, got {shape!r}") from None
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        raise TypeError(f"StrideExplorer: {what} must be a tuple of ints, got {shape!r}")
    return shape


def _dim(dim: int, ndim: int, op: str) -> int:
    if not -ndim <= dim < ndim:
        raise ValueError(f"{op}: dimension {dim} is out of range for {ndim} dimensions (valid: {-ndim} to {ndim - 1})")
    return dim % ndim


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _args_text(values: Sequence[int]) -> str:
    return ", ".join(map(str, values))


def _infer(new_shape: Sequence[int], total: int, op: str) -> tuple[int, ...]:
    new_shape = _as_shape(new_shape, "new_shape")
    unknown = [i for i, s in enumerate(new_shape) if s == -1]
    known = _strides_module().numel(tuple(s for s in new_shape if s != -1))
    if len(unknown) > 1 or any(s < -1 for s in new_shape):
        raise ValueError(f"{op}: new_shape {new_shape} may hold one -1 and otherwise sizes >= 0")
    if unknown:
        if known == 0 or total % known:
            raise ValueError(f"{op}: new_shape {new_shape} does not fit {total} elements")
        i = unknown[0]
        new_shape = new_shape[:i] + (total // known,) + new_shape[i + 1:]
    if _strides_module().numel(new_shape) != total:
        count = _strides_module().numel(new_shape)
        raise ValueError(f"{op}: new_shape {new_shape} has {count} elements, x has {total}")
    return new_shape


def _default_reshape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) >= 2:
        return (_strides_module().numel(shape[:-1]), shape[-1])
    n = _strides_module().numel(shape)
    divisor = next((d for d in range(2, n) if n % d == 0), 1)
    return (divisor, n // divisor)


def _default_expand(shape: tuple[int, ...]) -> tuple[int, ...]:
    if 1 in shape:
        i = shape.index(1)
        return shape[:i] + (3,) + shape[i + 1:]
    return (2,) + shape


def strided_view(shape: Sequence[int] = (2, 3, 4), op: str = "transpose", **params: Any) -> ViewInfo:
    """The shape, strides and offset that ``op`` gives ``x = arange(n).view(shape)`` (see ``VIEW_OPS``).

    Raises ValueError for an unknown op, bad parameters, or a shape too big to
    draw (more than 64 storage elements or 128 view elements).
    """
    st = _strides_module()
    base = _as_shape(shape)
    if any(s < 1 for s in base):
        raise ValueError(f"StrideExplorer: sizes must be at least 1, got shape {base}")
    if st.numel(base) > MAX_STORAGE:
        raise ValueError(
            f"StrideExplorer: shape {base} has {st.numel(base)} elements; pick one with at most {MAX_STORAGE} "
            f"so the picture stays readable"
        )
    op = _ALIASES.get(op, op)
    if op not in VIEW_OPS:
        raise ValueError(f"StrideExplorer: unknown op {op!r}; choose one of {', '.join(VIEW_OPS)}")
    unknown = set(params) - set(_PARAMS[op])
    if unknown:
        raise ValueError(f"{op}: unknown parameter(s) {', '.join(sorted(unknown))}; {op} takes {VIEW_OPS[op]}")
    base_strides = st.strides_for_shape(base)
    ndim = len(base)
    shape, strides, offset, copy_shape = base, base_strides, 0, None

    if op in ("transpose", "reshape_copy"):
        if ndim < 2:
            raise ValueError(f"{op}: needs a tensor with at least 2 dimensions, x has shape {base}")
        d0, d1 = params.get("dim0", -2), params.get("dim1", -1)
        dims = list(range(ndim))
        a, b = _dim(d0, ndim, op), _dim(d1, ndim, op)
        dims[a], dims[b] = dims[b], dims[a]
        shape, strides = st.permute_strides(base, base_strides, tuple(dims))
        code = f"x.transpose({d0}, {d1})"
        note = "transposing swaps two sizes and their strides; no element moves"
        if op == "reshape_copy":
            target = _infer(params.get("new_shape", (-1,)), st.numel(base), op)
            code += f".reshape({_args_text(params.get('new_shape', (-1,)))})"
            viewed = st.view_strides(shape, strides, target)
            if viewed is None:
                copy_shape = target
                note = (
                    "no strides can read the transposed elements as one run, so view() raises and "
                    "reshape() copies them, in this order, into new memory"
                )
            else:
                shape, strides = target, viewed
                note = "here the swapped dimensions do not get in the way, so reshape() still returns a view"
    elif op == "permute":
        dims = tuple(params.get("dims") or range(ndim - 1, -1, -1))
        shape, strides = st.permute_strides(base, base_strides, dims)
        code = f"x.permute({_args_text(dims)})"
        note = "dimension d of the result is dimension dims[d] of x: its size and its stride"
    elif op == "slice":
        if ndim < 1:
            raise ValueError("slice: a 0-d tensor has no dimension to slice")
        d = _dim(params.get("dim", -1), ndim, op)
        step = params.get("step", 2)
        if step is None or step < 1:
            raise ValueError(f"slice: step must be a positive int (PyTorch has no negative steps), got {step}")
        start, stop, step = slice(params.get("start", 1), params.get("stop"), step).indices(base[d])
        size = len(range(start, stop, step))
        shape = base[:d] + (size,) + base[d + 1:]
        strides = base_strides[:d] + (base_strides[d] * step,) + base_strides[d + 1:]
        offset = start * base_strides[d] if size else 0
        written = f"{start or ''}:{'' if stop >= base[d] else stop}" + (f":{step}" if step != 1 else "")
        code = "x[" + ", ".join([":"] * d + [written]) + "]"
        note = f"start {start} moves the offset by {start}*{base_strides[d]}; step {step} multiplies the stride"
    elif op == "select":
        if ndim < 1:
            raise ValueError("select: a 0-d tensor has no dimension to index")
        d = _dim(params.get("dim", 0), ndim, op)
        index = params.get("index", 1 if base[d] > 1 else 0)
        if not -base[d] <= index < base[d]:
            raise ValueError(f"select: index {index} is out of range for dimension {d} of size {base[d]}")
        index %= base[d]
        shape, strides = base[:d] + base[d + 1:], base_strides[:d] + base_strides[d + 1:]
        offset = index * base_strides[d]
        code = "x[" + ", ".join([":"] * d + [str(index)]) + "]"
        note = f"an integer index adds {index}*{base_strides[d]} to the offset and drops the dimension"
    elif op == "expand":
        sizes = _as_shape(params.get("sizes") or _default_expand(base), "sizes")
        if len(sizes) < ndim:
            raise ValueError(f"expand: sizes {sizes} has fewer entries than x has dimensions ({base})")
        extra = len(sizes) - ndim
        target = tuple(base[i - extra] if s == -1 and i >= extra else s for i, s in enumerate(sizes))
        if any(s < 1 for s in target[:extra]):
            raise ValueError(f"expand: new leading sizes must be at least 1, got {sizes}")
        try:
            fits = st.broadcast_shapes(base, target) == target
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"expand: x of shape {base} cannot be expanded to {sizes}; only size-1 dimensions grow")
        shape = target
        strides = (0,) * extra + tuple(
            0 if old == 1 and new != 1 else s for old, new, s in zip(base, target[extra:], base_strides)
        )
        code = f"x.expand({_args_text(sizes)})"
        note = "a broadcast dimension gets stride 0: stepping along it reads the same cell again"
    elif op == "unsqueeze":
        d = params.get("dim", 0)
        d = _dim(d, ndim + 1, op)
        # PyTorch's choice; any stride works for a dimension of size 1
        new_stride = base_strides[d] * base[d] if d < ndim else 1
        shape, strides = base[:d] + (1,) + base[d:], base_strides[:d] + (new_stride,) + base_strides[d:]
        code = f"x.unsqueeze({params.get('dim', 0)})"
        note = "a dimension of size 1 is never stepped along, so its stride does not matter"
    else:  # reshape as a view
        wanted = params.get("new_shape") or _default_reshape(base)
        target = _infer(wanted, st.numel(base), op)
        viewed = st.view_strides(base, base_strides, target)
        if viewed is None:  # cannot happen for a contiguous x, kept for safety
            raise ValueError(f"reshape: x.view{_shape_text(target)} is impossible without a copy")
        shape, strides = target, viewed
        code = f"x.view({_args_text(_as_shape(wanted))})"
        note = "x is contiguous, so any shape with the same number of elements is a view: only strides change"

    info = ViewInfo(op, code, base, base_strides, tuple(shape), tuple(strides), offset, copy_shape, note)
    if info.numel > MAX_VIEW:
        raise ValueError(f"{op}: the result has {info.numel} elements; keep it to at most {MAX_VIEW} to draw it")
    return info


# ------------------------------------------------------------------ the map


def _indices(shape: tuple[int, ...]):
    return itertools.product(*(range(n) for n in shape))


def offset_map(info: ViewInfo) -> list[tuple[tuple[int, ...], int]]:
    """(index, storage position) of every element of the view, in row-major (iteration) order."""
    st = _strides_module()
    return [(index, st.index_to_position(index, info.strides, info.offset)) for index in _indices(info.shape)]


def touched_cells(info: ViewInfo) -> dict[int, list[int]]:
    """Storage position -> the iteration numbers of the view elements that read it (sorted by position)."""
    cells: dict[int, list[int]] = {}
    for k, (_, position) in enumerate(offset_map(info)):
        cells.setdefault(position, []).append(k)
    return dict(sorted(cells.items()))


def _index_text(index: Sequence[int]) -> str:
    return "v[" + ", ".join(map(str, index)) + "]"


def position_formula(info: ViewInfo, index: Sequence[int]) -> str:
    """``v[1, 0, 2] -> 0 + 12*1 + 1*0 + 4*2 = 20``: how one index becomes a storage position."""
    index = tuple(index)
    if len(index) != len(info.shape) or not all(0 <= i < n for i, n in zip(index, info.shape)):
        raise ValueError(f"index {index} is not inside the view's shape {info.shape}")
    position = _strides_module().index_to_position(index, info.strides, info.offset)
    terms = " + ".join([str(info.offset)] + [f"{s}*{i}" for s, i in zip(info.strides, index)])
    return f"{_index_text(index)} -> {terms} = {position}"


def _general_formula(info: ViewInfo) -> str:
    names = INDEX_NAMES if len(info.shape) <= len(INDEX_NAMES) else [f"i{d}" for d in range(len(info.shape))]
    variables = list(names[: len(info.shape)])
    terms = " + ".join([str(info.offset)] + [f"{s}*{v}" for s, v in zip(info.strides, variables)])
    return f"position of v[{', '.join(variables)}] = {terms}"


def offset_table(info: ViewInfo, limit: int | None = None) -> str:
    """One line per view element: its number, index and storage position (and, for a copy, where it lands)."""
    rows = offset_map(info)
    lines = [f"{'k':>3}  {'index':<16} storage position" + ("   new position" if not info.is_view else "")]
    shown = rows if limit is None else rows[:limit]
    for k, (index, position) in enumerate(shown):
        line = f"{k:>3}  {_index_text(index):<16} {position:>16}"
        if not info.is_view:
            line += f"   {k:>12}"
        lines.append(line)
    if len(shown) < len(rows):
        lines.append(f"... {len(rows) - len(shown)} more")
    return "\n".join(lines)


def _summary_lines(info: ViewInfo, element: int | None) -> tuple[list[str], list[str]]:
    """(headline lines, detail lines) of the figure's summary."""
    x_line = (
        f"x = arange({info.storage_size}).view{_shape_text(info.base_shape)}: "
        f"strides {_shape_text(info.base_strides)}"
    )
    kind = "a view (no copy)" if info.is_view else "read by a copy"
    v_line = (
        f"v = {info.code}: shape {_shape_text(info.shape)}, strides {_shape_text(info.strides)}, "
        f"offset {info.offset}, contiguous: {'yes' if info.is_contiguous else 'no'}, {kind}"
    )
    copy_lines = []
    if not info.is_view:
        v_line = (
            f"v = {info.code.rsplit('.reshape', 1)[0]}: shape {_shape_text(info.shape)}, "
            f"strides {_shape_text(info.strides)}, offset {info.offset}, contiguous: no"
        )
        copy_strides = _strides_module().strides_for_shape(info.copy_shape)
        copy_lines = [
            f"{info.code} copies v into new memory: shape {_shape_text(info.copy_shape)}, "
            f"strides {_shape_text(copy_strides)}"
        ]
    details = [_general_formula(info), info.note]
    if element is not None:
        index, _ = offset_map(info)[element]
        details.append(f"element {element}: {position_formula(info, index)}")
    return _wrap([x_line, v_line, *copy_lines]), _wrap(details)


# ------------------------------------------------------------------ drawing


def _cell(x: float, y: float, style: tuple[str, str], label: str, *, title: str | None = None,
          bold: bool = False, width: float = CELL_W) -> str:
    fill, stroke = style
    rect = _element("rect", {
        "fill": fill, "height": CELL_H, "stroke": stroke, "stroke-width": 1.2, "width": width, "x": x, "y": y,
    })
    text = _text(label, x + width / 2, y + CELL_H / 2 + 4, anchor="middle", fill=TEXT,
                 weight="bold" if bold else None, size=CELL_FONT)
    tip = _element("title", {}, _escape(title)) if title else ""
    return _element("g", {}, tip + rect + text)


def _small(content: str, x: float, y: float, anchor: str = "middle") -> str:
    return _text(content, x, y, anchor=anchor, fill=TEXT_SOFT, size=INDEX_FONT)


def _blocks(shape: tuple[int, ...]) -> tuple[list[tuple[int, ...]], int, int]:
    """The 2-D blocks a view is drawn as: (leading indices of each block, rows, columns)."""
    if not shape:
        return [()], 1, 1
    if len(shape) == 1:
        return [()], 1, shape[0]
    return list(_indices(shape[:-2])), shape[-2], shape[-1]


def _draw_view(info: ViewInfo, element: int | None, max_width: float) -> SVGFigure:
    """The view as 2-D blocks; each cell shows the storage position it reads."""
    mapping = offset_map(info)
    leads, rows, cols = _blocks(info.shape)
    row_label_w = 0 if len(info.shape) < 2 else _text_width(str(rows - 1)) * INDEX_FONT / 12 + 6
    block_w = row_label_w + cols * CELL_W
    has_title = len(info.shape) >= 3
    block_h = (LINE_HEIGHT if has_title else 0) + 14 + rows * CELL_H
    title = "v, cell by cell: each shows the storage position it reads"
    if not info.is_view:
        title = "v (the transposed view the copy reads): each cell shows the storage position it reads"
    parts = [_text(title, MARGIN, MARGIN + 12, fill=TEXT_SOFT)]
    top0 = MARGIN + LINE_HEIGHT + 6
    x, y, right = float(MARGIN), float(top0), float(MARGIN)
    per_block = rows * cols
    for b, lead in enumerate(leads):
        if x > MARGIN and x + block_w > max_width - MARGIN:
            x, y = float(MARGIN), y + block_h + BLOCK_GAP / 2
        top = y
        if has_title:
            name = "v[" + ", ".join([*map(str, lead), ":", ":"]) + "]"
            parts.append(_text(name, x + row_label_w, top + 12, fill=TEXT_SOFT, size=INDEX_FONT))
            top += LINE_HEIGHT
        grid_x = x + row_label_w
        for c in range(cols if info.shape else 0):  # column indices
            parts.append(_small(str(c), grid_x + c * CELL_W + CELL_W / 2, top + 10))
        top += 14
        for r in range(rows):
            if row_label_w:
                parts.append(_small(str(r), grid_x - 5, top + r * CELL_H + CELL_H / 2 + 4, anchor="end"))
            for c in range(cols):
                k = b * per_block + r * cols + c
                index, position = mapping[k]
                style = CURRENT_STYLE if k == element else VIEW_STYLE
                parts.append(_cell(grid_x + c * CELL_W, top + r * CELL_H, style, str(position),
                                   title=f"{_index_text(index)} (element {k}) reads storage position {position}",
                                   bold=k == element))
        right = max(right, x + block_w)
        x += block_w + BLOCK_GAP
    width = max(right + MARGIN, 2 * MARGIN + _text_width(title))
    height = y + block_h + 8
    return SVGFigure("".join(parts), width, height)


ROW_BUDGET = 820  # pixels: storage rows wrap beyond this


def _per_row(info: ViewInfo, n: int, cell_w: float) -> int:
    """Cells per storage row: all of them if they fit, else a multiple of x's last size when possible."""
    fit = max(1, int(ROW_BUDGET // cell_w))
    if n <= fit:
        return n
    last = info.base_shape[-1] if info.base_shape else 1
    return last * (fit // last) if last <= fit else fit


def _storage_labels(info: ViewInfo) -> tuple[dict[int, str], float]:
    """The text in each read storage cell and the cell width: all reader numbers if short, else ×count."""
    cells = touched_cells(info)
    joined = {p: ",".join(map(str, readers)) for p, readers in cells.items()}
    longest = max((len(text) for text in joined.values()), default=1)
    if longest <= 5:
        return joined, max(CELL_W, longest * CHAR_W + 12)
    return {p: (text if len(cells[p]) == 1 else f"×{len(cells[p])}") for p, text in joined.items()}, CELL_W


def _draw_storage(info: ViewInfo, element: int | None) -> SVGFigure:
    """x's storage, one cell per position: which view elements read it, in iteration order."""
    n = info.storage_size
    cells = touched_cells(info)
    labels, cell_w = _storage_labels(info)
    current = offset_map(info)[element][1] if element is not None else None
    title = "storage of x: position above each cell; inside, the number of the v element that reads it"
    parts = [_text(title, MARGIN, 12, fill=TEXT_SOFT)]
    per_row = _per_row(info, n, cell_w)
    top = LINE_HEIGHT + 6
    for row_start in range(0, n, per_row):
        for position in range(row_start, min(n, row_start + per_row)):
            x = MARGIN + (position - row_start) * cell_w
            parts.append(_small(str(position), x + cell_w / 2, top + 10))
            readers = cells.get(position, [])
            if not readers:
                style, tip = UNREAD_STYLE, f"position {position}: not read by v"
            else:
                style = REREAD_STYLE if len(readers) > 1 else READ_STYLE
                many = "s" if len(readers) > 1 else ""
                tip = f"position {position}: read by element{many} {', '.join(map(str, readers))}"
            if position == current:
                style = CURRENT_STYLE
            parts.append(_cell(x, top + 14, style, labels.get(position, ""), title=tip, bold=position == current,
                               width=cell_w))
        top += 14 + CELL_H + 6
    width = max(2 * MARGIN + per_row * cell_w, 2 * MARGIN + _text_width(title))
    return SVGFigure("".join(parts), width, top)


def _draw_copy(info: ViewInfo, element: int | None) -> SVGFigure:
    """The new storage of a copy: cell k holds the element read from old position ``positions[k]``."""
    positions = [p for _, p in offset_map(info)]
    title = "the copy's new storage: each cell shows the old position its value came from"
    parts = [_text(title, MARGIN, 12, fill=TEXT_SOFT)]
    per_row = _per_row(info, len(positions), CELL_W)
    top = LINE_HEIGHT + 6
    for row_start in range(0, len(positions), per_row):
        for k in range(row_start, min(len(positions), row_start + per_row)):
            x = MARGIN + (k - row_start) * CELL_W
            parts.append(_small(str(k), x + CELL_W / 2, top + 10))
            style = CURRENT_STYLE if k == element else COPY_STYLE
            parts.append(_cell(x, top + 14, style, str(positions[k]),
                               title=f"new position {k} <- old position {positions[k]}", bold=k == element))
        top += 14 + CELL_H + 6
    width = max(2 * MARGIN + per_row * CELL_W, 2 * MARGIN + _text_width(title))
    return SVGFigure("".join(parts), width, top)


def _wrap(lines: Sequence[str], width: int = 100) -> list[str]:
    out = []
    for line in lines:
        out += textwrap.wrap(line, width, subsequent_indent="    ", break_on_hyphens=False) or [""]
    return out


def _draw_lines(lines: Sequence[str], bold_first: int = 0) -> SVGFigure:
    parts = []
    for i, line in enumerate(lines):
        parts.append(_text(line, MARGIN, MARGIN + i * LINE_HEIGHT + 12, fill=TEXT if i < bold_first else TEXT_SOFT,
                           weight="bold" if i < bold_first else None))
    width = 2 * MARGIN + max((_text_width(line) for line in lines), default=0)
    return SVGFigure("".join(parts), width, MARGIN + len(lines) * LINE_HEIGHT)


def _legend(info: ViewInfo, element: int | None):
    entries = [(READ_STYLE, "read once"), (REREAD_STYLE, "read more than once"), (UNREAD_STYLE, "not read")]
    if not info.is_view:
        entries.append((COPY_STYLE, "copied into new memory"))
    if element is not None:
        entries.append((CURRENT_STYLE, f"element {element}"))
    return entries


def _is_element(element: Any, info: ViewInfo) -> bool:
    return isinstance(element, int) and not isinstance(element, bool) and 0 <= element < info.numel


def draw_strided_view(info: ViewInfo, element: int | None = None) -> SVGFigure:
    """The static picture of a view: summary, the view's cells, x's storage (and the copy, if any).

    ``element`` (0 to ``info.numel - 1``) highlights one element of the view and
    the storage cell it reads, and adds its position formula to the summary.
    """
    if element is not None and not _is_element(element, info):
        raise ValueError(f"element must be an int from 0 to {info.numel - 1}, got {element!r}")
    headline, details = _summary_lines(info, element)
    summary = _draw_lines(headline + details, bold_first=len(headline))
    storage = _draw_storage(info, element)
    panels = [summary]
    width = max(summary.width, storage.width, 480)
    panels.append(_draw_view(info, element, width))
    panels.append(storage)
    if not info.is_view:
        panels.append(_draw_copy(info, element))
    width = max(panel.width for panel in panels)
    figure = stack_figures([draw_legend(_legend(info, element), width), *panels], gap=4)
    background = _element("rect", {"fill": "#ffffff", "height": figure.height + MARGIN, "width": figure.width,
                                   "x": 0, "y": 0})
    return SVGFigure(background + figure.body, figure.width, figure.height + MARGIN)


# ------------------------------------------------------------------ the widget


def _parse_shape(text: str) -> tuple[int, ...]:
    cleaned = text.strip().strip("()[]").replace(" ", "")
    if not cleaned:
        return ()
    try:
        return tuple(int(part) for part in cleaned.split(",") if part != "")
    except ValueError:
        raise ValueError(f"shape: write sizes separated by commas, like 2, 3, 4 (got {text!r})") from None


class StrideExplorer(WidgetFrame):
    """Pick a shape and a view op; see the view's strides and the storage cells it reads.

    ``StrideExplorer(shape=(2, 3, 4), op="transpose", **params)`` (``params`` as
    listed in ``VIEW_OPS``). ``figure()`` and ``table()`` work without
    ipywidgets; ``.widget`` builds the controls on first use: a shape box, an
    op menu, an element slider and a *highlight element* checkbox. Moving the
    slider always highlights the element it points at (and ticks the box);
    unticking the box clears the highlight, ticking it highlights the slider's
    element. A rendered notebook without a kernel shows the static figure.
    """

    def __init__(self, shape: Sequence[int] = (2, 3, 4), op: str = "transpose", **params: Any):
        self.info = strided_view(shape, op, **params)
        self.params = dict(params)
        self.element: int | None = None
        self.error: str | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.info.base_shape

    @property
    def op(self) -> str:
        return self.info.op

    def figure(self, element: int | None = None) -> SVGFigure:
        """The static, byte-deterministic SVG (``element`` highlights one element, default: the selected one)."""
        return draw_strided_view(self.info, self.element if element is None else element)

    def table(self, limit: int | None = None) -> str:
        return offset_table(self.info, limit)

    def offset_map(self) -> list[tuple[tuple[int, ...], int]]:
        return offset_map(self.info)

    def set_view(self, shape: Sequence[int] | None = None, op: str | None = None, **params: Any) -> None:
        """Change the shape and/or op (parameters reset to the op's defaults unless given); raises ValueError."""
        shape = self.shape if shape is None else shape
        op = self.op if op is None else op
        self.info = strided_view(shape, op, **params)
        self.params = dict(params)
        self.element = None
        self.error = None
        self._redraw()

    def select(self, element: int | None) -> None:
        """Highlight element ``element`` of the view (None: no highlight)."""
        if element is not None and not _is_element(element, self.info):
            raise ValueError(f"element must be an int from 0 to {self.info.numel - 1}, got {element!r}")
        self.element = element
        self._redraw()

    # ---------------------------------------------------------- ipywidgets

    def _rows(self, widgets) -> list:
        self._shape_box = widgets.Text(value=", ".join(map(str, self.shape)), description="shape",
                                       continuous_update=False, layout=widgets.Layout(width="200px"))
        self._op_menu = widgets.Dropdown(options=list(VIEW_OPS), value=self.op, description="op")
        self._slider = widgets.IntSlider(value=0, min=0, max=max(0, self.info.numel - 1), description="element")
        self._highlight = widgets.Checkbox(value=self.element is not None, description="highlight element",
                                           indent=False)
        self._text = widgets.HTML()
        self._shape_box.observe(self._on_view_change, names="value")
        self._op_menu.observe(self._on_view_change, names="value")
        self._slider.observe(self._on_slider_change, names="value")
        self._highlight.observe(self._on_highlight_change, names="value")
        return [[self._shape_box, self._op_menu, self._highlight, self._slider], self._picture, self._text]

    def _sync_controls(self) -> None:
        with self._moving_controls():
            self._shape_box.value = ", ".join(map(str, self.shape))
            self._op_menu.value = self.op
            self._slider.max = max(0, self.info.numel - 1)
            if self.element is not None:  # with no highlight the slider stays put, ready to highlight again
                self._slider.value = self.element
            self._highlight.value = self.element is not None

    def _on_view_change(self, change) -> None:
        if self._syncing:
            return
        try:
            self.set_view(_parse_shape(self._shape_box.value), self._op_menu.value)
        except (ValueError, TypeError) as err:
            self.error = str(err)
            self._show_view()

    def _on_slider_change(self, change) -> None:
        if not self._syncing:
            self.select(self._slider.value)

    def _on_highlight_change(self, change) -> None:
        if not self._syncing:
            self.select(self._slider.value if self._highlight.value else None)

    def _refresh(self) -> None:
        self._sync_controls()
        self._show_view()

    def _show_view(self) -> None:
        if self.error is not None:
            self._text.value = widget_error(self.error)
            return
        self._picture.value = widget_picture(self._zoomed(self.figure()).svg)
        self._text.value = (
            "<pre style='margin:4px 0;max-height:16em;overflow:auto'>" + html.escape(self.table()) + "</pre>"
        )

    def __repr__(self) -> str:
        return f"StrideExplorer(shape={self.shape}, op={self.op!r}, {self.params})"
