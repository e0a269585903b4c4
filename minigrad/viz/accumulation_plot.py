"""Peak memory against micro-batch size at one effective batch, with a card's capacity line.

``plot_peak_by_micro_batch(points, gpu)`` draws the points of
:func:`minigrad.memory.accumulation.peak_by_micro_batch` (anything with
``micro_batch``, ``steps``, ``peak`` and ``peak_by_category``): at each
micro-batch size a bar stacked by category - the split at the step's peak,
in the segment map's colours - on a log-2 axis, the number of accumulated
micro-batches above it, and the card's usable memory (after the CUDA
context) as a horizontal line. Where the points have ``reserved`` (the
caching allocator's bytes) an outlined bar shows it, and a point is marked as
fitting by its own ``fits(card)`` (the card's answer, in reserved bytes).

Drawn without pyplot (``matplotlib.figure.Figure``), shown as PNG in a notebook.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from minigrad.viz.figure_display import show_figures_as_png
from minigrad.viz.segment_map import CATEGORY_COLOURS

__all__ = ["plot_peak_by_micro_batch"]

MiB = 2**20


def plot_peak_by_micro_batch(points, gpu=None, title: str | None = None) -> Figure:
    """One stacked bar per micro-batch size (largest first, as the points come), the card's capacity as a line.

    ``gpu``: a profile name (``"gtx1050"``) or a ``GPUProfile``; None draws no capacity line.
    """
    points = list(points)
    if not points:
        raise ValueError("plot_peak_by_micro_batch: no points; pass peak_by_micro_batch(...)'s list")
    show_figures_as_png()
    profile = None
    if gpu is not None:
        from minigrad.memory.profiles import get_profile  # viz imports no stage at module level

        profile = get_profile(gpu)
    fig = Figure(figsize=(9.0, 4.2), layout="constrained")
    ax = fig.add_subplot()
    xs = list(range(len(points)))
    categories = [c for c in CATEGORY_COLOURS if any(p.peak_by_category.get(c, 0) for p in points)]
    bottom = [0.0] * len(points)
    for category in categories:
        heights = [p.peak_by_category.get(category, 0) / MiB for p in points]
        ax.bar(xs, heights, bottom=bottom, color=CATEGORY_COLOURS[category], label=category.replace("_", " "),
               width=0.7)
        bottom = [b + h for b, h in zip(bottom, heights)]
    reserved = [getattr(p, "reserved", 0) or 0 for p in points]
    if any(reserved):  # what the caching allocator holds: the card decides on it
        ax.bar(xs, [r / MiB for r in reserved], fill=False, edgecolor="#111827", linewidth=1.0, width=0.8,
               label="reserved (caching allocator)")
    for x, p, r in zip(xs, points, reserved):
        fits = profile is None or (p.fits(profile) if hasattr(p, "fits") else p.peak <= profile.usable_bytes)
        ax.annotate(f"x{p.steps}", (x, max(p.peak, r) / MiB), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=8, color="black" if fits else "#b91c1c")
    if profile is not None:
        ax.axhline(profile.usable_bytes / MiB, color="#b91c1c", linestyle="--", linewidth=1.2,
                   label=f"{profile.short_name}: {profile.usable_bytes / MiB:.0f} MiB usable")
    ax.set_xticks(xs, [str(p.micro_batch) for p in points])
    ax.set_xlabel("micro-batch size (x: micro-batches accumulated per update)")
    ax.set_ylabel("peak of the step (MiB)")
    effective = points[0].micro_batch * points[0].steps
    ax.set_title(title or f"Peak memory at an effective batch of {effective}")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.08)
    return fig
