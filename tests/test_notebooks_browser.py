"""In a real browser: every chapter, opened in JupyterLab, shows its figures, runs clean, and its widgets answer.

One JupyterLab server (serving copies of the chapters) and one Chromium page
serve every check. Per chapter, in that page (``CHAPTER_CHECKS`` says what
each chapter's widgets are asked to do):

- opened untrusted (no kernel run yet), its committed figures show as
  images, none wider than its output area;
- opened (its kernel started), it is not marked changed; saved unchanged,
  it keeps its bytes (``tools/execute_notebooks.py --normalize`` is the fix);
- all its cells run, none with an error; every widget renders (none left at
  "Loading widget...");
- each listed control of its widgets, changed as a learner would (a click,
  a key on a slider, a menu choice), changes the widget's picture;
- saved after the run, only outputs and execution counts changed.

A small notebook with chapter 04's wide graphs and chapter 01's tall stepper,
run in the browser, shows every figure within the output width at 1,400 and
1,000 px. Chapter 04's stepper text is readable at 1,400 px.

Skipped unless JupyterLab, Playwright (``pip install playwright``) and a
Chromium or Chrome binary are installed; Playwright's own browser download
is not needed. On a failure a screenshot of the page is kept (in
``MINIGRAD_SCREENSHOTS=DIR`` if set, else in the test's temporary folder; the
failure message names it). ``MINIGRAD_SCREENSHOTS`` also keeps a screenshot
of every figure as shown.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_support import (WAIT, browser_or_skip, free_port, lab_environment, missing_data, open_lab, stop,
                             wait_for_server)

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
FIGURE_TEXTS = ("SVGFigure(", "VBox(", "<Figure size")
RUN_ALL_SECONDS = 600  # the slowest chapter (05, training on MNIST) runs in about a minute on a loaded 2-core machine
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


# --- what each chapter's widgets are asked to do -----------------------------------------------------------

@dataclass(frozen=True)
class Click:
    """Click the button (or one of a ToggleButtons' options) whose text is ``text``; ``title``: its tooltip instead."""

    text: str = ""
    title: str = ""

    def control(self, widget):
        return widget.get_by_title(self.title, exact=True) if self.title else widget.get_by_role(
            "button", name=self.text, exact=True)

    def do(self, widget) -> None:
        self.control(widget).click()


@dataclass(frozen=True)
class Slide:
    """Press ``key`` (an arrow) on the slider labelled ``label``: one step along, as from the keyboard."""

    label: str
    key: str = "ArrowRight"

    def control(self, widget):
        return _labelled(widget, ".widget-slider", self.label).locator(".noUi-handle")

    def do(self, widget) -> None:
        handle = self.control(widget)
        handle.focus()
        handle.press(self.key)


@dataclass(frozen=True)
class Choose:
    """Choose ``option`` in the drop-down menu labelled ``label``."""

    label: str
    option: str

    def control(self, widget):
        return _labelled(widget, ".widget-dropdown", self.label).locator("select")

    def do(self, widget) -> None:
        self.control(widget).select_option(label=self.option)


@dataclass(frozen=True)
class Tick:
    """Click the check box labelled ``label``."""

    label: str

    def control(self, widget):
        return widget.get_by_role("checkbox", name=self.label, exact=True)

    def do(self, widget) -> None:
        self.control(widget).click()


def _labelled(widget, kind: str, label: str):
    return widget.locator(kind).filter(has=widget.page.get_by_text(label, exact=True))


@dataclass(frozen=True)
class Change:
    """In the chapter's widget with CSS class ``minigrad-<widget>`` (``WidgetFrame`` sets it), ``action`` changes
    the picture (its ``minigrad-picture`` box)."""

    widget: str
    action: Click | Slide | Choose | Tick


# Every chapter of chapters/ has an entry (a test says so): a new chapter is one line here, its widgets' changes
# (an empty list for a chapter without widgets).
CHAPTER_CHECKS: dict[str, list[Change]] = {
    "00_tour": [Change("backprop-stepper", Click("Next ▶")), Change("stride-explorer", Slide("element")),
                Change("memory-timeline", Slide("event")), Change("float-explorer", Click(title="bit 0"))],
    "01_scalar_autograd": [Change("backprop-stepper", Click("Next ▶")), Change("backprop-stepper", Slide("step"))],
    "02_neural_nets_from_scalars": [],  # no widget: its figures, a clean run
    "03_tensors": [Change("stride-explorer", Choose("op", "permute")), Change("stride-explorer", Slide("element"))],
    "04_tensor_autograd": [Change("tensor-backprop-stepper", Click("Next ▶")),
                           Change("tensor-backprop-stepper", Slide("step"))],
    "05_training_mlp_on_mnist": [],  # its training plots are figures, not widgets
    "06_convolutions": [],  # its conv pictures are figures, not widgets
    "07_gpu_kernels": [Change("thread-map", Slide("blocks", "ArrowLeft")), Change("thread-map", Tick("grid-stride loop")),
                       Change("tile-phases", Slide("phase")), Change("tile-phases", Slide("block x"))],
    "08_memory": [Change("memory-timeline", Slide("event")), Change("will-it-fit", Click("float16")),
                  Change("will-it-fit", Slide("batch", "ArrowLeft")), Change("segment-map", Slide("after event"))],
    "09_mixed_precision": [Change("float-explorer", Click(title="bit 0")), Change("float-explorer", Choose("format", "bfloat16")),
                           Change("gradient-histogram", Slide("log2 scale")), Change("scaler-run", Slide("step")),
                           Change("autocast-graph", Click("off"))],
    "10_checkpointing": [Change("checkpoint-chain", Click("3")), Change("checkpoint-chain", Click("1|2")),
                         Change("segment-sweep", Slide("segments")), Change("recompute-timeline", Click("without checkpointing"))],
    "11_capstone": [Change("config-bars", Click("float32")), Change("config-bars", Choose("checkpoint segments", "2")),
                    Change("config-bars", Choose("accumulate", "2")), Change("scaler-run", Slide("step"))],
}


# --- the page-side probes -------------------------------------------------------------------------------

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
IMAGES_LOADED = """() => [...document.querySelectorAll('.jp-OutputArea-output img')]
    .filter(img => img.complete && img.naturalWidth > 0).length"""
# Opens a notebook and waits for its kernel (JupyterLab writes the kernel's spec and language_info into the
# notebook from the two promises awaited here; its handlers were attached first, so they have run when ours resume).
OPEN_WITH_KERNEL = """async (path) => {
    const widget = await window.jupyterapp.commands.execute('docmanager:open', {path});
    await widget.context.ready;
    await widget.sessionContext.ready;
    const kernel = widget.sessionContext.session.kernel;
    await kernel.info;
    await kernel.spec;
    await new Promise(resolve => setTimeout(resolve, 0));
    window.jupyterapp.shell.activateById(widget.id);
    return widget.context.model.dirty;
}"""
SAVE = """async () => {
    await window.jupyterapp.commands.execute('docmanager:save');
    return window.jupyterapp.shell.currentWidget.context.model.dirty;
}"""
# Runs every cell (JupyterLab stops at the first error); the code cells' counts and errors afterwards.
RUN_ALL = """async (seconds) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(`run-all took over ${seconds} s`)), seconds * 1000));
    await Promise.race([window.jupyterapp.commands.execute('notebook:run-all-cells'), timeout]);
    await Promise.race([new Promise(resolve => {
        const idle = () => panel.sessionContext.session?.kernel?.status === 'idle';
        if (idle()) return resolve();
        const check = () => { if (idle()) { panel.sessionContext.statusChanged.disconnect(check); resolve(); } };
        panel.sessionContext.statusChanged.connect(check);
    }), timeout]);
    return panel.content.widgets.filter(c => c.model.type === 'code').map((c, i) => {
        const outputs = c.model.outputs.toJSON();
        return {index: i, ran: c.model.executionCount !== null,
                errors: outputs.filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`),
                widgets: outputs.filter(o => o.data && o.data[%s] !== undefined).length};
    });
}""" % json.dumps(WIDGET_MIME)
# The notebook's widget outputs as shown (the output areas' children line up with their models' outputs): rendered
# (a widget view inside), or the text in their place ("Loading widget...", "Error displaying widget").
READ_WIDGET_OUTPUTS = """(mime) => window.jupyterapp.shell.currentWidget.content.widgets
    .filter(cell => cell.outputArea)
    .flatMap(cell => cell.outputArea.model.toJSON().map((output, i) => [output, cell.outputArea.widgets[i]]))
    .filter(([output]) => output.data && output.data[mime] !== undefined)
    .map(([_, child]) => {
        const node = child?.node.querySelector('.jp-OutputArea-output');
        const text = node ? node.textContent.trim() : 'no output area';
        return {rendered: node !== null && node.querySelector('.widget-box') !== null
                          && !/^(Loading widget|Error displaying widget)/.test(text),
                text: text.slice(0, 80)};
    })"""
ALL_WIDGETS_RENDERED = f"""(count) => {{
    const shown = ({READ_WIDGET_OUTPUTS})({json.dumps(WIDGET_MIME)});
    return shown.length >= count && shown.every(o => o.rendered);
}}"""
# Not awaited: the server waits for the kernel to exit, seconds that nothing here needs.
SHUT_DOWN_KERNEL = "() => { void window.jupyterapp.shell.currentWidget?.sessionContext?.shutdown(); }"
CLOSE_ALL = "() => { for (const w of [...window.jupyterapp.shell.widgets('main')]) w.dispose(); }"  # no prompts


# --- the server and the page ----------------------------------------------------------------------------

PROBE = "figures_fit_{width}.ipynb"  # one per width: a notebook opened again would meet its last kernel shutting down
READABLE = "04_tensor_autograd_as_committed.ipynb"  # chapter 04 as committed, whatever its test left in the served copy
WIDTHS = (1400, 1000)
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving copies of the chapters and the probe notebook: (url, served folder)."""
    browser_or_skip()
    served = tmp_path_factory.mktemp("chapters")
    for path in CHAPTERS:  # a copy: nothing the server does can touch the committed notebooks
        shutil.copy(path, served / path.name)
    home = tmp_path_factory.mktemp("home")  # no notebook signatures: every chapter opens untrusted
    env = lab_environment(home)
    cells = [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in PROBE_CELLS]
    kernel = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    for width in WIDTHS:
        (served / PROBE.format(width=width)).write_text(json.dumps(
            {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    shutil.copy(ROOT / "chapters" / "04_tensor_autograd.ipynb", served / READABLE)
    port = free_port()
    log = home / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "jupyter"), "lab", "--allow-root", "--no-browser", f"--port={port}",
             "--ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.port_retries=0",
             "--LabApp.expose_app_in_browser=True", str(served)],
            cwd=served, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(server, url, log=log)
        yield url, served
    finally:
        stop(server)


@pytest.fixture(scope="module")
def lab_page(lab, chromium):
    """One page with JupyterLab loaded, for every test here; each test leaves it with nothing open."""
    url, _served = lab
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    open_lab(page, url)
    yield page
    page.close()


@pytest.fixture
def page(lab, lab_page, tmp_path):
    """The shared page, at 1,400 x 1,000 px with nothing open; on a failure, a screenshot named in the message."""
    lab_page.set_viewport_size({"width": 1400, "height": 1000})
    try:
        yield lab_page
    finally:
        lab_page.evaluate(SHUT_DOWN_KERNEL)
        lab_page.evaluate(CLOSE_ALL)


def _screenshot_folder(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("MINIGRAD_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class _KeepsAScreenshot:
    """``with _KeepsAScreenshot(page, file):`` an assertion failing inside fails naming a screenshot taken then."""

    def __init__(self, page, path: Path):
        self.page, self.path = page, path

    def __enter__(self):
        return self

    def __exit__(self, kind, error, _traceback):
        if kind is None or not issubclass(kind, Exception):
            return False
        try:
            self.page.screenshot(path=str(self.path), full_page=True)
            where = f"screenshot: {self.path}"
        except Exception as screenshot_error:  # the page itself is gone
            where = f"no screenshot ({screenshot_error})"
        raise AssertionError(f"{error}\n({where})") from error


# --- the tests ------------------------------------------------------------------------------------------

def test_every_chapter_has_an_entry_in_the_table():
    """A new chapter gets its line in ``CHAPTER_CHECKS`` (its widgets' changes), so that it is checked here."""
    assert sorted(CHAPTER_CHECKS) == [path.stem for path in CHAPTERS], (
        f"CHAPTER_CHECKS and chapters/ differ: add or remove entries ({sorted(CHAPTER_CHECKS)} vs {[p.stem for p in CHAPTERS]})")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_in_jupyterlab(lab, page, tmp_path, path):
    """Untrusted figures, opened and saved unchanged, run clean, widgets rendered and answering, saved after the run."""
    if reason := missing_data(path):
        pytest.skip(f"{path.name} {reason}")
    _url, served = lab
    changes = CHAPTER_CHECKS.get(path.stem)
    assert changes is not None, f"{path.stem} has no entry in CHAPTER_CHECKS"
    try:
        with _KeepsAScreenshot(page, _screenshot_folder(tmp_path) / f"{path.stem}.png"):
            _check_chapter(page, path, served / path.name, changes)
    finally:
        shutil.copy(path, served / path.name)  # the committed chapter again, for the tests after this one


def _check_chapter(page, path: Path, served: Path, changes: list[Change]) -> None:
    """The chapter's checks, in order, in ``page`` (``served``: the copy the server shows)."""
    _check_untrusted_figures(page, path)
    assert page.evaluate(SAVE) is False
    assert served.read_bytes() == path.read_bytes(), (
        f"{path.name}: saved unchanged in JupyterLab, its bytes changed (run `python tools/execute_notebooks.py --normalize`)")
    cells = page.evaluate(RUN_ALL, RUN_ALL_SECONDS)
    errors = {c["index"]: c["errors"] for c in cells if c["errors"]}
    assert not errors, f"{path.name}: code cells (0-based) failed: {errors}"
    assert all(c["ran"] for c in cells), f"{path.name}: cells that did not run: {[c['index'] for c in cells if not c['ran']]}"
    widgets = sum(c["widgets"] for c in cells)
    assert widgets >= _committed_widgets(path), f"{path.name}: {widgets} widgets shown, committed {_committed_widgets(path)}"
    try:
        page.wait_for_function(ALL_WIDGETS_RENDERED, arg=widgets, timeout=WAIT)
    except Exception:
        shown = page.evaluate(READ_WIDGET_OUTPUTS, WIDGET_MIME)
        raise AssertionError(f"{path.name}: widgets not rendered: {[o['text'] for o in shown if not o['rendered']]}") from None
    for change in changes:
        _check_change(page, path, change)
    assert page.evaluate(SAVE) is False
    _check_only_outputs_changed(path, served)


def _check_untrusted_figures(page, path: Path) -> None:
    """Opened (untrusted, its kernel started, nothing run): not marked changed, its figures shown and within the width."""
    dirty = page.evaluate(OPEN_WITH_KERNEL, path.name)
    assert dirty is False, f"{path.name} is marked changed as soon as it opens (run `python tools/execute_notebooks.py --normalize`)"
    expected = _expected_figures(path)
    page.wait_for_function(f"() => ({IMAGES_LOADED})() >= {expected}", timeout=WAIT)
    outputs = page.evaluate(READ_OUTPUTS)
    if folder := os.environ.get("MINIGRAD_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        figures = page.locator(".jp-OutputArea-output:has(img)")
        for i in range(figures.count()):
            figures.nth(i).screenshot(path=str(Path(folder) / f"{path.stem}_{i:02d}.png"))
    shown_as_text = [o["text"] for o in outputs if not o["image"] and o["text"].startswith(FIGURE_TEXTS)]
    assert not shown_as_text, f"{path.name}: figures shown as text: {shown_as_text}"
    assert sum(o["image"] for o in outputs) >= expected, f"{path.name}: some figures did not load"
    assert not _past_the_right_edge(outputs), f"{path.name}: figures wider than the output: {_past_the_right_edge(outputs)}"


def _check_change(page, path: Path, change: Change) -> None:
    """The change's control, used as a learner would, changes its widget's picture."""
    widget = page.locator(f".minigrad-{change.widget}")
    assert widget.count() == 1, f"{path.name}: expected one widget .minigrad-{change.widget}, found {widget.count()}"
    control = change.action.control(widget)
    assert control.count() == 1, f"{path.name}: {change}: expected one control, found {control.count()}"
    control.scroll_into_view_if_needed()
    picture = widget.locator(".minigrad-picture")
    before = picture.inner_html()
    assert "<svg" in before or "<img" in before, f"{path.name}: .minigrad-{change.widget} shows no picture: {before[:200]}"
    change.action.do(widget)
    try:
        page.wait_for_function("([node, before]) => node.innerHTML !== before", arg=[picture.element_handle(), before],
                               timeout=WAIT)
    except Exception:
        raise AssertionError(f"{path.name}: {change}: the picture did not change") from None


def _check_only_outputs_changed(committed: Path, saved: Path) -> None:
    """Saved after running, the notebook differs from the committed one only in outputs, execution counts, the
    widgets' saved state and the cells' execution timings (written by the tool that executed the committed chapters)."""
    def form(path: Path):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        metadata = {k: v for k, v in notebook["metadata"].items() if k != "widgets"}  # the widgets' saved state
        cells = [{k: ({m: x for m, x in v.items() if m != "execution"} if k == "metadata" else v)  # a run's timings
                  for k, v in c.items() if k not in ("outputs", "execution_count")} for c in notebook["cells"]]
        return metadata, cells

    (meta, cells), (saved_meta, saved_cells) = form(committed), form(saved)
    assert saved_meta == meta, f"{committed.name}: running and saving changed its metadata: {saved_meta} vs {meta}"
    changed = [i for i, (a, b) in enumerate(zip(cells, saved_cells)) if a != b]
    assert len(saved_cells) == len(cells) and not changed, f"{committed.name}: running and saving changed cells {changed}"


def _expected_figures(path: Path) -> int:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum("image/png" in o.get("data", {}) for c in cells for o in c.get("outputs", []))


def _committed_widgets(path: Path) -> int:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum(WIDGET_MIME in o.get("data", {}) for c in cells for o in c.get("outputs", []))


# Chapter 04's backprop stepper pictures (the widget's static figure and the static steps): each one's width
# as shown, and as drawn (the PNG is rendered at PNG_ZOOM times the figure's size).
READ_STEPPER_PICTURES = """() => [...document.querySelectorAll('.jp-CodeCell')]
    .filter(c => /TensorBackpropStepper\\(loss|stepper\\.static_figure\\(/.test(c.querySelector('.jp-InputArea').innerText))
    .map(c => c.querySelector('.jp-OutputArea-output img'))
    .filter(img => img !== null && img.complete && img.naturalWidth > 0)
    .map(img => ({shown: img.getBoundingClientRect().width, drawn: img.naturalWidth / %d}))"""


def test_chapter_04_stepper_node_text_is_readable_at_1400_px(page):
    """On a projector at 1,400 px, the stepper's node text is at least 11 px high (it was 7.5 px)."""
    from minigrad.viz.graph_svg import FONT_SIZE
    from minigrad.viz.svg_png import PNG_ZOOM

    page.evaluate(OPEN_WITH_KERNEL, READABLE)  # untrusted, nothing run: the committed pictures
    read = READ_STEPPER_PICTURES % PNG_ZOOM
    page.wait_for_function(f"() => ({read})().length >= 2", timeout=WAIT)
    pictures = page.evaluate(read)
    text_px = [FONT_SIZE * p["shown"] / p["drawn"] for p in pictures]
    assert len(pictures) == 2, f"expected the stepper widget's figure and its static steps, got {pictures}"
    assert min(text_px) >= 11, f"chapter 04's stepper node text is {min(text_px):.1f} px at 1,400 px: {pictures}"


def _past_the_right_edge(outputs) -> list[dict]:
    return [p for o in outputs for p in o["pictures"] if p["past_right"] > 1]


@pytest.mark.parametrize("width", WIDTHS)
def test_figures_run_in_the_browser_fit_the_output_width(page, tmp_path, width):
    height = 900
    page.set_viewport_size({"width": width, "height": height})
    with _KeepsAScreenshot(page, _screenshot_folder(tmp_path) / f"fit_{width}.png"):
        page.evaluate(OPEN_WITH_KERNEL, PROBE.format(width=width))
        cells = page.evaluate(RUN_ALL, RUN_ALL_SECONDS)
        page.wait_for_function(f"() => ({IMAGES_LOADED})() >= {len(PROBE_CELLS) - 3}", timeout=WAIT)  # the static figures
        page.wait_for_function(ALL_WIDGETS_RENDERED, arg=2, timeout=WAIT)
        outputs = page.evaluate(READ_OUTPUTS)
        if folder := os.environ.get("MINIGRAD_SCREENSHOTS"):
            Path(folder).mkdir(parents=True, exist_ok=True)
            figures = page.locator(".jp-OutputArea-output:has(img), .jp-OutputArea-output:has(svg)")
            for i in range(figures.count()):
                figures.nth(i).screenshot(path=str(Path(folder) / f"fit_{width}_{i:02d}.png"))
    errors = [c["errors"] for c in cells if c["errors"]]
    assert not errors, f"a cell of the probe notebook failed: {errors}"
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
