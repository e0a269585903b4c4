"""Give every committed SVG figure in the chapters its PNG twin, without re-running them.

    python tools/add_figure_pngs.py                 # every chapter
    python tools/add_figure_pngs.py chapters/06_convolutions.ipynb

An SVG output (a figure, or a widget's static fallback) without an
``image/png`` gets the PNG that displaying it would now produce
(``minigrad.viz.svg_png``): the same bytes a re-execution gives, with no other
output touched. JupyterLab shows only the PNG while a notebook is untrusted.
Re-executing a notebook (tools/execute_notebooks.py) gives the same result; like
it, this writes the notebook in JupyterLab's form (see there).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
from execute_notebooks import KernelFacts, kernel_facts, write

from minigrad.viz.svg_png import png_bundle

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def add_pngs(path: Path, facts: KernelFacts) -> int:
    """Add the missing PNGs to ``path`` in place; returns how many were added."""
    notebook = nbformat.read(path, as_version=4)
    added = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/svg+xml" not in data or "image/png" in data:
                continue
            svg = "".join(data["image/svg+xml"])
            root = ET.fromstring(svg)
            png, metadata = png_bundle(svg, float(root.get("width")), float(root.get("height")))
            if not png:
                raise SystemExit("no PNG renderer: pip install resvg-py")
            data.update(png)
            output.setdefault("metadata", {}).update(metadata)
            added += 1
    if added:
        write(notebook, path, facts)
    return added


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
    facts = kernel_facts()
    for path in paths:
        print(f"{path.name}: {add_pngs(path, facts)} PNGs added", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
