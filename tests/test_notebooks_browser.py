"""In a real browser: chapters opened in JupyterLab show their figures, and figures fit the output width.

Each chapter opened without running it (untrusted) shows its figures, none
wider than its output area. A small notebook with chapter 04's wide graphs
and chapter 01's tall stepper, run in the browser (trusted outputs, live
widgets), shows every figure within the output width at 1,400 and 1,000 px.

Skipped unless JupyterLab, Playwright (``pip install playwright``) and a
Chromium or Chrome binary are installed; Playwright's own browser download
is not needed. ``MINIGRAD_SCREENSHOTS=DIR`` keeps a screenshot of every figure as shown.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser_support import KERNEL_IDLE, browser_or_skip, free_port, lab_environment, stop, wait_for_server

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
FIGURE_TEXTS = ("SVGFigure(", "VBox(", "<Figure size")

# Every output area of the notebook: is it an image that loaded, what text does it show, how far do its
# pictures (an <img>, or an <svg> not inside another) reach past the area's right edge?
READ_OUTPUTS = """() => [...document.querySelectorAll('.jp-OutputArea-output')].map(o => {
    const img = o.querySelector('img');
    const right = o.getBoundingClientRect().right;
    const pictures = [...o.querySelectorAll('img, svg')].filter(p => !p.parentElement.closest('svg'));
    return {image: img ? img.complete && img.naturalWidth > 0 : false, text: o.innerText.slice(0, 80),
            pictures: pictures.map(p => {
                const box = p.getBoundingClientRect();
                return {tag: p.tagName.toLowerCase(), width: box.width, height: box.height, past_right: box.right - right};
            }),
            scroll_boxes: [...o.querySelectorAll('.widget-html-content > div')].map(d => ({height: d.getBoundingClientRect().height}))};
})"""
FIRST_ERROR = "document.querySelector('[data-mime-type=\"application/vnd.jupyter.error\"]')"
ALL_CELLS_RAN = f"""() => {{
    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.innerText);
    return (prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p))) || {FIRST_ERROR} !== null;
}}"""  # every cell ran, or one failed (run-all stops there)
READ_ERROR = f"() => {FIRST_ERROR}?.innerText ?? null"
PROBE = "figures_fit.ipynb"
# Chapter 04's graph, stepper widget and static steps (wrapped into rows of at most 900 px); a scalar stepper's static steps
# (chapter 01, 1,245 px tall); a top-to-bottom stepper whose widget frame is taller than the window.
PROBE_CELLS = [
    """import minigrad.tensor as mt
from minigrad.scalar import MLP
from minigrad.viz import BackpropStepper, TensorBackpropStepper, draw_tensor_graph
mt.manual_seed(0)
x, W, b = mt.randn(4, 3), mt.randn(3, 2, requires_grad=True), mt.zeros(2, requires_grad=True)
h = (x @ W + b).relu()
loss = (h * h).sum()
names = {"x": x, "W": W, "b": b, "h": h, "loss": loss}""",
    "draw_tensor_graph(loss, names)",
    "stepper = TensorBackpropStepper(loss, names)\nstepper",
    "stepper.static_figure([0, 2, stepper.last_step])",
    "scalar = BackpropStepper(MLP(2, [2, 1])([1.0, -2.0]))\nscalar.static_figure(list(range(0, scalar.last_step + 1, 4)))",
    "TensorBackpropStepper(loss, names, rankdir='TB')",
]


def _expected_figures(path: Path) -> int:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum("image/png" in o.get("data", {}) for c in cells for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    browser = browser_or_skip()
    served = tmp_path_factory.mktemp("chapters")
    for path in CHAPTERS:  # a copy: nothing the server does can touch the committed notebooks
        shutil.copy(path, served / path.name)
    home = tmp_path_factory.mktemp("home")  # no notebook signatures: every chapter opens untrusted
    env = lab_environment(home)
    cells = [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in PROBE_CELLS]
    kernel = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    (served / PROBE).write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4,
                                            "nbformat_minor": 5}), encoding="utf-8")
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter"), "lab", "--allow-root", "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.port_retries=0",
         "--LabApp.expose_app_in_browser=True", str(served)],
        cwd=served, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(server, url)
        yield url, browser
    finally:
        stop(server)


@contextlib.contextmanager
def _chapter_page(lab, name: str, width: int = 1400):
    """A Chromium page showing chapter ``name`` (opened untrusted, not run), closed afterwards."""
    from playwright.sync_api import sync_playwright

    url, executable = lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 1000})
            page.goto(f"{url}/lab/tree/{name}?reset", timeout=120_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            yield page
        finally:
            browser.close()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_opened_untrusted_shows_its_figures(lab, path):
    with _chapter_page(lab, path.name) as page:
        page.wait_for_timeout(3000)  # let the outputs and their images settle
        outputs = page.evaluate(READ_OUTPUTS)
        if folder := os.environ.get("MINIGRAD_SCREENSHOTS"):
            Path(folder).mkdir(parents=True, exist_ok=True)
            figures = page.locator(".jp-OutputArea-output:has(img)")
            for i in range(figures.count()):
                figures.nth(i).screenshot(path=str(Path(folder) / f"{path.stem}_{i:02d}.png"))
    shown_as_text = [o["text"] for o in outputs if not o["image"] and o["text"].startswith(FIGURE_TEXTS)]
    assert not shown_as_text, f"{path.name}: figures shown as text: {shown_as_text}"
    assert sum(o["image"] for o in outputs) >= _expected_figures(path), f"{path.name}: some figures did not load"
    assert not _past_the_right_edge(outputs), f"{path.name}: figures wider than the output: {_past_the_right_edge(outputs)}"


# Chapter 04's backprop stepper pictures (the widget's static figure and the static steps): each one's width
# as shown, and as drawn (the PNG is rendered at PNG_ZOOM times the figure's size).
READ_STEPPER_PICTURES = """() => [...document.querySelectorAll('.jp-CodeCell')]
    .filter(c => /TensorBackpropStepper\\(loss|stepper\\.static_figure\\(/.test(c.querySelector('.jp-InputArea').innerText))
    .map(c => c.querySelector('.jp-OutputArea-output img'))
    .filter(img => img !== null && img.complete && img.naturalWidth > 0)
    .map(img => ({shown: img.getBoundingClientRect().width, drawn: img.naturalWidth / %d}))"""


def test_chapter_04_stepper_node_text_is_readable_at_1400_px(lab):
    """On a projector at 1,400 px, the stepper's node text is at least 11 px high (it was 7.5 px)."""
    from minigrad.viz.graph_svg import FONT_SIZE
    from minigrad.viz.svg_png import PNG_ZOOM

    with _chapter_page(lab, "04_tensor_autograd.ipynb") as page:
        read = READ_STEPPER_PICTURES % PNG_ZOOM
        page.wait_for_function(f"() => ({read})().length >= 2", timeout=60_000)
        pictures = page.evaluate(read)
    text_px = [FONT_SIZE * p["shown"] / p["drawn"] for p in pictures]
    assert len(pictures) == 2, f"expected the stepper widget's figure and its static steps, got {pictures}"
    assert min(text_px) >= 11, f"chapter 04's stepper node text is {min(text_px):.1f} px at 1,400 px: {pictures}"


def _past_the_right_edge(outputs) -> list[dict]:
    return [p for o in outputs for p in o["pictures"] if p["past_right"] > 1]


@pytest.mark.parametrize("width", [1400, 1000])
def test_figures_run_in_the_browser_fit_the_output_width(lab, width):
    from playwright.sync_api import sync_playwright

    url, executable = lab
    height = 900
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{url}/lab/tree/{PROBE}?reset", timeout=120_000)
            page.wait_for_function(KERNEL_IDLE, timeout=120_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function(ALL_CELLS_RAN, timeout=180_000)
            error = page.evaluate(READ_ERROR)
            page.wait_for_timeout(3000)  # let the images decode and the widgets render
            outputs = page.evaluate(READ_OUTPUTS)
            if folder := os.environ.get("MINIGRAD_SCREENSHOTS"):
                Path(folder).mkdir(parents=True, exist_ok=True)
                figures = page.locator(".jp-OutputArea-output:has(img), .jp-OutputArea-output:has(svg)")
                for i in range(figures.count()):
                    figures.nth(i).screenshot(path=str(Path(folder) / f"fit_{width}_{i:02d}.png"))
        finally:
            browser.close()
    assert error is None, f"a cell of the probe notebook failed: {error}"
    pictures = [p for o in outputs for p in o["pictures"]]
    assert len(pictures) >= len(PROBE_CELLS) - 1, f"{width} px: expected a picture per figure cell, got {outputs}"
    assert not _past_the_right_edge(outputs), f"{width} px: figures wider than the output: {_past_the_right_edge(outputs)}"
    widget_pictures = [p for p in pictures if p["tag"] == "svg"]
    assert len(widget_pictures) == 2, f"{width} px: the two stepper widgets should show inline SVGs: {outputs}"
    boxes = [box for o in outputs for box in o["scroll_boxes"]]
    assert boxes and all(box["height"] <= 0.85 * height + 1 for box in boxes), (
        f"{width} px: a widget's picture box is taller than 85 % of the window: {boxes}")
    assert max(p["height"] for p in widget_pictures) > max(box["height"] for box in boxes), (
        "the top-to-bottom stepper should be taller than its box (else this does not test the scrolling)")
