"""In a real browser, the learner's path through `minigrad lab`: chapter, exercise file, answer, grade cell.

``minigrad lab`` itself is started (on a workspace in a temporary folder). In
it, for chapters 01 and 05: every link to a file (the exercise files, the
library's sources the chapter names) opens it in an editor; the chapter's
link to its exercise file opens the learner's copy; an answer written there and saved is what the
chapter's grade cell grades (full points for that exercise). The project's
own tests stay green meanwhile, and nothing tracked changes. A terminal in
the lab finds the course's ``minigrad`` and the workspace. Apart from
``minigrad lab``, ``test_notebooks_browser.py`` checks that every committed chapter, opened and saved
unchanged in JupyterLab, is not marked changed and keeps its bytes.

Skipped unless JupyterLab, Playwright (``pip install playwright``) and a
Chromium or Chrome binary are installed (see ``browser_support``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser_support import (KERNEL_IDLE, WAIT, browser_or_skip, free_port, lab_environment, open_document, open_lab, stop,
                             wait_for_server)

import minigrad
from minigrad.grading.carve import definitions, exercise_functions
from minigrad.grading.manifest import part_of

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "learner-path-token"
TRACKED = ("chapters", "exercises", "solutions")
LEARNER_EXERCISES = {"01": "1.1", "05": "5.1"}  # per chapter, the exercise the learner answers

CURRENT_PATH = "() => window.jupyterapp.shell.currentWidget?.context?.path ?? null"
SAVE = """async () => {
    await window.jupyterapp.commands.execute('docmanager:save');
    return window.jupyterapp.shell.currentWidget.context.model.dirty;
}"""
# Not awaited: the server waits for the kernel to exit, seconds that nothing here needs.
SHUT_DOWN_KERNEL = "() => { void window.jupyterapp.shell.currentWidget.sessionContext.shutdown(); }"
SET_EDITOR_TEXT = "(text) => window.jupyterapp.shell.currentWidget.content.model.sharedModel.setSource(text)"
RUN_CELL = """async (index) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const cell = panel.content.widgets[index];
    cell.model.outputs.clear();  // the committed outputs and count, so that what follows is this run's
    cell.model.executionCount = null;
    panel.content.activeCellIndex = index;
    panel.content.deselectAll();
    await window.jupyterapp.commands.execute('notebook:run-cell');
}"""
CELL_DONE = """(index) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const cell = panel.content.widgets[index];
    return cell.model.executionCount !== null && panel.sessionContext.session?.kernel?.status === 'idle';
}"""
# The terminal's output so far, as lines without escape sequences (a prompt line may name the workspace too).
TERMINAL_LINES = r"""() => window.terminalOutput.join('').split(/\r?\n/)
    .map(line => line.replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r/g, '').trim())"""
CELL_OUTPUT = """(index) => window.jupyterapp.shell.currentWidget.content.widgets[index].model.outputs.toJSON().map(o => {
    const text = o.text ?? o.data?.['text/plain'] ?? [o.ename, o.evalue, ...(o.traceback ?? [])].join('\\n');
    return Array.isArray(text) ? text.join('') : text;
}).join('')"""


# --- the server: `minigrad lab` on a temporary workspace -------------------------------------------------

@pytest.fixture(scope="module")
def course_lab(tmp_path_factory):
    """``minigrad lab`` serving a fresh workspace: (url, workspace)."""
    browser_or_skip()
    home = tmp_path_factory.mktemp("lab-home")
    work = tmp_path_factory.mktemp("learner") / "workspace"
    env = lab_environment(home)
    env["MINIGRAD_WORKSPACE"] = str(work)
    env["PYTHONPATH"] = _with_this_minigrad(env.get("PYTHONPATH", ""))
    port = free_port()
    log = home / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "minigrad.cli", "lab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
             f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0", "--LabApp.expose_app_in_browser=True"],
            cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(server, url, TOKEN, log)
        yield url, work
    finally:
        stop(server)


def _with_this_minigrad(path: str) -> str:
    """The server, its kernels and its terminals import the minigrad these tests import."""
    return ":".join([str(Path(minigrad.__file__).resolve().parents[1]), *filter(None, [path])])


@pytest.fixture(scope="module")
def tracked_before():
    """``git status`` of the tracked course files, and their bytes, before the learner starts."""
    return _tracked_state()


def _tracked_state() -> tuple[str, dict[str, str]]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing tracked to compare")
    status = subprocess.run(["git", "status", "--porcelain", *TRACKED], cwd=ROOT, capture_output=True, text=True, check=True)
    files = subprocess.run(["git", "ls-files", "-z", *TRACKED], cwd=ROOT, capture_output=True, text=True, check=True)
    digests = {name: hashlib.sha256((ROOT / name).read_bytes()).hexdigest() for name in files.stdout.split("\0") if name}
    return status.stdout, digests


@pytest.fixture
def page(chromium):
    """A fresh page of the module's Chromium (its own cookies and storage), closed after the test."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


# --- the learner's answer --------------------------------------------------------------------------------

def answered(text: str, exercise: str) -> str:
    """``text`` (the learner's copy) with the defs of ``exercise`` replaced by the solution's, all else kept."""
    part = part_of(exercise)
    solution = (ROOT / "solutions" / part.file).read_text()
    mine, theirs = _spans(text, part.file), _spans(solution, part.file)
    lines, solution_lines = text.splitlines(keepends=True), solution.splitlines(keepends=True)
    for name in sorted(exercise_functions(part.source, exercise), key=lambda n: mine[n][0], reverse=True):
        first, last = mine[name]
        lines[first : last + 1] = solution_lines[theirs[name][0] : theirs[name][1] + 1]
    return "".join(lines)


def _spans(text: str, filename: str) -> dict[str, tuple[int, int]]:
    return {name: (min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1, node.end_lineno - 1)
            for name, node in definitions(ast.parse(text, filename=filename))}


def _grade_cell(path: Path, chapter: str) -> int:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and f'grade("{chapter}")' in "".join(c["source"])]
    assert len(found) == 1, f"{path.name}: expected one grade cell, found {found}"
    return found[0]


# --- the tests ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chapter", sorted(LEARNER_EXERCISES))
def test_the_learner_answers_an_exercise_and_the_grade_cell_gives_its_points(course_lab, page, tracked_before, chapter):
    """The chapter's link opens the learner's copy; the answer saved there is what the grade cell grades."""
    url, work = course_lab
    exercise = LEARNER_EXERCISES[chapter]
    part = part_of(exercise)
    notebook = next((work / "chapters").glob(f"{chapter}_*.ipynb"))
    grade_cell = _grade_cell(notebook, chapter)
    points = next(e.points for e in part.exercises if e.id == exercise)
    open_lab(page, url, TOKEN)
    notebook_id = open_document(page, f"chapters/{notebook.name}")
    page.wait_for_function(KERNEL_IDLE, timeout=WAIT)

    link = page.locator(".jp-RenderedMarkdown a", has_text=f"exercises/{part.file}").first
    link.click()
    page.wait_for_function(f"() => ({CURRENT_PATH})() === 'exercises/{part.file}'", timeout=WAIT)
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel")
    assert tab.inner_text() == part.file
    editor = page.locator(".jp-FileEditor .cm-content").last
    editor.wait_for(timeout=WAIT)
    page.wait_for_function("() => document.querySelector('.jp-FileEditor .cm-content')?.innerText"
                           ".includes('Your copy: write your answers here')", timeout=WAIT)

    answer = answered((work / "exercises" / part.file).read_text(), exercise)
    page.evaluate(SET_EDITOR_TEXT, answer)
    assert page.evaluate(SAVE) is False
    assert (work / "exercises" / part.file).read_text() == answer

    page.evaluate(f"() => window.jupyterapp.shell.activateById('{notebook_id}')")
    page.wait_for_function(f"() => window.jupyterapp.shell.currentWidget?.id === '{notebook_id}'", timeout=WAIT)
    page.evaluate(RUN_CELL, grade_cell)
    page.wait_for_function(CELL_DONE, arg=grade_cell, timeout=WAIT)
    output = page.evaluate(CELL_OUTPUT, grade_cell)
    page.evaluate(SHUT_DOWN_KERNEL)
    row = re.search(rf"^\s*{re.escape(exercise)}\s.*?(\d+(?:\.\d+)?) / (\d+(?:\.\d+)?)", output, re.MULTILINE)
    assert row, f"chapter {chapter}: no row for {exercise} in the grade cell's output:\n{output}"
    assert float(row.group(1)) == float(row.group(2)) == points, f"chapter {chapter}: {row.group(0)}\n{output}"



# Every link of the open notebook to a file (its exercise files, the library's sources): the file's path from the
# server's root (JupyterLab renders a relative link as the server's /files/ URL and opens it in an editor on a click).
FILE_LINKS = """() => [...new Set([...window.jupyterapp.shell.currentWidget.content.node
    .querySelectorAll('.jp-RenderedMarkdown a[href*="/files/"]')]
    .map(a => decodeURIComponent(new URL(a.href).pathname.split('/files/')[1])))]"""


def _file_links(notebook: Path) -> set[str]:
    cells = json.loads(notebook.read_text())["cells"]
    return {m for c in cells if c["cell_type"] == "markdown" for m in re.findall(r"\]\((\.\./[^)\s]+)\)", "".join(c["source"]))}


@pytest.mark.parametrize("chapter", sorted(LEARNER_EXERCISES))
def test_every_file_link_of_the_chapter_opens_the_file_in_an_editor(course_lab, page, chapter):
    """Exercise files and the library's source files the chapter names: each link opens an editor tab on it."""
    url, work = course_lab
    notebook = next((work / "chapters").glob(f"{chapter}_*.ipynb"))
    open_lab(page, url, TOKEN)
    notebook_id = open_document(page, f"chapters/{notebook.name}")
    wanted = _file_links(notebook)
    assert any("exercises/" in link for link in wanted) and any("minigrad/" in link for link in wanted), wanted
    page.wait_for_function(f"() => ({FILE_LINKS})().length >= {len(wanted)}", timeout=WAIT)  # all rendered
    links = page.evaluate(FILE_LINKS)
    assert set(links) == {link.removeprefix("../") for link in wanted}
    for target in links:
        page.evaluate(f"() => window.jupyterapp.shell.activateById('{notebook_id}')")
        page.locator(f'.jp-RenderedMarkdown a[href*="/files/{target}?"]').first.click()
        page.wait_for_function(f"() => ({CURRENT_PATH})() === '{target}'", timeout=WAIT)
        editor = page.locator(".jp-FileEditor .cm-content").last
        editor.wait_for(timeout=WAIT)
        first_line = (work / target).read_text().splitlines()[0][:40]
        page.wait_for_function("(text) => [...document.querySelectorAll('.jp-FileEditor .cm-content')]"
                               ".some(e => e.innerText.includes(text))", arg=first_line, timeout=WAIT)
    left_in_the_library = list(Path(minigrad.__file__).parent.rglob(".ipynb_checkpoints"))
    assert not left_in_the_library, f"opening the linked files wrote into the library: {left_in_the_library}"


def test_the_projects_tests_stay_green_with_the_learners_answers_in_place(course_lab, tracked_before):
    """With the learner's answers in their workspace, the exercise sync tests pass and no tracked file changed."""
    _url, work = course_lab
    for exercise in LEARNER_EXERCISES.values():  # written by the tests above; written here when this one runs alone
        path = work / "exercises" / part_of(exercise).file
        if (answer := answered(path.read_text(), exercise)) != path.read_text():
            path.write_text(answer)
    sync = subprocess.run([sys.executable, "-m", "pytest", "tests/test_exercises_sync.py", "-q", "-n0", "-p", "no:randomly"],
                          cwd=ROOT, env=dict(os.environ, MINIGRAD_WORKSPACE=str(work)), capture_output=True, text=True,
                          timeout=600)
    assert sync.returncode == 0, f"the project's tests fail with the learner's answers in place:\n{sync.stdout[-3000:]}"
    assert _tracked_state() == tracked_before, "the learner's path changed a tracked file of chapters/, exercises/ or solutions/"


def test_a_terminal_in_the_lab_runs_the_course_minigrad_on_the_workspace(course_lab, page):
    url, work = course_lab
    command = "which minigrad && minigrad exercises where"
    open_lab(page, url, TOKEN)
    page.evaluate("""async () => {
        window.terminalOutput = [];
        const widget = await window.jupyterapp.commands.execute('terminal:create-new');
        widget.content.session.messageReceived.connect((_, message) => {
            if (message.type === 'stdout') window.terminalOutput.push(...message.content);
        });
        window.terminalSession = widget.content.session;
    }""")
    page.wait_for_function("() => window.terminalSession.connectionStatus === 'connected'", timeout=WAIT)
    page.locator(".jp-Terminal .xterm-helper-textarea").last.focus()
    page.keyboard.type(command)
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => ({TERMINAL_LINES})().includes({json.dumps(str(work))})", timeout=WAIT)
    lines = page.evaluate(TERMINAL_LINES)
    assert str(Path(sys.executable).parent / "minigrad") in lines, lines  # `which minigrad`
    assert str(work) in lines, lines  # `minigrad exercises where`
