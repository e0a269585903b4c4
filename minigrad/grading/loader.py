"""Load a learner's exercise file as a fresh module, so it can be graded or plugged into demos."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

from minigrad.grading import workspace
from minigrad.grading.carve import exercise_functions
from minigrad.grading.manifest import Part, part_of

_counter = itertools.count()


def find_exercise_file(key: str | int | Part, start: Path | None = None) -> Path:
    """The learner's copy of the exercise file, in their workspace (made, with a line saying so, if missing).

    ``key``: a chapter with one exercise file ("01"), an exercise id ("5.3") or a
    Part. ``start``: the folder to look for a workspace from (default: the
    current one); see :mod:`minigrad.grading.workspace` for where it is.
    """
    part = key if isinstance(key, Part) else part_of(key)
    return workspace.learner_file(part, workspace.locate(start))


def resolve_exercise_path(path: str | Path, start: Path | None = None) -> Path:
    """``path`` as given if it exists; a relative one that does not is looked for in the workspace, then above ``start``.

    So ``"exercises/08_allocator.py"`` written in a notebook names the
    workspace's copy, as the default lookup does.
    """
    given = Path(path).expanduser()
    if given.is_file():
        return given
    if given.is_absolute():
        raise FileNotFoundError(f"no such exercise file: {given}")
    start = (start or Path.cwd()).resolve()
    for folder in (workspace.locate(start), *start.parents):
        candidate = folder / given
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"no such exercise file: {given} (looked in {start}, in your workspace {workspace.locate(start)} and every "
        f"folder above {start}); give the path from the folder you run in, or leave it out to use your workspace's copy"
    )


def load_module(path: str | Path, name: str | None = None) -> ModuleType:
    """Import the Python file at ``path`` as a new module (a fresh copy on every call)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such exercise file: {path}")
    name = name or f"minigrad_submission_{path.stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_exercise(key: str | int, path: str | Path | None = None) -> ModuleType:
    """The learner's module: ``load_exercise("01").Value`` is their Value.

    ``key`` is a chapter with one exercise file ("01") or an exercise id ("5.3").
    With no ``path``, the workspace's copy (``exercises/NN_*.py`` in it).
    """
    return load_module(resolve_exercise_path(path) if path else find_exercise_file(key))


def _top_level_names(source: str) -> set[str] | None:
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def exercise_names(part: Part) -> set[str]:
    """The top-level functions and classes of ``part`` that hold its exercises (``Value``, ``unbroadcast``)."""
    return {name.split(".")[0] for name in exercise_functions(part.source)}


def check_file_matches(part: Part, path: Path) -> None:
    """Raise ValueError if ``path`` defines none of ``part``'s exercise names but another part's (read by AST, never run)."""
    from minigrad.grading.manifest import parts

    defined = _top_level_names(Path(path).read_text(errors="replace"))
    if defined is None or defined & exercise_names(part):
        return  # a file that does not parse is graded (its SyntaxError is the learner's feedback)
    matches = [p for p in parts() if p != part and defined & exercise_names(p)]
    if not matches:
        return
    best = max(matches, key=lambda p: len(defined & exercise_names(p)))
    wanted = ", ".join(sorted(exercise_names(part)))
    raise ValueError(
        f"{path} does not look like chapter {part.chapter}'s exercise file {part.file}: it defines none of "
        f"{wanted}, but it does define {', '.join(sorted(defined & exercise_names(best)))} from chapter "
        f"{best.chapter}'s {best.file}. Grade it with `minigrad grade {best.exercises[0].id if len(chapter_parts(best)) > 1 else best.chapter} --file {path}`, "
        f"or pass chapter {part.chapter}'s file"
    )


def chapter_parts(part: Part) -> tuple[Part, ...]:
    from minigrad.grading.manifest import chapter

    return chapter(part.chapter).parts
