"""In a real browser: each chapter opened in JupyterLab without running it (untrusted) shows its figures.

Skipped unless JupyterLab, Playwright (``pip install playwright``) and a
Chromium or Chrome binary are installed; Playwright's own browser download
is not needed. ``MINIGRAD_SCREENSHOTS=DIR`` keeps a screenshot of every figure as shown.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FIGURE_TEXTS = ("SVGFigure(", "VBox(", "<Figure size")

# Every output area of the notebook: is it an image that loaded, and what text does it show?
READ_OUTPUTS = """() => [...document.querySelectorAll('.jp-OutputArea-output')].map(o => {
    const img = o.querySelector('img');
    return {image: img ? img.complete && img.naturalWidth > 0 : false, text: o.innerText.slice(0, 80)};
})"""


def _browser() -> str:
    pytest.importorskip("playwright.sync_api", reason="the browser check needs playwright (pip install playwright)")
    if not (Path(sys.executable).parent / "jupyter-lab").exists():
        pytest.skip("JupyterLab is not installed here (pip install -e '.[lab]')")
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    pytest.skip("no Chromium or Chrome binary on PATH")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _expected_figures(path: Path) -> int:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum("image/png" in o.get("data", {}) for c in cells for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    browser = _browser()
    served = tmp_path_factory.mktemp("chapters")
    for path in CHAPTERS:  # a copy: nothing the server does can touch the committed notebooks
        shutil.copy(path, served / path.name)
    settings = tmp_path_factory.mktemp("lab-settings")
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))  # render every cell, not only the visible ones
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false"}))  # no pop-up over the figures
    home = tmp_path_factory.mktemp("home")  # no notebook signatures: every chapter opens untrusted
    env = dict(os.environ, HOME=str(home), JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"))
    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter"), "lab", "--allow-root", "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=", str(served)],
        cwd=served, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "/api/status", timeout=2)
                break
            except OSError:
                time.sleep(1)
        else:
            pytest.fail("JupyterLab did not start")
        yield url, browser
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_opened_untrusted_shows_its_figures(lab, path):
    from playwright.sync_api import sync_playwright

    url, executable = lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/lab/tree/{path.name}?reset", timeout=120_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            page.wait_for_timeout(3000)  # let the outputs and their images settle
            outputs = page.evaluate(READ_OUTPUTS)
            if folder := os.environ.get("MINIGRAD_SCREENSHOTS"):
                Path(folder).mkdir(parents=True, exist_ok=True)
                figures = page.locator(".jp-OutputArea-output:has(img)")
                for i in range(figures.count()):
                    figures.nth(i).screenshot(path=str(Path(folder) / f"{path.stem}_{i:02d}.png"))
        finally:
            browser.close()
    shown_as_text = [o["text"] for o in outputs if not o["image"] and o["text"].startswith(FIGURE_TEXTS)]
    assert not shown_as_text, f"{path.name}: figures shown as text: {shown_as_text}"
    assert sum(o["image"] for o in outputs) >= _expected_figures(path), f"{path.name}: some figures did not load"
