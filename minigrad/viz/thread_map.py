"""Which thread writes which element: a 1-D launch of ``blocks x threads`` over an array of ``n`` elements.

Thread ``t`` of block ``b`` has the global index ``g = b * threads + t``
(``jit.grid(1)``). Without a grid-stride loop it handles element ``g`` if
``g < n`` and idles otherwise, so elements from ``blocks * threads`` on are
never touched. With a grid-stride loop it handles ``g``, ``g + G``,
``g + 2 G``, ... below ``n``, where ``G = blocks * threads`` (``jit.gridsize(1)``):
each *pass* of the grid covers ``G`` consecutive elements, and only the last
pass can leave threads idle.

The figure draws one row of cells per pass: cell ``(pass, g)`` is element
``pass * G + g``, coloured by its block and labelled with ``b.t``; cells past
``n`` are idle threads (grey, dashed), elements no thread reaches are red.

Invariants
- ``thread_assignment`` is plain Python and agrees with running a
  grid-stride kernel on the simulator (tests check it); the figure is
  byte-deterministic.
- ``ThreadMap`` is a thin ipywidgets shell (sliders for n, blocks, threads and
  a grid-stride switch) around ``draw_thread_map``; without a kernel the
  static figure shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from minigrad.viz.graph_svg import PALETTE, TEXT, TEXT_SOFT, SVGFigure, _element, _text
from minigrad.viz.widget_frame import WidgetFrame, widget_error

__all__ = ["ThreadAssignment", "thread_assignment", "draw_thread_map", "ThreadMap", "MAX_ELEMENTS"]

MAX_ELEMENTS = 512  # beyond that the cells are too small to read
CELL_W, CELL_H, GAP = 30, 22, 3
LEFT, TOP, MARGIN = 66, 40, 10
BLOCK_COLOURS = ("blue", "green", "orange", "purple", "yellow")
IDLE_STYLE = ("#f6f7f9", "#b8c1cc")
SLIDER_STYLE = {"description_width": "initial"}
"""Each slider's label as wide as its text: ipywidgets' fixed default width cut "threads/block" short."""
MISSED_STYLE = PALETTE["red"]


@dataclass(frozen=True)
class ThreadAssignment:
    """The work of every thread of a 1-D launch.

    ``writer[i]`` is ``(block, thread)`` of the thread that handles element
    ``i`` (None: no thread does); ``elements[g]`` lists the elements of the
    thread with global index ``g``, in the order it handles them.
    """

    n: int
    blocks: int
    threads: int
    grid_stride: bool
    writer: tuple[tuple[int, int] | None, ...]
    elements: tuple[tuple[int, ...], ...]

    @property
    def grid_size(self) -> int:
        return self.blocks * self.threads

    @property
    def passes(self) -> int:
        """Rows of the picture: passes of the grid over the array (1 without a grid-stride loop)."""
        return max(1, -(-self.n // self.grid_size)) if self.grid_stride else 1

    @property
    def idle_threads(self) -> int:
        return sum(1 for work in self.elements if not work)

    @property
    def idle_in_last_pass(self) -> int:
        """Threads with nothing to do in the grid's last pass over the array."""
        return self.passes * self.grid_size - self.n if self.grid_stride else max(0, self.grid_size - self.n)

    @property
    def missed(self) -> int:
        """Elements no thread handles (only without a grid-stride loop)."""
        return sum(1 for w in self.writer if w is None)

    def summary(self) -> str:
        lines = [
            f"{self.blocks} blocks x {self.threads} threads = {self.grid_size} threads for n = {self.n} elements"
            + (" (grid-stride loop)" if self.grid_stride else " (one element per thread)"),
            f"  busiest thread handles {max(len(w) for w in self.elements)} elements; "
            f"{self.idle_in_last_pass} threads idle in the last pass ({self.idle_threads} never get an element)",
        ]
        if self.missed:
            lines.append(f"  {self.missed} elements are never written: the grid is too small without a grid-stride loop")
        return "\n".join(lines)


def thread_assignment(n: int, blocks: int, threads: int, grid_stride: bool = True) -> ThreadAssignment:
    """Who handles what in a launch of ``blocks x threads`` threads over ``n`` elements."""
    for name, value, low in (("n", n, 1), ("blocks", blocks, 1), ("threads", threads, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"thread_assignment: {name} must be an int >= {low}, got {value!r}")
    grid_size = blocks * threads
    writer: list[tuple[int, int] | None] = [None] * n
    elements = []
    for g in range(grid_size):
        mine = list(range(g, n, grid_size)) if grid_stride else ([g] if g < n else [])
        for i in mine:
            writer[i] = divmod(g, threads)
        elements.append(tuple(mine))
    return ThreadAssignment(n, blocks, threads, grid_stride, tuple(writer), tuple(elements))


def _block_style(block: int) -> tuple[str, str]:
    return PALETTE[BLOCK_COLOURS[block % len(BLOCK_COLOURS)]]


def draw_thread_map(n: int, blocks: int, threads: int, grid_stride: bool = True) -> SVGFigure:
    """The figure described in the module docstring (at most ``MAX_ELEMENTS`` cells)."""
    plan = thread_assignment(n, blocks, threads, grid_stride)
    rows = plan.passes if grid_stride else max(1, -(-n // plan.grid_size))
    if rows * plan.grid_size > MAX_ELEMENTS:
        raise ValueError(
            f"draw_thread_map: {rows} rows of {plan.grid_size} threads is more than {MAX_ELEMENTS} cells; "
            f"pick fewer blocks, threads or elements"
        )
    parts = []
    width = LEFT + plan.grid_size * CELL_W + (blocks - 1) * GAP + MARGIN
    for b in range(blocks):  # block headers
        x0 = LEFT + b * (threads * CELL_W + GAP)
        fill, stroke = _block_style(b)
        parts.append(_element("rect", {"fill": fill, "height": 18, "stroke": stroke, "width": threads * CELL_W - 2,
                                       "x": x0, "y": TOP - 24}))
        parts.append(_text(f"block {b}", x0 + threads * CELL_W / 2, TOP - 11, anchor="middle", size=10))
    parts.append(_text("blockIdx", MARGIN, TOP - 11, fill=TEXT_SOFT, size=10))
    for r in range(rows):
        y = TOP + r * (CELL_H + 4)
        label = f"pass {r}" if grid_stride else ("threads" if r == 0 else "no thread")
        parts.append(_text(label, MARGIN, y + 15, fill=TEXT_SOFT, size=10))
        for g in range(plan.grid_size):
            b, t = divmod(g, threads)
            x = LEFT + g * CELL_W + b * GAP
            i = r * plan.grid_size + g
            if i < n and plan.writer[i] is not None:
                fill, stroke = _block_style(b)
                parts.append(_element("rect", {"fill": fill, "height": CELL_H - 2, "stroke": stroke,
                                               "width": CELL_W - 2, "x": x, "y": y}))
                parts.append(_text(f"{i}", x + CELL_W / 2 - 1, y + 10, anchor="middle", size=9, fill=TEXT))
                parts.append(_text(f"{b}.{t}", x + CELL_W / 2 - 1, y + 19, anchor="middle", size=7, fill=TEXT_SOFT))
            elif i < n:
                fill, stroke = MISSED_STYLE
                parts.append(_element("rect", {"fill": fill, "height": CELL_H - 2, "stroke": stroke,
                                               "width": CELL_W - 2, "x": x, "y": y}))
                parts.append(_text(f"{i}", x + CELL_W / 2 - 1, y + 14, anchor="middle", size=9))
            elif r == rows - 1:
                fill, stroke = IDLE_STYLE
                parts.append(_element("rect", {"fill": fill, "height": CELL_H - 2, "stroke": stroke,
                                               "stroke-dasharray": "3 2", "width": CELL_W - 2, "x": x, "y": y}))
                parts.append(_text("idle", x + CELL_W / 2 - 1, y + 14, anchor="middle", size=8, fill=TEXT_SOFT))
    y = TOP + rows * (CELL_H + 4) + 6
    legend = ("cell: element index, and block.thread that writes it;  grey: idle thread;  red: element no thread writes")
    parts.append(_text(legend, MARGIN, y + 10, fill=TEXT_SOFT, size=10))
    for k, line in enumerate(plan.summary().splitlines()):
        parts.append(_text(line, MARGIN, y + 28 + 14 * k, size=11))
    height = y + 28 + 14 * len(plan.summary().splitlines()) + MARGIN
    width = max(width, 7 * len(legend) * 10 / 12 + 2 * MARGIN, 7.2 * max(map(len, plan.summary().splitlines())) + 2 * MARGIN)
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, height)


class ThreadMap(WidgetFrame):
    """Sliders for n, blocks and threads per block and a grid-stride switch over ``draw_thread_map``.

    ``figure()`` and ``assignment()`` work without ipywidgets; a rendered
    notebook without a kernel shows the static figure of the starting values.
    """

    def __init__(self, n: int = 40, blocks: int = 2, threads: int = 8, grid_stride: bool = True):
        draw_thread_map(n, blocks, threads, grid_stride)  # validates
        self.n, self.blocks, self.threads, self.grid_stride = n, blocks, threads, grid_stride

    def set(self, n: int | None = None, blocks: int | None = None, threads: int | None = None,
            grid_stride: bool | None = None) -> None:
        """Change the launch (None keeps a value); raises ValueError for a picture too large to draw."""
        current = (self.n, self.blocks, self.threads, self.grid_stride)
        wanted = tuple(c if v is None else v for v, c in zip((n, blocks, threads, grid_stride), current))
        draw_thread_map(*wanted)
        self.n, self.blocks, self.threads, self.grid_stride = wanted
        self._redraw()

    def assignment(self) -> ThreadAssignment:
        return thread_assignment(self.n, self.blocks, self.threads, self.grid_stride)

    def figure(self) -> SVGFigure:
        return draw_thread_map(self.n, self.blocks, self.threads, self.grid_stride)

    def _rows(self, widgets) -> list:
        self._n = widgets.IntSlider(value=self.n, min=1, max=96, description="n elements", style=SLIDER_STYLE)
        self._blocks = widgets.IntSlider(value=self.blocks, min=1, max=4, description="blocks", style=SLIDER_STYLE)
        self._threads = widgets.IntSlider(value=self.threads, min=1, max=16, description="threads/block",
                                          style=SLIDER_STYLE)
        self._stride = widgets.Checkbox(value=self.grid_stride, description="grid-stride loop", indent=False)
        self._message = widgets.HTML()
        for control in (self._n, self._blocks, self._threads, self._stride):
            control.observe(self._on_change, names="value")
        return [[self._n, self._blocks], [self._threads, self._stride], self._picture, self._message]

    def _on_change(self, change) -> None:
        try:
            self.set(self._n.value, self._blocks.value, self._threads.value, self._stride.value)
            self._message.value = ""
        except ValueError as err:
            self._message.value = widget_error(str(err))

    def __repr__(self) -> str:
        return f"ThreadMap(n={self.n}, blocks={self.blocks}, threads={self.threads}, grid_stride={self.grid_stride})"
