"""SVG figures show in notebooks as a PNG at their natural size (JupyterLab shrinks it to the output width;
an untrusted notebook or GitHub shows no SVG), as the SVG itself only where no PNG can be made."""

from __future__ import annotations

import base64
import struct
import sys

from IPython.core.formatters import DisplayFormatter

from minigrad.viz import SVGFigure, draw_layouts
from minigrad.viz.svg_png import PNG_ZOOM, png_bundle, svg_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == PNG_MAGIC and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def test_a_figure_is_displayed_as_a_png_shown_at_the_size_of_the_svg():
    figure = draw_layouts()
    data, metadata = DisplayFormatter().format(figure)
    assert "image/svg+xml" not in data  # JupyterLab would prefer it, in an <img> that does not shrink
    png = base64.b64decode(data["image/png"])
    assert PNG_ZOOM >= 2  # sharp on high-density screens and when shrunk
    assert png_size(png) == (round(figure.width * PNG_ZOOM), round(figure.height * PNG_ZOOM))
    assert metadata["image/png"] == {"width": round(figure.width), "height": round(figure.height)}
    assert data["text/plain"].startswith(f"<figure {round(figure.width)} x {round(figure.height)} px, SVG sha256 ")


def test_the_text_nbval_compares_pins_the_exact_drawing():
    """nbval skips PNG, so the figure's text/plain carries a digest of its SVG: any change to the drawing shows."""
    figure = draw_layouts()
    same = DisplayFormatter().format(draw_layouts())[0]["text/plain"]
    assert DisplayFormatter().format(figure)[0]["text/plain"] == same
    nudged = SVGFigure(figure.body.replace(">", " >", 1), figure.width, figure.height)
    assert DisplayFormatter().format(nudged)[0]["text/plain"] != same


def test_text_is_drawn_with_the_bundled_fonts():
    box = '<rect x="4" y="4" width="112" height="24" fill="#ffffff" stroke="#000000"/>'
    label = '<text x="10" y="21" fill="#000000">grad = 1</text>'
    plain, labelled = SVGFigure(box, 120, 32).png(), SVGFigure(box + label, 120, 32).png()
    assert plain != labelled  # the text is rendered, not dropped for want of a font
    assert SVGFigure(box + label, 120, 32).png() == labelled  # and the same every time


def test_without_a_rasterizer_the_svg_is_still_shown(monkeypatch):
    monkeypatch.setitem(sys.modules, "resvg_py", None)  # import fails as if not installed
    figure = draw_layouts()
    assert svg_png(figure.svg) is None and png_bundle(figure.svg, 1, 1) == ({}, {})
    data, _ = DisplayFormatter().format(figure)
    assert "image/png" not in data and data["image/svg+xml"] == figure.svg
    assert 'style="max-width: 100%; height: auto"' in figure.svg  # an inline <svg> shrinks by itself


def test_markup_the_rasterizer_refuses_gives_no_png():
    assert svg_png("<svg") is None
