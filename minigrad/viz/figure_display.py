"""Show matplotlib Figures made without pyplot as PNG images in IPython.

A ``Figure()`` built without pyplot never wakes the inline backend, so in a
kernel without ``%matplotlib inline`` it shows as ``<Figure size ...>`` text.
``show_figures_as_png`` registers the PNG formatter the inline backend would.

Invariants
- A no-op when IPython is not running (or not even imported): never imports it.
- Idempotent, and it never replaces a formatter that already handles Figure
  (``%matplotlib inline``, possibly set to SVG or retina, keeps its own).
"""

from __future__ import annotations

import io
import sys
from typing import Any

__all__ = ["show_figures_as_png", "figure_png"]

IMAGE_MIMETYPES = ("image/png", "image/svg+xml", "image/jpeg", "application/pdf")


def figure_png(figure, zoom: float = 1.0) -> bytes | None:
    """The figure as PNG bytes, trimmed to what is drawn; None for an empty figure.

    ``zoom``: drawn at ``zoom`` times the figure's dpi (the same picture, more pixels: larger on screen).
    """
    if isinstance(zoom, bool) or not isinstance(zoom, (int, float)) or not 0 < zoom < float("inf"):
        raise ValueError(f"figure_png: zoom must be a positive finite number, got {zoom!r}")
    if not figure.axes and not figure.lines and not figure.texts:
        return None
    buffer = io.BytesIO()
    larger = {} if zoom == 1 else {"dpi": figure.dpi * zoom}  # unzoomed: savefig's own dpi, as always
    figure.savefig(buffer, format="png", bbox_inches="tight", facecolor=figure.get_facecolor(), **larger)
    return buffer.getvalue()


def show_figures_as_png(shell: Any = None) -> bool:
    """Make ``shell`` (default: the running IPython, if any) show Figures as PNG.

    Returns True when it registered the formatter, False when there is no
    shell or a formatter for Figure was already there.
    """
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    if not formatters or "image/png" not in formatters:
        return False
    from matplotlib.figure import Figure

    for mimetype in IMAGE_MIMETYPES:
        if mimetype in formatters and _handles(formatters[mimetype], Figure):
            return False
    formatters["image/png"].for_type(Figure, figure_png)
    return True


def _handles(formatter, cls: type) -> bool:
    try:
        formatter.lookup_by_type(cls)
    except KeyError:
        return False
    return True
