"""A roofline plot: the FLOP/s a kernel can reach on a card, given its arithmetic intensity (FLOPs per byte).

A kernel that does ``I`` FLOPs per byte of global memory traffic runs at
most at ``min(peak_flops, I * bandwidth)``: below the *ridge point*
``I = peak_flops / bandwidth`` memory is the limit, above it arithmetic.
``CARDS`` holds the public spec-sheet numbers of consumer NVIDIA cards
(boost-clock FP32 peak and memory bandwidth; sources in ``Card.source``);
a kernel's intensity comes from the simulator's counters
(``LaunchStats.arithmetic_intensity(flops)``).

The figure is made with ``matplotlib.figure.Figure`` (no pyplot), shown as
PNG under IPython like the other plots of :mod:`minigrad.viz`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from minigrad.viz.figure_display import show_figures_as_png

__all__ = ["Card", "CARDS", "attainable_gflops", "plot_roofline", "card_table", "card_label"]


@dataclass(frozen=True)
class Card:
    """A GPU's memory size, memory bandwidth and FP32 peak, from its public spec sheet."""

    name: str
    memory_gb: int
    bandwidth_gbs: float  # GB/s (10^9 bytes per second)
    fp32_tflops: float  # at the boost clock, 2 FLOPs per core per cycle (fused multiply-add)
    source: str

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte above which the card is limited by arithmetic, not by memory."""
        return self.fp32_tflops * 1000 / self.bandwidth_gbs


CARDS: tuple[Card, ...] = (
    Card("GTX 1050 2 GB", 2, 112.1, 1.862, "https://www.techpowerup.com/gpu-specs/geforce-gtx-1050.c2875"),
    Card("GTX 1650 4 GB", 4, 128.1, 2.984, "https://www.techpowerup.com/gpu-specs/geforce-gtx-1650.c3366"),
    Card("RTX 3060 12 GB", 12, 360.0, 12.74, "https://www.techpowerup.com/gpu-specs/geforce-rtx-3060-12-gb.c3682"),
    Card("RTX 4060 8 GB", 8, 272.0, 15.11, "https://www.techpowerup.com/gpu-specs/geforce-rtx-4060.c4107"),
)
"""Consumer cards learners own (TechPowerUp GPU database, which lists NVIDIA's reference specifications)."""


def attainable_gflops(card: Card, intensity: float) -> float:
    """The roofline: ``min(peak, intensity * bandwidth)`` in GFLOP/s."""
    if not intensity > 0:
        raise ValueError(f"attainable_gflops: intensity must be a positive number of FLOPs per byte, got {intensity!r}")
    return min(card.fp32_tflops * 1000, intensity * card.bandwidth_gbs)


def card_table(cards: Sequence[Card] = CARDS) -> str:
    """The cards as a Markdown table: memory, bandwidth, FP32 peak, ridge point."""
    rows = ["| card | memory | bandwidth | FP32 peak | ridge point |", "|---|---|---|---|---|"]
    for c in cards:
        rows.append(f"| {c.name} | {c.memory_gb} GB | {c.bandwidth_gbs:g} GB/s | {c.fp32_tflops:.3g} TFLOP/s "
                    f"| {c.ridge_point:.1f} FLOP/B |")
    return "\n".join(rows)


def card_label(card: Card) -> str:
    """A card as the chapter's table writes it: name, bandwidth in GB/s, FP32 peak in TFLOP/s (3 digits)."""
    return f"{card.name} ({card.bandwidth_gbs:g} GB/s, {card.fp32_tflops:.3g} TFLOP/s)"


def _merged(kernels: dict[str, float], close: float = 1.25) -> list[tuple[list[str], float]]:
    """Kernels in order of intensity, those within a factor ``close`` of each other under one label."""
    groups: list[tuple[list[str], float]] = []
    for name, intensity in sorted(kernels.items(), key=lambda item: item[1]):
        if groups and intensity <= groups[-1][1] * close:
            groups[-1][0].append(name)
        else:
            groups.append(([name], intensity))
    return groups


# Where a marker's number may go, in points from the marker, tried in this order: close first, then farther out.
NUMBER_OFFSETS = tuple(
    (r * dx, r * dy)
    for r in (5, 9, 14, 20, 28)
    for dx, dy in ((1, -1), (-1, 1), (1, 1), (-1, -1), (0, -1.4), (0, 1.4), (1.4, 0), (-1.4, 0))
)
KEY_WRAP = (100, 80, 64, 52, 44, 36, 30)  # characters a key line may take, tried in turn until the key fits the axes


def plot_roofline(kernels: dict[str, float], cards: Sequence[Card] = CARDS, ax=None,
                  title: str = "Roofline: attainable FP32 throughput",
                  xlabel: str = "arithmetic intensity (FLOPs per byte of global memory traffic)") -> Figure:
    """One roof per card (log-log) and a marker per kernel at its intensity (``{name: FLOPs per byte}``).

    Each marker carries a number (kernels of nearly the same intensity share
    one), and a key in the upper-left corner names them with their
    intensities; the legend, in the lower-right corner, writes each card as
    the chapter's table does.

    Invariant: the numbers, the key and the legend lie inside the axes and
    overlap neither each other nor the markers, and the key sits above the
    roofs. A number goes to the first place around its marker where that
    holds (one clear of the roofs if there is one); where none does, markers
    closer than that share a number.
    """
    show_figures_as_png()
    if ax is None:
        figure = Figure(figsize=(7.5, 4.6))
        ax = figure.add_subplot()
    else:
        figure = ax.figure
    low = min([0.05, *kernels.values()]) / 2
    high = max([100.0, *kernels.values()]) * 2
    intensities = np.geomspace(low, high, 200)
    colours = ["#8a94a3", "#e07b39", "#3b7dd8", "#3f9e5a", "#8a5cc7"]
    roofs = []
    for card, colour in zip(cards, colours * 4):
        roof = [attainable_gflops(card, i) for i in intensities]
        roofs.append(np.column_stack([intensities, roof]))
        ax.loglog(intensities, roof, color=colour, lw=1.8, label=card_label(card))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("attainable GFLOP/s")
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")  # the empty corner under the flat roofs
    if kernels and cards:
        _mark_kernels(ax, kernels, min(cards, key=lambda c: c.bandwidth_gbs), max(c.fp32_tflops for c in cards), roofs)
    return figure


def _mark_kernels(ax, kernels: dict[str, float], slowest: Card, top_tflops: float, roofs: list) -> None:
    """The kernels' markers on the lowest roof, their numbers, and the key that names them (see ``plot_roofline``)."""
    renderer = ax.figure._get_renderer()
    close = 1.25
    while True:
        ax.set_ylim(top=30 * top_tflops * 1000)  # head room above the roofs for the key
        groups = _merged(kernels, close)
        artists = []
        for names, intensity in groups:
            artists.append(ax.axvline(intensity, color="#4b5563", lw=0.8, ls=":"))
            artists += ax.plot([intensity], [attainable_gflops(slowest, intensity)], "o", color="#1f2937", ms=5)
        key = _draw_key(ax, kernels, groups, roofs, renderer)
        if key is not None and _place_numbers(ax, groups, slowest, roofs, key, renderer) or len(groups) == 1:
            return
        for artist in artists + ([key] if key is not None else []):
            artist.remove()
        close *= 1.25


def _span(kernels: dict[str, float], names: list[str]) -> str:
    """The intensities of a group of kernels: ``0.17``, or ``0.2–0.32`` when they differ at two digits."""
    low, high = f"{min(kernels[n] for n in names):.2g}", f"{max(kernels[n] for n in names):.2g}"
    return low if low == high else f"{low}–{high}"


def _draw_key(ax, kernels, groups, roofs, renderer):
    """The key in the upper-left corner, its lines wrapped to fit the axes, the y axis raised so that it clears the roofs.

    None (and no key drawn) when it cannot clear them: the key is too tall.
    """
    import textwrap

    entries = [(f"{n}  ", f"{' / '.join(names)}: {_span(kernels, names)} FLOP/B") for n, (names, _) in enumerate(groups, 1)]
    axes = ax.get_window_extent(renderer)
    for width in KEY_WRAP:
        lines = [textwrap.fill(text, width, initial_indent=lead, subsequent_indent=" " * len(lead)) for lead, text in entries]
        key = ax.text(0.02, 0.97, "\n".join(lines), transform=ax.transAxes, fontsize=8, va="top", ha="left",
                      color="#1f2937", bbox={"boxstyle": "round,pad=0.4", "fc": "white", "ec": "#d1d5db"})
        if key.get_window_extent(renderer).x1 <= axes.x1 or width == KEY_WRAP[-1]:
            break
        key.remove()
    for _ in range(4):  # raise the top of the y axis until the key's bottom is above every roof below it
        box = key.get_window_extent(renderer)
        right, bottom = ax.transData.inverted().transform((box.x1, box.y0))
        wanted = 1.3 * max(float(np.interp(np.log(right), np.log(r[:, 0]), r[:, 1])) for r in roofs)  # roofs rise
        if bottom >= wanted:
            return key
        fraction = ax.transAxes.inverted().transform((box.x1, box.y0))[1]  # of the axes' height, under the key
        if fraction <= 0.25:
            break
        y_low, _ = ax.get_ylim()
        ax.set_ylim(y_low, y_low * (wanted / y_low) ** (1 / fraction))
    key.remove()
    return None


def _place_numbers(ax, groups, slowest: Card, roofs: list, key, renderer) -> bool:
    """Each group's number beside its marker, clear of every other label and marker; False (none drawn) if one finds no place."""
    figure = ax.figure
    axes = ax.get_window_extent(renderer)
    taken = [key.get_window_extent(renderer), ax.get_legend().get_window_extent(renderer)]
    if taken[0].overlaps(taken[1]) or taken[0].y0 < axes.y0:
        return False
    centres = ax.transData.transform([(i, attainable_gflops(slowest, i)) for _, i in groups])
    radius = 2.5 * figure.dpi / 72 + 1  # the marker's (5 points across), and a pixel
    taken += [Bbox.from_extents(x - radius, y - radius, x + radius, y + radius) for x, y in centres]
    numbers = []
    for number, ((_, intensity), (x, y)) in enumerate(zip(groups, centres), start=1):
        label = ax.annotate(str(number), (intensity, attainable_gflops(slowest, intensity)), fontsize=8,
                            fontweight="bold", color="#1f2937", xytext=(0, 0), textcoords="offset points",
                            ha="center", va="center")
        fallback = None
        for offset in NUMBER_OFFSETS:
            label.set_position(offset)
            box = label.get_window_extent(renderer)
            inside = axes.x0 <= box.x0 and box.x1 <= axes.x1 and axes.y0 <= box.y0 and box.y1 <= axes.y1
            if not inside or any(box.overlaps(other) for other in taken):
                continue
            if not _crosses(box, roofs, ax):
                fallback = offset
                break
            fallback = fallback or offset
        if fallback is None:
            for made in numbers + [label]:
                made.remove()
            return False
        label.set_position(fallback)
        taken.append(label.get_window_extent(renderer))
        numbers.append(label)
    return True


def _crosses(box, roofs, ax) -> bool:
    """Whether a roof passes through ``box`` (display coordinates)."""
    for roof in roofs:
        xy = ax.transData.transform(roof)
        inside = (xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1)
        if inside.any():
            ys = np.interp([box.x0, box.x1], xy[:, 0], xy[:, 1])
            segment = np.concatenate([ys, xy[inside, 1]])
            if segment.min() <= box.y1 and segment.max() >= box.y0:
                return True
    return False

