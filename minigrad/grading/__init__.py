"""Exercises and the grader (outside the stage order: may import any stage, no stage imports it).

In a notebook::

    from minigrad.grading import grade, load_exercise
    grade("01")                      # grade exercises/01_*.py, print the table
    MyValue = load_exercise("01").Value   # run the chapter's demos with your own Value
    try_my_code("04", demo)          # run a demo with your exercise functions plugged in
"""

from __future__ import annotations

import random
from pathlib import Path

from minigrad.grading.loader import find_exercise_file, load_exercise
from minigrad.grading.manifest import chapter, chapters
from minigrad.grading.report import gradescope, table, write_gradescope
from minigrad.grading.runner import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, PartResult, grade_part, resolve_files
from minigrad.grading.try_mine import try_my_code
from minigrad.grading.use import use_exercise

__all__ = [
    "grade", "load_exercise", "use_exercise", "try_my_code", "find_exercise_file", "chapter", "chapters", "table", "gradescope",
]


def grade(
    which: str | int = "all",
    file: str | Path | None = None,
    *,
    folder: str | Path | None = None,
    reference: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    json_path: str | Path | None = None,
    show: bool = True,
    seed: int | None = None,
) -> list[PartResult]:
    """Grade chapter ``which`` ("01", 1 or "all"); print the table unless ``show`` is False.

    ``seed`` replays a run: every check's random inputs are derived from it (a failing exercise prints the replay command).
    """
    which = "all" if str(which) == "all" else str(which)
    files = resolve_files(which, file, folder, reference)
    seed = random.SystemRandom().randrange(2**32) if seed is None else seed
    strict = file is not None  # a file named by the user; a folder of submissions is graded file by file
    results = [grade_part(p, f, timeout=timeout, memory_mb=memory_mb, seed=seed, strict=strict) for p, f in files]
    if show:
        print(table(results), end="")
    if json_path is not None:
        write_gradescope(results, json_path)
    return results
