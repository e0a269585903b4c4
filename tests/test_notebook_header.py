"""Every chapter opens with its launch header (tools/notebook_header.py): Colab and Binder badges for its own file,
and a cell that installs the course only where it cannot be imported, silently a no-op here.

A chapter or the README that fails here: ``python tools/notebook_header.py``.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
FIX = "python tools/notebook_header.py"


def _tool():
    spec = importlib.util.spec_from_file_location("notebook_header", ROOT / "tools" / "notebook_header.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # a dataclass looks its module up there
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


tool = _tool()
REPO = tool.repository()
LINK = re.compile(r"\[!\[([^\]]+)\]\(([^)]+)\)\]\(([^)]+)\)")  # [![alt](badge)](target)


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)


def _run_install_cell(source: str) -> list[tuple[str, str]]:
    """Run the install cell as IPython would; the magics it calls, recorded instead of run."""
    calls = []

    class Shell:
        def run_line_magic(self, name, line):
            calls.append((name, line))

    exec(compile(TransformerManager().transform_cell(source), "<install cell>", "exec"), {"get_ipython": Shell})
    return calls


def test_the_repository_is_named_once_in_pyproject():
    assert REPO.url == tool.tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    hard_coded = [p.relative_to(ROOT) for p in [*ROOT.glob("tools/*.py"), *ROOT.glob("minigrad/**/*.py"), *ROOT.glob("tests/*.py")]
                  if f"{REPO.owner}/{REPO.name}" in p.read_text(encoding="utf-8")]
    assert hard_coded == [], f"the repository is named in {hard_coded}: read it with notebook_header.repository()"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_opens_with_badges_for_its_own_file(path):
    badges = _read(path).cells[0]
    assert badges.get("id") == tool.BADGES_ID and badges.cell_type == "markdown", f"{path.name}: no launch header; run `{FIX}`"
    links = {alt: target for alt, _, target in LINK.findall(badges.source)}
    assert links == {
        "Open In Colab": f"https://colab.research.google.com/github/{REPO.owner}/{REPO.name}/blob/main/chapters/{path.name}",
        "Launch Binder": f"https://mybinder.org/v2/gh/{REPO.owner}/{REPO.name}/main?labpath=workspace/chapters/{path.name}",
    }, f"{path.name}: stale badges; run `{FIX}`"
    assert (ROOT / "chapters" / path.name).is_file()  # the Colab link's path is the committed chapter's


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_install_cell_is_silent_and_a_no_op_where_minigrad_is_installed(path):
    install = _read(path).cells[1]
    assert install.get("id") == tool.INSTALL_ID and install.cell_type == "code", f"{path.name}: no install cell; run `{FIX}`"
    assert install.outputs == [], f"{path.name}: the install cell has committed outputs (nbval would expect them)"
    assert _run_install_cell(install.source) == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_without_minigrad_the_install_cell_installs_the_course_with_the_chapters_extras(path, monkeypatch):
    monkeypatch.setitem(sys.modules, "minigrad", None)  # `import minigrad` now raises ImportError, as on a fresh Colab
    [(magic, line)] = _run_install_cell(_read(path).cells[1].source)
    extras = "[gpu]" if path.name.startswith("07_") else ""
    assert (magic, line) == ("pip", f'install --quiet "minigrad{extras} @ git+{REPO.url}@main"')


def test_the_committed_chapters_and_readme_are_what_the_tool_writes():
    stale = [p.name for p in CHAPTERS if tool.apply(p, REPO, check=True)]
    if tool.apply_readme(REPO, CHAPTERS, check=True):
        stale.append("README.md")
    assert stale == [], f"{stale} differ from what the tool writes: run `{FIX}`"


def test_the_readme_launches_the_course_and_every_chapter():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index(tool.README_START):text.index(tool.README_END)]
    targets = [target for _, _, target in LINK.findall(block)]
    assert targets[0] == f"https://mybinder.org/v2/gh/{REPO.owner}/{REPO.name}/main?labpath=workspace/chapters"
    for path in CHAPTERS:
        assert tool.colab_url(REPO, path) in targets and tool.binder_url(REPO, path) in targets, path.name


def _notebook(*cells) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=list(cells))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def test_the_tool_is_idempotent_and_replaces_a_stale_header_without_duplicating_it(tmp_path):
    path = tmp_path / "07_gpu_kernels.ipynb"
    title = nbformat.v4.new_markdown_cell("# Chapter 07 — GPU kernels", id="t")
    code = nbformat.v4.new_code_cell("x = 1", id="c", execution_count=1)
    path.write_text(nbformat.writes(_notebook(title, code)), encoding="utf-8")
    assert tool.apply(path, REPO) is True
    once = path.read_bytes()
    assert tool.apply(path, REPO) is False and path.read_bytes() == once
    assert [c.id for c in _read(path).cells] == [tool.BADGES_ID, tool.INSTALL_ID, "t", "c"]

    notebook = _read(path)  # an older header, moved below the title, with an install that printed
    notebook.cells[1].source = "%pip install minigrad"
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="Installed\n")]
    notebook.cells = [notebook.cells[2], *notebook.cells[:2], notebook.cells[3]]
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    assert tool.apply(path, REPO, check=True) is True and tool.apply(path, REPO) is True
    assert path.read_bytes() == once


def test_an_executed_header_keeps_its_execution_count_and_loses_printed_output(tmp_path):
    path = tmp_path / "01_x.ipynb"
    path.write_text(nbformat.writes(_notebook(nbformat.v4.new_markdown_cell("# Chapter 01 — X", id="t"))), encoding="utf-8")
    tool.apply(path, REPO)
    notebook = _read(path)
    notebook.cells[1].execution_count = 1
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="noise\n")]
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    assert tool.apply(path, REPO) is True
    install = _read(path).cells[1]
    assert install.execution_count == 1 and install.outputs == []


def test_the_readme_block_is_rewritten_between_its_markers_only(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# top\n\n{tool.README_START}\nold\n{tool.README_END}\n\nrest\n", encoding="utf-8")
    assert tool.apply_readme(REPO, CHAPTERS[:1], readme) is True
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# top\n\n") and text.endswith(f"{tool.README_END}\n\nrest\n") and "old" not in text
    assert tool.apply_readme(REPO, CHAPTERS[:1], readme) is False
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="launch-badges"):
        tool.apply_readme(REPO, CHAPTERS[:1], readme)


@pytest.mark.parametrize("urls, message", [
    ("", "no \\[project.urls\\] Repository"),
    ('[project.urls]\nHomepage = "https://example.org"\n', "no \\[project.urls\\] Repository"),
    ('[project.urls]\nRepository = "https://gitlab.com/a/b"\n', "GitHub address"),
    ('[project.urls]\nRepository = "https://github.com/only-owner"\n', "GitHub address"),
    ('[project.urls]\nRepository = 3\n', "no \\[project.urls\\] Repository"),
])
def test_a_missing_or_foreign_repository_url_is_refused_with_the_fix(tmp_path, urls, message):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f'[project]\nname = "minigrad"\n\n{urls}', encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        tool.repository(pyproject)


def test_a_trailing_git_suffix_or_slash_names_the_same_repository(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    for url in (REPO.url + ".git", REPO.url + "/"):
        pyproject.write_text(f'[project]\nname = "minigrad"\n\n[project.urls]\nRepository = "{url}"\n', encoding="utf-8")
        assert tool.repository(pyproject) == REPO


def test_a_notebook_that_is_not_a_chapter_or_is_too_old_for_cell_ids_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a chapter notebook"):
        tool.chapter_number(tmp_path / "notes.ipynb")
    old = tmp_path / "01_old.ipynb"
    notebook = _notebook(nbformat.v4.new_markdown_cell("# Chapter 01 — Old"))
    notebook.nbformat_minor = 4
    for cell in notebook.cells:
        cell.pop("id", None)
    old.write_text(nbformat.writes(notebook, version=nbformat.NO_CONVERT), encoding="utf-8")
    with pytest.raises(ValueError, match="cell ids need 4.5"):
        tool.apply(old, REPO)
