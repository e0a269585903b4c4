"""Render minigrad's SVG figures to PNG, so a notebook opened untrusted still shows them.

JupyterLab (and GitHub's notebook view) will not show ``image/svg+xml`` from
an untrusted notebook: a committed chapter would show ``SVGFigure(...)`` text
instead of its picture. A PNG next to the SVG in the same display bundle is
always shown; a front end that may show the SVG still prefers it.

Invariants
- The fonts come from matplotlib's own DejaVu files, never the system's, so
  a figure looks the same on every machine (and on one with no fonts at all).
- ``svg_png`` returns None, never raises, when the rasterizer (the
  ``resvg-py`` package) is missing or fails: the SVG alone is still shown.
- The PNG is drawn at ``PNG_ZOOM`` times the SVG's size and displayed at the
  SVG's size (the metadata of ``png_bundle``). 1 keeps committed notebooks
  small; the SVG itself stays sharp wherever it is shown.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from pathlib import Path

__all__ = ["svg_png", "png_bundle", "PNG_ZOOM"]

PNG_ZOOM = 1
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
