"""Put the launch header on top of each chapter: Colab and Binder badges, and a cell that installs the course where it is missing.

    python tools/notebook_header.py                   # every chapter
    python tools/notebook_header.py chapters/07_gpu_kernels.ipynb
    python tools/notebook_header.py --check           # change nothing; exit 1 if a chapter's header is missing or stale

The header is two cells, found by their ids (``launch-badges``, ``install-minigrad``):

- a markdown cell with an "Open in Colab" badge (the chapter as committed on the
  course's main branch) and a "Launch Binder" badge (the learner's copy of the
  chapter in the workspace Binder's build makes, ``workspace/chapters/``, whose
  exercise links open the workspace's exercise files the grade cell grades);
- a code cell that installs minigrad from the repository only when it cannot be
  imported (a fresh Colab runtime). Where the course is installed (Binder, the
  course's venv, the tests) it imports minigrad and prints nothing, so nbval
  and the committed outputs stay valid. Chapter 07 installs the ``gpu`` extra
  (CuPy) for its cells that time kernels on a real GPU.

The README's launch block (between ``<!-- launch-badges -->`` and
``<!-- /launch-badges -->``) is written here too: a Binder badge for the whole
course and a row of badges per chapter.

All of them link to the repository named once, in ``[project.urls] Repository`` of
pyproject.toml. Rerunning the tool changes nothing: a header whose sources are
current is left as it is (its execution count included); a stale one is
replaced, a missing one inserted above the chapter's first cell. Nothing else
in the notebook is touched, and it is written in JupyterLab's form
(``tools/execute_notebooks.py``) with its own kernelspec and language_info.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import nbformat

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
BRANCH = "main"
README = ROOT / "README.md"
README_START = "<!-- launch-badges: written by tools/notebook_header.py -->"
README_END = "<!-- /launch-badges -->"
BADGES_ID = "launch-badges"
INSTALL_ID = "install-minigrad"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
# The extras a chapter installs on Colab beyond minigrad's own dependencies.
CHAPTER_EXTRAS = {"07": ("gpu",)}
EXTRA_NOTES = {
    "gpu": "# The gpu extra adds CuPy, for the cells that time kernels on a real GPU (Colab: Runtime > Change runtime type\n"
           "# > a GPU); without a GPU every kernel still runs on minigrad's simulator.\n",
}


def _execute_notebooks():
    spec = importlib.util.spec_from_file_location("execute_notebooks", Path(__file__).with_name("execute_notebooks.py"))
    sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))  # a dataclass looks its module up there
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


@dataclass(frozen=True)
class Repository:
    """A GitHub repository, as ``[project.urls] Repository`` names it."""

    owner: str
    name: str

    @property
    def url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"


GITHUB_URL = re.compile(r"https://github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?")


def repository(pyproject: Path = ROOT / "pyproject.toml") -> Repository:
    """The course's repository, read from ``[project.urls] Repository`` (the one place that names it)."""
    urls = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("urls", {})
    url = urls.get("Repository")
    if not isinstance(url, str):
        raise ValueError(f"{pyproject} has no [project.urls] Repository: add the course's GitHub address there, "
                         f'e.g. Repository = "https://github.com/<owner>/<repo>"')
    match = GITHUB_URL.fullmatch(url)
    if match is None:
        raise ValueError(f"[project.urls] Repository in {pyproject} is {url!r}: the badges need a GitHub address "
                         f"of the form https://github.com/<owner>/<repo>")
    return Repository(*match.groups())


def chapter_number(path: Path) -> str:
    match = re.fullmatch(r"(\d\d)_\w+\.ipynb", path.name)
    if match is None:
        raise ValueError(f"{path.name} is not a chapter notebook (NN_name.ipynb)")
    return match.group(1)


def colab_url(repo: Repository, path: Path) -> str:
    return f"https://colab.research.google.com/github/{repo.owner}/{repo.name}/blob/{BRANCH}/chapters/{quote(path.name)}"


def binder_url(repo: Repository, path: Path | None = None) -> str:
    """Binder on the main branch; with ``path``, JupyterLab opens the workspace's copy of that chapter."""
    url = f"https://mybinder.org/v2/gh/{repo.owner}/{repo.name}/{BRANCH}"
    return url if path is None else f"{url}?labpath={quote('workspace/chapters/' + path.name)}"


def badges_source(repo: Repository, path: Path) -> str:
    return (f"[![Open In Colab]({COLAB_BADGE})]({colab_url(repo, path)})\n"
            f"[![Launch Binder]({BINDER_BADGE})]({binder_url(repo, path)})")


def install_requirement(repo: Repository, path: Path) -> str:
    extras = CHAPTER_EXTRAS.get(chapter_number(path), ())
    return f"minigrad{'[' + ','.join(extras) + ']' if extras else ''} @ git+{repo.url}@{BRANCH}"


def install_source(repo: Repository, path: Path) -> str:
    notes = "".join(EXTRA_NOTES[extra] for extra in CHAPTER_EXTRAS.get(chapter_number(path), ()))
    return ("# On Colab: installs the course (a no-op wherever minigrad is installed: Binder, the course's venv).\n"
            f"{notes}"
            "try:\n"
            "    import minigrad\n"
            "except ImportError:\n"
            f'    %pip install --quiet "{install_requirement(repo, path)}"')


def header_cells(repo: Repository, path: Path) -> list[nbformat.NotebookNode]:
    badges = nbformat.v4.new_markdown_cell(badges_source(repo, path), id=BADGES_ID)
    install = nbformat.v4.new_code_cell(install_source(repo, path), id=INSTALL_ID)
    return [badges, install]


def with_header(notebook: nbformat.NotebookNode, repo: Repository, path: Path) -> nbformat.NotebookNode:
    """A copy of ``notebook`` whose first two cells are the current header; the other cells are kept as they are."""
    notebook = copy.deepcopy(notebook)
    wanted = header_cells(repo, path)
    current = notebook.cells[:2]
    if [c.get("id") for c in current] == [BADGES_ID, INSTALL_ID] and all(
            c.cell_type == w.cell_type and c.source == w.source for c, w in zip(current, wanted)):
        if current[1].outputs:  # an install that printed: the committed chapter shows none
            current[1].outputs = []
        return notebook
    rest = [c for c in notebook.cells if c.get("id") not in (BADGES_ID, INSTALL_ID)]
    notebook.cells = wanted + rest
    return notebook


def apply(path: Path, repo: Repository, check: bool = False) -> bool:
    """Give ``path`` its current header; True if its bytes changed (with ``check``: would change; nothing written)."""
    tool = _execute_notebooks()
    raw = path.read_bytes()
    notebook = nbformat.reads(raw.decode("utf-8"), as_version=nbformat.NO_CONVERT)
    if notebook.nbformat < 4 or (notebook.nbformat == 4 and notebook.nbformat_minor < 5):
        raise ValueError(f"{path.name} is nbformat {notebook.nbformat}.{notebook.nbformat_minor}: cell ids need 4.5 or newer")
    facts = tool.KernelFacts(dict(notebook.metadata.get("kernelspec", {})), dict(notebook.metadata.get("language_info", {})))
    data = tool.jupyterlab_bytes(tool.jupyterlab_form(with_header(notebook, repo, path), facts))
    if data == raw:
        return False
    if not check:
        from minigrad.files import atomic_write

        with atomic_write(path) as f:
            f.write(data)
    return True


def chapter_title(path: Path) -> str:
    """The chapter's title, from its heading (``# Chapter 01 — Scalar autograd`` gives ``Scalar autograd``)."""
    notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return re.sub(r"^Chapter \d+\s*[—:-]\s*", "", cell.source.splitlines()[0][2:]).strip()
    raise ValueError(f"{path.name} has no heading (a markdown cell starting with '# ') to take its title from")


def readme_block(repo: Repository, chapters: list[Path]) -> str:
    """The README's launch block: Binder for the course, then Colab and Binder for each chapter."""
    rows = [f"| {chapter_number(p)} | {chapter_title(p)} | [![Open In Colab]({COLAB_BADGE})]({colab_url(repo, p)}) "
            f"| [![Launch Binder]({BINDER_BADGE})]({binder_url(repo, p)}) |" for p in chapters]
    return "\n".join([
        README_START,
        f"[![Launch Binder]({BINDER_BADGE})]({binder_url(repo)}?labpath=workspace/chapters) the whole course in "
        f"JupyterLab in your browser: nothing to install, CPU only ({repo.url}, branch {BRANCH}).",
        "",
        "| ch | chapter | Colab | Binder |",
        "|---|---|---|---|",
        *rows,
        README_END,
    ])


def apply_readme(repo: Repository, chapters: list[Path], readme: Path = README, check: bool = False) -> bool:
    """Write the launch block into ``readme`` between its markers; True if it changed (``check``: would change)."""
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"{readme.name} has no launch block: put the lines {README_START!r} and {README_END!r} "
                         f"where the badges go")
    new = text[:start] + readme_block(repo, chapters) + text[end + len(README_END):]
    if new == text:
        return False
    if not check:
        from minigrad.files import atomic_write

        with atomic_write(readme) as f:
            f.write(new.encode("utf-8"))
    return True


def main(argv: list[str]) -> int:
    check = "--check" in argv
    chapters = sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
    paths = [Path(p) for p in argv if p != "--check"] or chapters
    repo = repository()
    stale = []
    for path in paths:
        changed = apply(path, repo, check=check)
        if changed:
            stale.append(path.name)
        print(f"{path.name}: {('stale' if check else 'header written') if changed else 'header current'}", flush=True)
    if apply_readme(repo, chapters, check=check):
        stale.append(README.name)
        print(f"{README.name}: {'launch block stale' if check else 'launch block written'}", flush=True)
    if check and stale:
        print("run `python tools/notebook_header.py`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
