"""Render minigrad's SVG figures to PNG: the form a notebook shows them in.

A notebook front end shows a figure as PNG wherever one can be made:

- JupyterLab shows ``image/svg+xml`` inside an ``<img>`` sized by the SVG's
  ``width``/``height``, and its rule that shrinks pictures to the output
  width (``max-width: 100%``) applies to ``svg`` elements and to the ``img``
  of PNG outputs, not to that ``img``: a wide SVG runs off the right edge. A
  PNG shown at the figure's natural size (``png_bundle``'s metadata) is
  shrunk to the output width, trusted or not.
- An untrusted notebook (a fresh clone) and GitHub's viewer do not show SVG.

Invariants
- The fonts come from matplotlib's own DejaVu files, never the system's, so
  a figure looks the same on every machine (and on one with no fonts at all).
- ``svg_png`` returns None, never raises, when the rasterizer (the
  ``resvg-py`` package) is missing or fails: the SVG is shown instead.
- A figure shown as PNG carries, as its ``text/plain``, its size and a digest
  of its SVG: nbval ignores PNG but compares that text, so the committed
  notebooks still pin every figure's exact drawing.
- The PNG is drawn at ``PNG_ZOOM`` times the SVG's size and displayed at the
  SVG's size (the metadata of ``png_bundle``): sharp on high-density screens
  and when shrunk to a narrow output.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from pathlib import Path

__all__ = ["svg_png", "png_bundle", "display_bundle", "figure_summary", "PNG_ZOOM"]

PNG_ZOOM = 2
FONT_FILES = ("DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf", "DejaVuSans.ttf", "DejaVuSans-Bold.ttf")


@lru_cache(maxsize=1)
def _font_files() -> tuple[str, ...]:
    import matplotlib

    folder = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    return tuple(str(folder / name) for name in FONT_FILES if (folder / name).is_file())


def svg_png(svg: str) -> bytes | None:
    """PNG bytes of ``svg`` at ``PNG_ZOOM``x, or None when it cannot be rendered here."""
    try:
        import resvg_py
    except ImportError:
        return None
    try:
        png = resvg_py.svg_to_bytes(
            svg_string=svg,
            skip_system_fonts=True,
            font_files=list(_font_files()),
            font_family="DejaVu Sans Mono",
            monospace_family="DejaVu Sans Mono",
            sans_serif_family="DejaVu Sans",
            zoom=PNG_ZOOM,
        )
    except (ValueError, OSError):
        return None
    return bytes(png)


def png_bundle(svg: str, width: float, height: float) -> tuple[dict[str, str], dict[str, dict]]:
    """(data, metadata) with the base64 PNG of ``svg`` shown at ``width`` x ``height``; empty when not rendered."""
    png = svg_png(svg)
    if png is None:
        return {}, {}
    size = {"width": round(width), "height": round(height)}
    return {"image/png": base64.b64encode(png).decode("ascii")}, {"image/png": size}


def display_bundle(svg: str, width: float, height: float) -> tuple[dict[str, str], dict[str, dict]]:
    """(data, metadata) to show the figure in a notebook: its PNG when one can be made, else the SVG itself.

    Never both: JupyterLab prefers ``image/svg+xml`` and would show it at its
    full width (see the module docstring).
    """
    data, metadata = png_bundle(svg, width, height)
    if not data:
        return {"image/svg+xml": svg}, {}
    return {**data, "text/plain": figure_summary(svg, width, height)}, metadata


def figure_summary(svg: str, width: float, height: float) -> str:
    """A line that names the figure's size and pins its exact SVG (what nbval compares)."""
    digest = hashlib.sha256(svg.encode("utf-8")).hexdigest()[:16]
    return f"<figure {round(width)} x {round(height)} px, SVG sha256 {digest}>"
