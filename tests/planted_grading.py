"""The planted bugs (tests/grading/planted/bugs.py), the solutions and the stubs, each graded once per test run.

Two test files ask about the same gradings: ``test_grading_planted.py`` (does
the bug cost points?) and ``test_grading_output.py`` (is what the grader says
about it short and actionable?). Grading a bug takes a sandboxed child and a
few seconds, so each bug is graded once, with one seed, and both read the result.
So are the course's solutions (``test_grading.py``'s full marks, and the
planted bugs' controls), its stubs (``test_grading.py``'s zero,
``test_grading_output.py``'s one line per stub) and the library's reference
implementations (``test_grading.py``'s full marks): graded with the same seed
and limits as the bugs, all chapters at once, two parts at a time.
"""

from __future__ import annotations

import functools
import importlib.util
import multiprocessing
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from minigrad.grading.manifest import chapters, part_of
from minigrad.grading.runner import DEFAULT_MEMORY_MB, ExerciseResult, PartResult, grade_exercise, grade_part

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261201
TIMEOUT = 30.0


def _load_bugs():
    spec = importlib.util.spec_from_file_location("planted_bugs", ROOT / "tests" / "grading" / "planted" / "bugs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BUGS


BUGS = _load_bugs()
BY_ID = {b.id: b for b in BUGS}
_FOLDER = tempfile.TemporaryDirectory(prefix="minigrad-planted-")


def grade_file(exercise_id: str, path: Path) -> ExerciseResult:
    part = part_of(exercise_id)
    assert part.file == path.name, f"exercise {exercise_id} is in {part.file}, not {path.name}"
    [exercise] = [e for e in part.exercises if e.id == exercise_id]
    return grade_exercise(part, exercise, path, timeout=TIMEOUT, memory_mb=DEFAULT_MEMORY_MB, seed=SEED)


def planted_file(bug_id: str) -> Path:
    """The solution file with bug ``bug_id`` planted (its text to replace must occur exactly once)."""
    bug = BY_ID[bug_id]
    solution = (ROOT / "solutions" / bug.file).read_text()
    assert solution.count(bug.original) == 1, f"{bug.id}: the text to replace must occur exactly once in solutions/{bug.file}"
    path = Path(_FOLDER.name) / bug.id / bug.file
    path.parent.mkdir(exist_ok=True)
    path.write_text(solution.replace(bug.original, bug.replacement))
    return path


WANTED: set[str] = set()  # the bugs this run's selected tests ask about (tests/conftest.py fills it at collection)
JOBS = 2  # gradings at once, each in its own process: the grading parent and its sandboxed child share the cores
BATCH_FROM = 8  # fewer wanted bugs than this are graded one by one, when asked (a `-k` run of a few)


def _in_spawned_processes(function, *iterables) -> list:
    """``map(function, *iterables)``, ``JOBS`` at a time in spawned processes (a fresh interpreter each: grad mode and
    the other global switches of the library are per process, so gradings never share them)."""
    with ProcessPoolExecutor(max_workers=JOBS, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(function, *iterables))


def grade_planted(bug_id: str) -> ExerciseResult:
    """Bug ``bug_id`` graded on its exercise, in this process."""
    return grade_file(BY_ID[bug_id].exercise, planted_file(bug_id))


@functools.cache
def _graded_together() -> dict[str, ExerciseResult]:
    """Every wanted bug, graded once, ``JOBS`` at a time in spawned processes."""
    wanted = sorted(WANTED)
    if len(wanted) < BATCH_FROM:
        return {}
    return dict(zip(wanted, _in_spawned_processes(grade_planted, wanted)))


@functools.cache
def graded_bug(bug_id: str) -> ExerciseResult:
    """Bug ``bug_id`` graded on its exercise (once per run)."""
    together = _graded_together()
    return together[bug_id] if bug_id in together else grade_planted(bug_id)


def _course_parts():
    return [p for c in chapters().values() for p in c.parts]


def grade_course_part(index: int, folder: str) -> PartResult:
    """Part ``index`` of the course (in :func:`_course_parts`' order) graded on its file in ``folder``, in this process.

    ``folder`` "reference" grades the library's reference implementation of the part, as ``grade(reference=True)`` does.
    """
    part = _course_parts()[index]
    path = part.source if folder == "reference" else ROOT / folder / part.file
    return grade_part(part, path, timeout=TIMEOUT, memory_mb=DEFAULT_MEMORY_MB, seed=SEED, strict=False)


@functools.cache
def graded_course(folder: str) -> tuple[PartResult, ...]:
    """Every chapter's file in ``folder`` (``"solutions"``, ``"exercises"`` or ``"reference"``), graded as the bugs are
    (once per run, ``JOBS`` parts at a time in spawned processes), in the course's order: what ``grade("all", ...)`` returns.

    Shared by several tests: read the results, never change them.
    """
    indices = range(len(_course_parts()))
    return tuple(_in_spawned_processes(grade_course_part, indices, [folder] * len(indices)))


def graded_solution(exercise_id: str) -> ExerciseResult:
    """Exercise ``exercise_id`` of the solutions, from :func:`graded_course`."""
    [result] = [r for part in graded_course("solutions") for r in part.exercises if r.exercise.id == exercise_id]
    return result
