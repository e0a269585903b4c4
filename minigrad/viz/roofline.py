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


def plot_roofline(kernels: dict[str, float], cards: Sequence[Card] = CARDS, ax=None,
                  title: str = "Roofline: attainable FP32 throughput",
                  xlabel: str = "arithmetic intensity (FLOPs per byte of global memory traffic)") -> Figure:
    """One roof per card (log-log) and a marker per kernel at its intensity (``{name: FLOPs per byte}``).

    Each marker carries a number (kernels of nearly the same intensity share
    one), and a key in the empty upper-left corner names them with their
    intensities: long names never collide with each other or with the
    roofs. The legend, in the empty lower-right corner, writes each card as
    the chapter's table does.
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
    for card, colour in zip(cards, colours * 4):
        roof = [attainable_gflops(card, i) for i in intensities]
        ax.loglog(intensities, roof, color=colour, lw=1.8, label=card_label(card))
    slowest = min(cards, key=lambda c: c.bandwidth_gbs) if cards else None
    key = []
    for number, (names, intensity) in enumerate(_merged(kernels), start=1):
        ax.axvline(intensity, color="#4b5563", lw=0.8, ls=":")
        key.append(f"{number}  {' / '.join(names)}: {intensity:.2g} FLOP/B")
        if slowest is not None:  # the marker sits on the lowest roof, its number alternately below and above
            y = attainable_gflops(slowest, intensity)
            ax.plot([intensity], [y], "o", color="#1f2937", ms=5)
            below = number % 2 == 1
            ax.annotate(str(number), (intensity, y), fontsize=8, fontweight="bold", color="#1f2937",
                        xytext=(4, -5 if below else 5), textcoords="offset points", va="top" if below else "bottom")
    if key:  # the kernels' names in the corner above the roofs, with head room made for them
        ax.set_ylim(top=30 * max(card.fp32_tflops * 1000 for card in cards) if cards else None)
        ax.text(0.02, 0.97, "\n".join(key), transform=ax.transAxes, fontsize=8, va="top", ha="left",
                color="#1f2937", bbox={"boxstyle": "round,pad=0.4", "fc": "white", "ec": "#d1d5db"})
    ax.set_xlabel(xlabel)
    ax.set_ylabel("attainable GFLOP/s")
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")  # the other empty corner: under the flat roofs
    return figure
