"""Run the library with a learner's exercise functions plugged in, for the length of a ``with`` block.

An exercise file is a copy of one library module (``minigrad/tensor/grad_rules.py``
for chapter 04) with its solution regions carved out. ``use_exercise`` loads
the learner's copy and, inside the block, puts the learner's version of every
function that holds a solution region in place of the library's::

    from minigrad.grading import use_exercise

    with use_exercise("04"):           # every exercise of chapter 04, in all of its files
        loss.backward()                # ... runs the learner's backward pass, unbroadcast, matmul backward, ...
    with use_exercise("4.2"):          # only the functions of exercise 4.2
        ...

The functions to swap are found from the source, not from a list: the regions'
line numbers are matched with the ``def`` statements that enclose them
(``carve.exercise_functions``). This works because the library calls these
functions through their module at call time (``grad_rules.unbroadcast(...)``).
A region inside a method swaps that method on the library's class. Inside
the block the learner's module-level name of that class (``Module``,
``Value``) points at the library's class too, so ``isinstance(x, Module)`` in a
swapped method sees the library's objects. Methods that depend on their own
class object in other ways (zero-argument ``super()``) are not sound to swap.
For a chapter built around a class (chapter 01's ``Value``), use the learner's
class directly: ``load_exercise("01").Value``.

Invariants
- The library's original functions are restored on exit, also after an exception.
- Nothing is swapped if the learner's file cannot be loaded or lacks a function.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from minigrad.grading.carve import exercise_functions
from minigrad.grading.loader import find_exercise_file, load_module, resolve_exercise_path
from minigrad.grading.manifest import PACKAGE_DIR, Part, chapter, part_of

__all__ = ["use_exercise", "library_module", "parts_for"]


def library_module(part: Part) -> ModuleType:
    """The imported library module that ``part``'s exercise file is a copy of."""
    relative = Path(part.source).resolve().relative_to(PACKAGE_DIR).with_suffix("")
    return importlib.import_module(".".join((PACKAGE_DIR.name, *relative.parts)))


def _owner(module: ModuleType, qualname: str):
    """(object that holds the attribute, attribute name) for ``"f"`` or ``"Class.method"``."""
    *path, attribute = qualname.split(".")
    owner = module
    for name in path:
        owner = getattr(owner, name)
    return owner, attribute


def parts_for(key: str | int, path: str | Path | None = None) -> list[tuple[Part, Path | None]]:
    """The exercise files ``use_exercise(key, path)`` plugs in: (part, file or None to look it up) pairs.

    A chapter of several files with a ``path``: the part whose file name ``path`` has.
    """
    key = str(key)
    if "." in key:
        return [(part_of(key), path)]
    parts = chapter(key).parts
    if len(parts) == 1:
        return [(parts[0], path)]
    if path is None:
        return [(p, None) for p in parts]
    named = [p for p in parts if p.file == Path(path).name]
    if len(named) != 1:
        names = ", ".join(f"{p.file} ({', '.join(e.id for e in p.exercises)})" for p in parts)
        raise ValueError(
            f"chapter {parts[0].chapter} has {len(parts)} exercise files: {names}; name your file like one of "
            f"them, or choose one by an exercise id, e.g. {parts[-1].exercises[0].id!r}"
        )
    return [(named[0], path)]


def _swaps(part: Part, exercise: str | None, path) -> tuple[ModuleType, list]:
    """The learner's module for ``part`` and the (owner, attribute, original, replacement) swaps to make."""
    names = exercise_functions(part.source, exercise)
    if exercise is not None and not names:
        raise ValueError(f"use_exercise: exercise {exercise} has no solution region in {Path(part.source).name}")
    mine = load_module(resolve_exercise_path(path) if path else find_exercise_file(part))
    library = library_module(part)
    swaps = []
    for qualname in names:
        owner, attribute = _owner(library, qualname)
        try:
            my_owner, _ = _owner(mine, qualname)
            replacement = vars(my_owner)[attribute]
        except (AttributeError, KeyError):
            raise AttributeError(
                f"use_exercise: your file {getattr(mine, '__file__', '?')} has no {qualname}; "
                f"put that exercise back to its stub with `minigrad exercises reset {exercise or part.file}` and fill it in again"
            ) from None
        swaps.append((owner, attribute, vars(owner)[attribute], replacement))
    for qualname in names:  # the learner's classes that own swapped methods name the library's class meanwhile
        if "." in qualname:
            top = qualname.split(".")[0]
            if isinstance(vars(mine).get(top), type) and isinstance(getattr(library, top, None), type):
                swaps.append((mine, top, vars(mine)[top], getattr(library, top)))
    return mine, swaps


@contextlib.contextmanager
def use_exercise(key: str | int, path: str | Path | None = None) -> Iterator[ModuleType | tuple[ModuleType, ...]]:
    """Inside the block, the library runs the learner's versions of the exercise functions.

    ``key``: a chapter ("04") swaps every function with a solution region in
    that chapter's exercise files; an exercise id ("4.2") swaps only that
    exercise's. ``path``: the learner's file (default: the workspace's copy; for a
    chapter of several files, the one named like ``path``). A relative
    ``path`` that does not exist from the current folder is looked for in
    the workspace, so ``"exercises/08_allocator.py"`` names the learner's copy. Yields the learner's module, or a tuple of
    modules (in the manifest's order) for a chapter of several files.
    """
    key = str(key)
    exercise = key if "." in key else None
    loaded = [_swaps(part, exercise, file) for part, file in parts_for(key, path)]
    done = []
    try:
        for _, swaps in loaded:
            for owner, attribute, original, replacement in swaps:
                if (owner, attribute) in {(o, a) for o, a, _ in done}:
                    continue
                setattr(owner, attribute, replacement)
                done.append((owner, attribute, original))
        modules = tuple(mine for mine, _ in loaded)
        yield modules[0] if len(modules) == 1 else modules
    finally:
        for owner, attribute, original in reversed(done):
            setattr(owner, attribute, original)
