"""Present grading results: a text table for people, Gradescope's results.json for platforms."""

from __future__ import annotations

import json
from pathlib import Path

from minigrad.grading.runner import PartResult

_STATUS = {"passed": "ok", "partial": "partial", "failed": "FAILED", "not started": "not started", "timeout": "TIMEOUT",
           "crashed": "CRASHED"}


def _points(x: float) -> str:
    return f"{x:g}"


def table(results: list[PartResult], details: bool = True) -> str:
    """A fixed-width table: one row per exercise, a total per chapter and overall.

    With ``details``, a failing exercise's row is followed by its summary: one
    line for an untouched stub, else the first failure, the other failing
    checks by name and the command that replays the run.
    """
    rows = []
    width = max((len(r.exercise.title) for c in results for r in c.exercises), default=20)
    for c in results:
        rows.append(f"Chapter {c.part.chapter} - {c.part.title}  ({c.file.name})")
        for r in c.exercises:
            e = r.exercise
            rows.append(f"  {e.id:<5} {e.title:<{width}}  {_points(r.score):>5} / {_points(e.points):<4} {_STATUS[r.status]}")
            text = r.output if r.summary is None else r.summary
            if details and r.status != "passed" and text:
                rows += [f"        {line}" for line in text.splitlines()[:12]]
        rows.append(f"  {'total':<5} {'':<{width}}  {_points(c.score):>5} / {_points(c.max_score)}")
        rows.append("")
    if len(results) > 1:
        total = sum(c.score for c in results)
        best = sum(c.max_score for c in results)
        rows.append(f"All: {_points(total)} / {_points(best)}")
    return "\n".join(rows).rstrip() + "\n"


def gradescope(results: list[PartResult]) -> dict:
    """Gradescope autograder format: total score plus one test entry per exercise."""
    tests = [
        {
            "name": f"Exercise {r.exercise.id}: {r.exercise.title}",
            "score": r.score,
            "max_score": r.max_score,
            "status": "passed" if r.status == "passed" else "failed",
            "output": r.output or "all checks passed",
        }
        for c in results
        for r in c.exercises
    ]
    return {
        "score": round(sum(t["score"] for t in tests), 2),
        "output": f"minigrad grader: {len(tests)} exercises",
        "tests": tests,
    }


def write_gradescope(results: list[PartResult], path: str | Path) -> None:
    Path(path).write_text(json.dumps(gradescope(results), indent=2) + "\n")
