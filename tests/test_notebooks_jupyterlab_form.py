"""Every committed chapter is, byte for byte, what JupyterLab writes when it opens and saves it unchanged.

So opening a chapter never shows the unsaved-changes mark, and saving (or
autosaving) it never changes a tracked file. The rules are
``tools/execute_notebooks.py``'s (its docstring says what JupyterLab does);
the browser test ``tests/test_notebooks_browser.py`` checks them against
JupyterLab itself. A chapter that fails here: ``python tools/execute_notebooks.py --normalize``.
"""

from __future__ import annotations

import difflib
import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
FIX = "python tools/execute_notebooks.py --normalize"


def _tool():
    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "tools" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # a dataclass looks its module up there
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


tool = _tool()


@pytest.fixture(scope="module")
def facts():
    """What a kernel started here tells JupyterLab (one kernel start, about a second)."""
    return tool.kernel_facts()


def _first_difference(expected: bytes, actual: bytes) -> str:
    diff = difflib.unified_diff(expected.decode().splitlines(), actual.decode().splitlines(), "JupyterLab's form", "committed",
                                n=1, lineterm="")
    return "\n".join(line[:200] for line in list(diff)[:12])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_what_jupyterlab_saves(path, facts):
    """Format, kernelspec and cell metadata as JupyterLab writes them (language_info: the next test)."""
    raw = path.read_bytes()
    notebook = nbformat.reads(raw.decode("utf-8"), as_version=nbformat.NO_CONVERT)
    as_committed = tool.KernelFacts(facts.kernelspec, notebook.metadata.get("language_info", facts.language_info))
    expected = tool.jupyterlab_bytes(tool.jupyterlab_form(notebook, as_committed))
    if raw != expected:
        pytest.fail(f"{path.name} is not in JupyterLab's form (run `{FIX}`):\n{_first_difference(expected, raw)}")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_language_info_is_what_the_kernel_reports(path, facts):
    """JupyterLab replaces language_info by the kernel's; only the Python version may differ on another machine."""
    committed = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT).metadata.get("language_info")
    assert committed is not None, f"{path.name} has no language_info (JupyterLab adds it on opening): run `{FIX}`"
    other_keys = {k: v for k, v in committed.items() if k != "version"}
    assert other_keys == {k: v for k, v in facts.language_info.items() if k != "version"}, (
        f"{path.name}: language_info {dict(committed)} is not the kernel's {facts.language_info}: run `{FIX}`")
    if committed.get("version") != facts.language_info.get("version"):
        pytest.skip(f"the chapters were executed on Python {committed.get('version')}, this kernel runs "
                    f"{facts.language_info.get('version')}: here JupyterLab marks a chapter changed on opening")


def _notebook(**metadata) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("print(1)", id="c1", metadata=metadata)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="10%\r50%\r100%\n")]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python", "env": {}}
    return notebook


def test_the_rules_seen_in_jupyterlab(facts):
    """Each rule is what JupyterLab 4 did to a notebook opened and saved unchanged."""
    form = tool.jupyterlab_form(_notebook(collapsed=True, trusted=True), facts)
    assert form.metadata.kernelspec == facts.kernelspec and set(facts.kernelspec) == {"name", "display_name", "language"}
    assert form.metadata.language_info == facts.language_info
    assert form.cells[0].metadata.jupyter == {"outputs_hidden": True}
    assert tool.jupyterlab_form(_notebook(jupyter={"outputs_hidden": False}), facts).cells[0].metadata.collapsed is False
    text = tool.jupyterlab_bytes(form).decode()
    assert text.startswith('{\n "cells": [\n  {\n') and text.endswith("}\n") and not text.endswith("\n\n")
    assert '"10%\\r",\n' in text  # a stream's text is split after every line end, \r included
    assert '"trusted"' not in text


def test_normalize_is_idempotent(tmp_path, facts):
    path = tmp_path / "n.ipynb"
    path.write_text(nbformat.writes(_notebook(collapsed=False)), encoding="utf-8")
    assert tool.normalize(path, facts) is True
    once = path.read_bytes()
    assert tool.normalize(path, facts) is False and path.read_bytes() == once
