"""Run a chapter's demo with the learner's own exercise code, and say plainly what happened.

The "try it with your own code" cell at the end of every chapter is one call::

    from minigrad.grading import try_my_code

    try_my_code("04", lambda mine: train_xent(steps=20, every=5), what="losses",
                compare=lambda losses: np.allclose(losses, xent_losses[:20]))

Invariants
- Exactly one of these is printed, and nothing raises: the demo's own output (plus a
  verdict when ``compare`` is given), "not done yet" with the open exercise and the
  file, "could not find your exercise file", or the traceback of the learner's bug.
- A traceback keeps every frame from the demo down to the learner's line; only this
  helper's own frame is left out.
- The library is the library again on return (``use_exercise`` restores its functions),
  and ``compare`` runs after that, so it can run the library's version for reference.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from minigrad.grading.loader import find_exercise_file, load_exercise, resolve_exercise_path
from minigrad.grading.use import parts_for, use_exercise

__all__ = ["try_my_code"]

T = TypeVar("T")


def _shown(path: Path) -> str:
    """``path`` as seen from the current folder (``../exercises/04_tensor_autograd.py`` from chapters/)."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def _learner_line(err: BaseException, path: Path) -> str | None:
    """"file, line N: code" of the innermost frame of ``err`` in the learner's file, if any."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename).resolve() == path.resolve()]
    if isinstance(err, SyntaxError) and err.filename and Path(err.filename).resolve() == path.resolve():
        return f"{_shown(path)}, line {err.lineno}"
    if not frames:
        return None
    last = frames[-1]
    return f"{_shown(path)}, line {last.lineno}" + (f": {last.line}" if last.line else "")


def _file_of(err: BaseException, files: list[Path]) -> Path:
    """The learner's file holding the innermost frame of ``err`` (the first file if none does)."""
    resolved = {f.resolve(): f for f in files}
    for frame in reversed(traceback.extract_tb(err.__traceback__)):
        found = resolved.get(Path(frame.filename).resolve())
        if found is not None:
            return found
    return files[0]


def try_my_code(
    key: str | int,
    demo: Callable[[ModuleType], T],
    *,
    compare: Callable[[T], bool] | None = None,
    what: str = "results",
    plug_in: bool = True,
    path: str | Path | None = None,
) -> T | None:
    """Run ``demo(mine)`` with the learner's exercise code; return its result, or None if it did not finish.

    ``key``: a chapter ("04", all of its exercise files) or one exercise ("5.3"), as for ``use_exercise``.
    ``plug_in``: True runs the demo inside ``use_exercise(key)`` (the library calls the
    learner's functions); False only loads the learner's module and passes it in (for a
    chapter built around a class, such as chapter 01's ``Value``).
    ``compare``: called with the demo's result once the library is restored; True prints
    "your {what} match the library's", False says they differ and points to the grader.
    ``path``: the learner's file (default: the workspace's copy).
    """
    key = str(key)
    tag = f"exercise {key}: " if "." in key else ""
    try:
        if path is not None:
            path = resolve_exercise_path(path)
        files = [Path(path) if path is not None else find_exercise_file(part) for part, _ in parts_for(key, path)]
    except (FileNotFoundError, ValueError) as err:
        print(f"{tag}could not find your exercise file: {err}")
        return None
    try:
        with contextlib.ExitStack() as stack:
            if plug_in:
                mine = stack.enter_context(use_exercise(key, path if path is not None else (files[0] if len(files) == 1 else None)))
            else:
                mine = load_exercise(key, files[0])
            result = demo(mine)
    except NotImplementedError as err:
        named = str(err).startswith(f"Exercise {key}:")  # the stub's message already names the exercise
        print(f"{'' if named else tag}not done yet: {err}  (your file: {_shown(_file_of(err, files))})")
        return None
    except Exception as err:  # the learner's bug: show where, keeping their line in view
        where = _learner_line(err, _file_of(err, files))
        print(f"{tag}your code raised {type(err).__name__}: {err}" + (f"  ({where})" if where else ""))
        print("".join(traceback.format_exception(type(err), err, err.__traceback__.tb_next)), end="")
        return None
    if compare is not None:
        same = compare(result)
        print(tag + (f"your {what} match the library's" if same else
                     f"your {what} differ from the library's: run the grade cell above for details"))
    return result
