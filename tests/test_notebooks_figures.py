"""Every committed figure in the chapters shows without running them: a PNG rides along with each SVG and widget.

JupyterLab does not show SVG (nor widgets) from an untrusted notebook, and a
freshly cloned notebook is untrusted; GitHub's viewer shows no widgets. A PNG
in the same output is shown by both (tests/test_notebooks_browser.py checks
it in a real browser where one is installed).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "chapters").glob("[0-9][0-9]_*.ipynb"))
NEEDS_AN_IMAGE = ("image/svg+xml", "application/vnd.jupyter.widget-view+json")
FIGURE_REPRS = ("SVGFigure(", "<Figure size", "VBox(", "HBox(")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def rich_outputs(path: Path):
    for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        for output in cell.get("outputs", []):
            if "data" in output:
                yield index, output["data"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_committed_figure_carries_a_png(path):
    for index, data in rich_outputs(path):
        text = "".join(data.get("text/plain", ""))
        if any(kind in data for kind in NEEDS_AN_IMAGE) or text.startswith(FIGURE_REPRS):
            assert "image/png" in data, f"{path.name} cell {index}: a figure without a PNG shows as {text[:60]!r} untrusted"
            png = base64.b64decode("".join(data["image/png"]))
            assert png.startswith(PNG_MAGIC) and len(png) > 1000, f"{path.name} cell {index}: not a drawn PNG"


def test_the_chapters_have_figures_to_check():
    assert sum("image/png" in data for path in CHAPTERS for _, data in rich_outputs(path)) >= 30
