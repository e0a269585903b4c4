"""The teacher's gradebook: grade a folder of submissions into one CSV, a row per student.

The folder holds, in either layout (they may be mixed)::

    submissions/
        alice/05_linear.py       a folder per student, holding files named like the course's exercises/NN_*.py
        bob__05_linear.py        or one file per student and exercise file: <student>__<NN_name>.py

Each exercise file is graded as ``minigrad grade`` grades one file
(:func:`minigrad.grading.runner.grade_part`): the checks run in a grading
process, the submission in one sandboxed child per exercise, never there. One
seed serves the whole batch, so every student gets the same inputs.

Invariants
- A bad submission (a syntax error, an infinite loop, a refused import, a file
  that is not an exercise file) costs only its own points; the batch goes on.
- The maximum points come from the manifest; a missing or refused file scores 0.
- The results do not depend on ``jobs``: students are graded independently,
  each in a grading process of their own (the checks compute references with the
  library, whose modes, such as grad mode, are process-wide: two students graded
  in threads of one process would switch them under each other), with the same
  seed, and listed by name.
- The only file written is the CSV, atomically (a temporary file, then a rename).
- Text that comes from a submission (an error message) is shown with its
  control characters replaced, and no CSV cell starts with a formula sign.
"""

from __future__ import annotations

import csv
import difflib
import io
import multiprocessing
import os
import random
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from minigrad.grading.loader import check_file_matches
from minigrad.grading.manifest import Chapter, Part, chapter, chapters, parts
from minigrad.grading.runner import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, PartResult, check_limits, grade_part

FLAT_SEPARATOR = "__"  # <student>__<NN_name>.py
LAYOUT_HELP = ("a folder per student holding files named like exercises/NN_*.py (submissions/alice/05_linear.py), "
               f"or one file per student and exercise file (submissions/alice{FLAT_SEPARATOR}05_linear.py)")


@dataclass(frozen=True)
class Submission:
    """One student's files: exercise file name (``05_linear.py``) -> the file handed in."""

    student: str
    files: dict[str, Path]
    refused: tuple[tuple[str, str], ...] = ()  # (file name, why) for files that are not graded


@dataclass
class StudentGrades:
    student: str
    scores: dict[str, float]  # exercise id -> points
    parts: list[PartResult] = field(default_factory=list)  # the full results, for the files that were graded
    missing: list[str] = field(default_factory=list)  # exercise files of the selected chapters not handed in
    refused: list[tuple[str, str]] = field(default_factory=list)  # (file name, why): scored 0 without a check passing
    timed_out: list[tuple[str, str]] = field(default_factory=list)  # (exercise id, file name)
    seconds: float = 0.0


@dataclass
class Gradebook:
    chapters: list[Chapter]
    students: list[StudentGrades]
    unassigned: list[tuple[str, str]]  # (top-level name, why): files that belong to no student
    seed: int
    jobs: int
    seconds: float

    @property
    def exercises(self):
        return [e for c in self.chapters for e in c.exercises]

    def header(self) -> list[str]:
        return ["student", *(f"{e.id}/{e.points:g}" for e in self.exercises),
                *(f"ch{c.number}/{c.max_points:g}" for c in self.chapters),
                f"total/{sum(c.max_points for c in self.chapters):g}", "notes"]

    def row(self, grades: StudentGrades) -> list[str]:
        per_chapter = [sum(grades.scores[e.id] for e in c.exercises) for c in self.chapters]
        return [_cell(grades.student), *(f"{grades.scores[e.id]:g}" for e in self.exercises),
                *(f"{round(x, 2):g}" for x in per_chapter), f"{round(sum(per_chapter), 2):g}", _cell(_notes(grades))]

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.header())
        writer.writerows(self.row(g) for g in self.students)
        return out.getvalue()


def _printable(text: str, limit: int = 240) -> str:
    """``text`` on one line, control characters (terminal escapes) replaced, at most ``limit`` characters."""
    text = "".join(c if c.isprintable() else "?" for c in " ".join(str(text).split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text, never evaluates as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _notes(grades: StudentGrades) -> str:
    notes = [f"timed out: {e} ({f})" for e, f in grades.timed_out]
    notes += [f"refused {f}: {why}" for f, why in grades.refused]
    if grades.missing:
        notes.append(f"missing: {', '.join(grades.missing)}")
    return "; ".join(notes)


def _not_an_exercise_file(name: str) -> str:
    known = [p.file for p in parts()]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    hint = f"did you mean {close[0]}?" if close else "exercise files are named like exercises/NN_*.py, e.g. 05_linear.py"
    return f"not an exercise file ({hint})"


def collect(folder: str | Path) -> tuple[list[Submission], list[tuple[str, str]]]:
    """The submissions in ``folder`` (see the module docstring), by student name; and the files of no student.

    Hidden files and ``__pycache__`` are skipped; symbolic links are refused
    (a link could point at the reference solutions).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"gradebook: {folder} is not a folder of submissions; it should hold {LAYOUT_HELP}")
    known = {p.file for p in parts()}
    files: dict[str, dict[str, Path]] = {}
    refused: dict[str, list[tuple[str, str]]] = {}
    unassigned: list[tuple[str, str]] = []

    def add(student: str, name: str, path: Path) -> None:
        mine, why = files.setdefault(student, {}), refused.setdefault(student, [])
        if path.is_symlink():
            why.append((name, "a symbolic link, not a file"))
        elif path.is_dir():
            why.append((name, "a folder, not an exercise file"))
        elif name not in known:
            why.append((name, _not_an_exercise_file(name)))
        elif name in mine:
            why.append((name, f"a second copy of {name} ({mine[name].relative_to(folder)} is graded)"))
        else:
            mine[name] = path

    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.is_dir() and not entry.is_symlink():
            files.setdefault(entry.name, {})
            for inner in sorted(entry.iterdir()):
                if not (inner.name.startswith(".") or inner.name == "__pycache__"):
                    add(entry.name, inner.name, inner)
        elif FLAT_SEPARATOR in entry.name and entry.name.rpartition(FLAT_SEPARATOR)[0]:
            student, _, name = entry.name.rpartition(FLAT_SEPARATOR)
            add(student, name, entry)
        else:
            unassigned.append((entry.name, f"not a submission: {LAYOUT_HELP}"))
    submissions = [Submission(s, files.get(s, {}), tuple(refused.get(s, ()))) for s in sorted(set(files) | set(refused))]
    return submissions, unassigned


def _load_refusal(message: str) -> str:
    """Why a file could not be loaded, for the teacher: the kind first (syntax error, refused by the sandbox)."""
    kind = message.split(":", 1)[0]
    if kind in ("SyntaxError", "IndentationError", "TabError"):
        return f"syntax error: {message}"
    if "the grader does not allow submissions to " in message:
        return "refused by the sandbox: " + message.split("the grader does not allow submissions to ", 1)[1]
    return f"could not load: {message}"


def grade_student(
    submission: Submission,
    selected: list[Part],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    seed: int,
) -> StudentGrades:
    """Grade ``submission``'s files for the exercise files ``selected``; every exercise gets a score (0 if missing)."""
    start = time.monotonic()
    grades = StudentGrades(submission.student, {e.id: 0.0 for p in selected for e in p.exercises})
    grades.refused = [(name, _printable(why)) for name, why in submission.refused]
    for part in selected:
        path = submission.files.get(part.file)
        if path is None:
            grades.missing.append(part.file)
            continue
        data = path.read_bytes()
        if b"\0" in data:
            grades.refused.append((part.file, "not a Python text file (it holds NUL bytes)"))
            continue
        try:
            check_file_matches(part, path)
        except ValueError:
            grades.refused.append((part.file, f"not {part.file}: it defines another exercise file's functions, none of this one's"))
            continue
        result = grade_part(part, path, timeout=timeout, memory_mb=memory_mb, seed=seed, strict=True)
        grades.parts.append(result)
        load_errors = []
        for r in result.exercises:
            grades.scores[r.exercise.id] = r.score
            if r.status == "timeout":
                grades.timed_out.append((r.exercise.id, part.file))
            elif r.load_error is not None and _printable(r.load_error) not in load_errors:
                load_errors.append(_printable(r.load_error))
        grades.refused += [(part.file, _load_refusal(message)) for message in load_errors]
    grades.seconds = time.monotonic() - start
    return grades


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def selected_chapters(numbers: list[str] | None, submissions: list[Submission]) -> list[Chapter]:
    """The chapters ``numbers`` in course order (default: every chapter some student handed a file in for)."""
    if numbers:
        wanted = {chapter(n).number for n in numbers}  # raises ValueError naming the chapters that exist
    else:
        handed_in = {name for s in submissions for name in s.files}
        wanted = {c.number for c in chapters().values() if any(p.file in handed_in for p in c.parts)}
    return [c for c in chapters().values() if c.number in wanted]


def grade_all(
    folder: str | Path,
    chapter_numbers: list[str] | None = None,
    *,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    seed: int | None = None,
    progress: Callable[[StudentGrades], None] | None = None,
) -> Gradebook:
    """Grade every student in ``folder`` on ``chapter_numbers``, ``jobs`` students at a time.

    Each student is graded in a process of their own (the module docstring says
    why), ``jobs`` at a time. ``progress`` is called here with each student's
    grades as they are done (in the order they finish).
    """
    check_limits(timeout, memory_mb)
    jobs = default_jobs() if jobs is None else jobs
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"--jobs {jobs}: must be a whole number >= 1 (students graded at once), e.g. --jobs {default_jobs()}")
    start = time.monotonic()
    submissions, unassigned = collect(folder)
    selected = selected_chapters(chapter_numbers, submissions)
    if not selected:
        raise ValueError(f"gradebook: no exercise file in {folder}; it should hold {LAYOUT_HELP}, or name chapters with --chapters")
    seed = random.SystemRandom().randrange(2**32) if seed is None else seed
    selected_parts = [p for c in selected for p in c.parts]

    # "spawn": a fresh interpreter per grading process, never a fork of this one's state (or its threads)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = [pool.submit(grade_student, submission, selected_parts, timeout=timeout, memory_mb=memory_mb, seed=seed)
                   for submission in submissions]
        for future in as_completed(pending):
            if progress is not None:
                progress(future.result())
        students = [future.result() for future in pending]
    return Gradebook(selected, students, unassigned, seed, jobs, time.monotonic() - start)


def write_csv(book: Gradebook, path: str | Path) -> None:
    """Write the gradebook to ``path`` atomically: readers see the old file or the whole new one."""
    from minigrad.files import atomic_write

    with atomic_write(path) as f:
        f.write(book.csv_text().encode())


def summary(book: Gradebook) -> str:
    """For the teacher: the mean of each exercise, who timed out, who was refused and why, how long it took."""
    n = len(book.students)
    names = ", ".join(c.number for c in book.chapters)
    lines = [f"graded {n} student{'s' if n != 1 else ''} on chapter{'s' if len(book.chapters) > 1 else ''} {names} "
             f"in {book.seconds:.1f} s ({book.jobs} at a time, seed {book.seed})"]
    if n:
        titles = {e.id: _printable(e.title, 48) for e in book.exercises}
        width = max(map(len, titles.values()))
        lines.append("mean per exercise:")
        for e in book.exercises:
            mean = sum(g.scores[e.id] for g in book.students) / n
            lines.append(f"  {e.id:<5} {titles[e.id]:<{width}}  {mean:6.2f} / {e.points:g}")
        total = sum(sum(g.scores.values()) for g in book.students) / n
        lines.append(f"  {'total':<5} {'':<{width}}  {total:6.2f} / {sum(c.max_points for c in book.chapters):g}")
    timed_out = [f"{_printable(g.student)} {e} ({f})" for g in book.students for e, f in g.timed_out]
    lines.append(f"timed out: {', '.join(timed_out)}" if timed_out else "timed out: nobody")
    refused = [f"  {_printable(g.student)}: {_printable(f)}: {why}" for g in book.students for f, why in g.refused]
    lines += [f"refused ({len(refused)}):", *refused] if refused else ["refused: nothing"]
    lines += [f"not graded: {_printable(name)}: {why}" for name, why in book.unassigned]
    return "\n".join(lines) + "\n"
