"""Grade a learner's file: each exercise's checks run in their own sandboxed process.

One process per exercise means an infinite loop or a crash in one exercise
costs only that exercise's points. Scores are ``points * passed / checks``;
the maximum always comes from the manifest.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from minigrad.grading import sandbox
from minigrad.grading.loader import find_exercise_file
from minigrad.grading.manifest import Exercise, Part, chapter, chapters, part_of

DEFAULT_TIMEOUT = 60.0
DEFAULT_MEMORY_MB = 2048

_PYTEST_INI = "[pytest]\naddopts = -p no:cacheprovider\n"


@dataclass
class ExerciseResult:
    exercise: Exercise
    score: float
    status: str  # "passed", "partial", "failed", "timeout" or "crashed"
    output: str
    checks_passed: int = 0
    checks_total: int = 0

    @property
    def max_score(self) -> float:
        return self.exercise.points


@dataclass
class PartResult:
    """The results of one exercise file."""

    part: Part
    file: Path
    exercises: list[ExerciseResult] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(r.score for r in self.exercises)

    @property
    def max_score(self) -> float:
        return self.part.max_points


def _read_results(path: Path) -> tuple[list[str] | None, dict[str, tuple[bool, str]]]:
    collected, outcome = None, {}
    if not path.exists():
        return collected, outcome
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("event") == "collected":
            collected = entry["tests"]
        elif entry.get("event") == "result":
            ok, message = outcome.get(entry["test"], (True, ""))
            passed = ok and entry["outcome"] == "passed"
            outcome[entry["test"]] = (passed, message or entry.get("message", ""))
    return collected, outcome


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def grade_exercise(ch: Part, exercise: Exercise, file: Path, timeout: float, memory_mb: int) -> ExerciseResult:
    with tempfile.TemporaryDirectory(prefix="minigrad-grade-") as tmp:
        tmp = Path(tmp)
        (tmp / "pytest.ini").write_text(_PYTEST_INI)
        results = tmp / "results.jsonl"
        env = dict(os.environ, MINIGRAD_SUBMISSION=str(file), MINIGRAD_RESULTS=str(results))
        env.pop("PYTEST_ADDOPTS", None)
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only our plugin: faster start, no surprises
        command = [
            sys.executable, "-m", "pytest", str(ch.checks),
            "-c", str(tmp / "pytest.ini"), "--rootdir", str(tmp),
            "-p", "minigrad.grading.pytest_plugin", "--exercise", exercise.id,
            "-q", "--tb=short", "--no-header",
        ]
        run = sandbox.run(command, timeout=timeout, memory_mb=memory_mb, env=env, cwd=tmp, log_path=tmp / "log.txt")
        collected, outcome = _read_results(results)

    if not collected:
        why = f"timed out after {timeout:g} s" if run.timed_out else "the checks could not start"
        return ExerciseResult(exercise, 0.0, "timeout" if run.timed_out else "crashed", f"{why}\n{_tail(run.output)}")
    passed = sum(1 for test in collected if outcome.get(test, (False, ""))[0])
    score = round(exercise.points * passed / len(collected), 2)
    messages = []
    for test in collected:
        ok, message = outcome.get(test, (False, ""))
        if not ok:
            name = test.split("::")[-1]
            if test not in outcome:
                message = f"timed out after {timeout:g} s (an infinite loop?)" if run.timed_out else "did not finish: the process died (sys.exit/os._exit/crash?)"
            messages.append(f"{name}: {message}")
    if run.timed_out:
        status = "timeout"
    elif passed == len(collected):
        status = "passed"
    else:
        status = "partial" if passed else "failed"
    return ExerciseResult(exercise, score, status, "\n".join(messages), passed, len(collected))


def grade_part(
    part: Part,
    file: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
) -> PartResult:
    """Grade one exercise file (default: ``exercises/NN_*.py`` found from the current folder)."""
    path = Path(file).resolve() if file else find_exercise_file(part)
    if not path.is_file():
        raise FileNotFoundError(f"grade {part.chapter}: no such file {path}")
    result = PartResult(part, path)
    for exercise in part.exercises:
        result.exercises.append(grade_exercise(part, exercise, path, timeout, memory_mb))
    return result


def resolve_files(which: str, file: str | Path | None, folder: str | Path | None, reference: bool) -> list[tuple[Part, Path | None]]:
    """The exercise files to grade, each with the file to grade (None: find it from the current folder)."""
    if which == "all":
        selected = [p for c in chapters().values() for p in c.parts]
    elif "." in which:  # an exercise id: the file that holds it
        selected = [part_of(which)]
    else:
        selected = list(chapter(which).parts)
    if file is not None and len(selected) > 1:
        by_name = [p for p in selected if p.file == Path(file).name]
        if len(by_name) != 1:
            names = ", ".join(p.file for p in selected)
            raise ValueError(
                f"grade {which}: this grades {len(selected)} files ({names}); name your file like one of them, "
                f"grade one exercise's file (e.g. `minigrad grade {selected[-1].exercises[0].id} --file ...`), "
                f"or use --dir for a folder of exercise files"
            )
        selected = by_name
    files: list[tuple[Part, Path | None]] = []
    for p in selected:
        if reference:
            files.append((p, p.source))
        elif file is not None:
            files.append((p, Path(file)))
        elif folder is not None:
            files.append((p, Path(folder) / p.file))
        else:
            files.append((p, None))
    return files
