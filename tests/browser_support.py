"""What the browser tests share: finding Chromium, JupyterLab's settings and server, and the page-side probes.

Every helper skips (never fails) when the browser check's needs are missing:
JupyterLab (``pip install -e '.[lab]'``), Playwright's Python package
(``pip install playwright``) and a Chromium or Chrome binary on the PATH
(Playwright's own browser download is not needed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

WAIT = 120_000  # ms: generous, for a loaded 2-core machine; every wait is on a condition, never a sleep
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
KERNEL_IDLE = """() => {
    const session = window.jupyterapp?.shell?.currentWidget?.sessionContext?.session;
    return session?.kernel?.status === 'idle' && session.kernel.connectionStatus === 'connected';
}"""
APP_EXPOSED = "() => window.jupyterapp !== undefined"  # the server runs with --LabApp.expose_app_in_browser=True
APP_RESTORED = "async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }"  # every plugin active
OPEN_DOCUMENT = """async (path) => {
    const widget = await window.jupyterapp.commands.execute('docmanager:open', {path});
    await widget.context.ready;
    return widget.id;
}"""


def browser_or_skip() -> str:
    """The Chromium binary to drive, or a skip saying what to install."""
    pytest.importorskip("playwright.sync_api", reason="Playwright is not installed here")
    if not (Path(sys.executable).parent / "jupyter-lab").exists():
        pytest.skip("JupyterLab is not installed here")
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    pytest.skip("no Chromium or Chrome binary on PATH (Debian or Ubuntu: apt-get install chromium)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_environment(home: Path) -> dict[str, str]:
    """A server environment with its own home: no user settings, signatures or news; every cell rendered."""
    settings = home / "lab-settings"
    for plugin, values in {
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},  # render every cell, not only the visible ones
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},  # no pop-up over the page
    }.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return dict(os.environ, HOME=str(home), JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTER_DATA_DIR=str(home / "data"),
                JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTER_CONFIG_DIR=str(home / "config"))


def wait_for_server(server: subprocess.Popen, url: str, token: str = "", log: Path | None = None, seconds: int = 120) -> None:
    """Return once the Jupyter server at ``url`` answers; fail with its log if it exits or never answers."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    output = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    pytest.fail(f"JupyterLab did not start (exit status {server.poll()}):\n{output}")


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=30)


def open_lab(page, url: str, token: str = "") -> None:
    """Load JupyterLab (a fresh layout) in ``page`` and return once every plugin is active."""
    page.goto(f"{url}/lab?reset&token={token}", timeout=WAIT)
    page.wait_for_function(APP_EXPOSED, timeout=WAIT)
    page.evaluate(APP_RESTORED)


def open_document(page, path: str) -> str:
    """Open ``path`` (relative to the server's root) as JupyterLab would on a double click; returns its widget id."""
    return page.evaluate(OPEN_DOCUMENT, path)


def _chapters_conftest():
    spec = importlib.util.spec_from_file_location("chapters_data_needs", Path(__file__).resolve().parents[1] / "chapters" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def missing_data(notebook: Path) -> str | None:
    """Why the data ``notebook`` needs (its metadata says which) is not on this machine, or None: as nbval skips it."""
    chapters = _chapters_conftest()
    reasons = [r for r in map(chapters.missing_data, chapters.notebook_needs(notebook)) if r]
    return "; ".join(reasons) or None


@contextmanager
def chromium_browser():
    """One Chromium, driven by Playwright, for the tests of a module (each opens its own pages); skips as above."""
    executable = browser_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
