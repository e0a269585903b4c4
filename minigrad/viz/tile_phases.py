"""The phases of a tiled matmul ``c = a @ b``: which tiles a block stages in shared memory, and the traffic it saves.

``c`` (m x n) is cut into ``tile x tile`` tiles, one per block; block
``(bx, by)`` computes tile row ``by``, tile column ``bx``. Its dot products
run over k in ``ceil(k / tile)`` phases: in phase ``p`` it copies tile
``(by, p)`` of ``a`` and tile ``(p, bx)`` of ``b`` into shared memory, and
every thread then reads a row of one and a column of the other from there.

The figure draws the three matrices at tile resolution: the block's tile of
``c`` (blue), the two tiles it stages in this phase (orange) and those of
earlier phases (green). Below it the traffic: ``tile_traffic`` computes what
a launch moves per phase; with the counters of a simulated launch
(``jit.last_launch_stats()``) the figure prints them next to those numbers, and
next to those of a matmul that reads ``a`` and ``b`` from global memory at
every multiply-add.

Invariants
- ``tile_traffic`` agrees with the simulator's counters for the library's
  ``tiled_matmul_kernel`` (tests check it); the figure is byte-deterministic.
- ``TilePhases`` is a thin ipywidgets shell (block and phase sliders).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minigrad.viz.graph_svg import PALETTE, TEXT, TEXT_SOFT, SVGFigure, _element, _text
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["TileTraffic", "tile_traffic", "draw_tile_phase", "TilePhases"]

CELL, GAP, MARGIN, TOP = 26, 40, 12, 34
CURRENT, DONE, OWN = PALETTE["orange"], PALETTE["green"], PALETTE["blue"]
PLAIN = ("#ffffff", "#c9ced6")
MAX_TILES = 8  # per side of a matrix


@dataclass(frozen=True)
class TileTraffic:
    """What a tiled launch of ``c = a @ b`` (float32) moves; every count in bytes."""

    m: int
    k: int
    n: int
    tile: int

    @property
    def grid(self) -> tuple[int, int]:
        """(blocks along x = tile columns of c, blocks along y = tile rows of c)."""
        return -(-self.n // self.tile), -(-self.m // self.tile)

    @property
    def phases(self) -> int:
        return -(-self.k // self.tile)

    @property
    def global_loads(self) -> int:
        """Each element of a is loaded once per block column, each of b once per block row (padding is not loaded)."""
        gx, gy = self.grid
        return 4 * (gx * self.m * self.k + gy * self.k * self.n)

    @property
    def untiled_global_loads(self) -> int:
        """A matmul without tiles: every multiply-add reads one element of a and one of b from global memory."""
        return 4 * 2 * self.m * self.n * self.k

    @property
    def shared_loads(self) -> int:
        """Every thread of every block reads 2 * tile elements from shared memory per phase."""
        gx, gy = self.grid
        return 4 * gx * gy * self.tile * self.tile * 2 * self.tile * self.phases

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


def tile_traffic(m: int, k: int, n: int, tile: int = 16) -> TileTraffic:
    """The traffic of a tiled matmul of an (m, k) by a (k, n) matrix with ``tile x tile`` tiles."""
    for name, value in (("m", m), ("k", k), ("n", n), ("tile", tile)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"tile_traffic: {name} must be an int >= 1, got {value!r}")
    return TileTraffic(m, k, n, tile)


def _matrix(name: str, rows: int, cols: int, x: float, styles: dict, label: str) -> tuple[list[str], float]:
    parts = [_text(f"{name}  ({label})", x, TOP - 12, size=11)]
    for r in range(rows):
        for c in range(cols):
            fill, stroke = styles.get((r, c), PLAIN)
            parts.append(_element("rect", {"fill": fill, "height": CELL - 2, "stroke": stroke, "width": CELL - 2,
                                           "x": x + c * CELL, "y": TOP + r * CELL}))
    return parts, x + cols * CELL


def _kib(count: float) -> str:
    return f"{count / 1024:,.1f} KiB"


def draw_tile_phase(m: int, k: int, n: int, tile: int = 16, block: tuple[int, int] = (0, 0), phase: int = 0,
                    stats: Any = None) -> SVGFigure:
    """Block ``block = (bx, by)`` in phase ``phase``; ``stats``: a simulated launch's counters to print."""
    traffic = tile_traffic(m, k, n, tile)
    (gx, gy), phases = traffic.grid, traffic.phases
    bx, by = block
    if not (0 <= bx < gx and 0 <= by < gy):
        raise ValueError(f"draw_tile_phase: block {block} outside the grid ({gx}, {gy}) of c's {m} x {n} tiles of {tile}")
    if not 0 <= phase < phases:
        raise ValueError(f"draw_tile_phase: phase {phase} outside 0..{phases - 1} (k = {k}, tile = {tile})")
    if max(gx, gy, phases) > MAX_TILES:
        raise ValueError(f"draw_tile_phase: at most {MAX_TILES} tiles per side; got {gy} x {phases} and {phases} x {gx}")
    a_styles = {(by, p): DONE for p in range(phase)} | {(by, phase): CURRENT}
    b_styles = {(p, bx): DONE for p in range(phase)} | {(phase, bx): CURRENT}
    parts, x = _matrix("a", gy, phases, MARGIN, a_styles, f"{m} x {k}")
    more, x = _matrix("b", phases, gx, x + GAP, b_styles, f"{k} x {n}")
    parts += more
    more, x = _matrix("c", gy, gx, x + GAP, {(by, bx): OWN}, f"{m} x {n}")
    parts += more
    y = TOP + max(gy, phases) * CELL + 16
    per_block_global = 2 * tile * tile * 4
    per_block_shared = tile * tile * 2 * tile * 4
    lines = [
        f"block (bx={bx}, by={by}), phase {phase} of {phases}: stages tile ({by}, {phase}) of a and ({phase}, {bx}) of b",
        f"  this phase, this block: {per_block_global:,} B from global memory into shared memory,",
        f"  then {tile * tile} threads x {2 * tile} reads = {per_block_shared:,} B read from shared memory",
        f"whole launch ({gx} x {gy} blocks, {phases} phases): {_kib(traffic.global_loads)} global loads "
        f"(untiled: {_kib(traffic.untiled_global_loads)}, {traffic.untiled_global_loads / traffic.global_loads:.1f}x more)",
    ]
    if stats is not None:
        lines.append(
            f"  simulator counted: {_kib(stats.global_load_bytes)} global loads, "
            f"{_kib(stats.shared_load_bytes)} shared loads, {stats.barriers} barriers"
        )
    legend = [("this block's tile of c", OWN), ("staged in this phase", CURRENT), ("staged in earlier phases", DONE)]
    lx = MARGIN
    for label, (fill, stroke) in legend:
        parts.append(_element("rect", {"fill": fill, "height": 12, "stroke": stroke, "width": 12, "x": lx, "y": y}))
        parts.append(_text(label, lx + 16, y + 10, size=10, fill=TEXT_SOFT))
        lx += 24 + 6.2 * len(label)
    for i, line in enumerate(lines):
        parts.append(_text(line, MARGIN, y + 32 + 15 * i, size=11, fill=TEXT))
    height = y + 32 + 15 * len(lines) + MARGIN
    width = max(x + MARGIN, lx, 6.7 * max(map(len, lines)) + 2 * MARGIN)
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, height)


class TilePhases(WidgetFrame):
    """Step through the phases of a tiled matmul, block by block (``stats``: a simulated launch's counters)."""

    def __init__(self, m: int = 48, k: int = 64, n: int = 32, tile: int = 16, stats: Any = None):
        self.traffic = tile_traffic(m, k, n, tile)
        self.stats = stats
        self.block, self.phase = (0, 0), 0
        self.figure()  # validates the sizes

    def figure(self) -> SVGFigure:
        t = self.traffic
        return draw_tile_phase(t.m, t.k, t.n, t.tile, self.block, self.phase, self.stats)

    def show(self, block: tuple[int, int] | None = None, phase: int | None = None) -> None:
        """Select a block and/or a phase (raises ValueError outside the launch)."""
        block = self.block if block is None else tuple(block)
        phase = self.phase if phase is None else phase
        t = self.traffic
        draw_tile_phase(t.m, t.k, t.n, t.tile, block, phase)
        self.block, self.phase = block, phase
        self._redraw()

    def _rows(self, widgets) -> list:
        (gx, gy), phases = self.traffic.grid, self.traffic.phases
        self._bx = widgets.IntSlider(value=self.block[0], min=0, max=gx - 1, description="block x")
        self._by = widgets.IntSlider(value=self.block[1], min=0, max=gy - 1, description="block y")
        self._phase = widgets.IntSlider(value=self.phase, min=0, max=phases - 1, description="phase")
        for control in (self._bx, self._by, self._phase):
            control.observe(lambda change: self.show((self._bx.value, self._by.value), self._phase.value),
                            names="value")
        return [[self._bx, self._by, self._phase], self._picture]

    def __repr__(self) -> str:
        t = self.traffic
        return f"TilePhases(m={t.m}, k={t.k}, n={t.n}, tile={t.tile}, block={self.block}, phase={self.phase})"
