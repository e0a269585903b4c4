"""The exercise manifest: chapters, their exercises and the points each is worth.

The manifest is the single place where maximum points live, so a submission
that crashes or times out still counts against the full denominator.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
CHECKS_DIR = Path(__file__).resolve().parent / "checks"


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    points: float


@dataclass(frozen=True)
class Chapter:
    number: str
    title: str
    source: Path  # the library file that carries the solution regions
    file: str  # file name under exercises/ and solutions/
    checks: Path
    exercises: tuple[Exercise, ...]

    @property
    def max_points(self) -> float:
        return sum(e.points for e in self.exercises)


@cache
def chapters() -> dict[str, Chapter]:
    raw = json.loads((Path(__file__).resolve().parent / "manifest.json").read_text())
    return {
        number: Chapter(
            number=number,
            title=c["title"],
            source=PACKAGE_DIR / c["source"],
            file=c["file"],
            checks=CHECKS_DIR / c["checks"],
            exercises=tuple(Exercise(**e) for e in c["exercises"]),
        )
        for number, c in raw["chapters"].items()
    }


def chapter(number: str | int) -> Chapter:
    """Look a chapter up by ``"01"``, ``"1"`` or ``1``."""
    key = f"{int(number):02d}" if str(number).isdigit() else str(number)
    try:
        return chapters()[key]
    except KeyError:
        known = ", ".join(chapters())
        raise ValueError(f"no graded exercises for chapter {number!r}; chapters with exercises: {known}") from None
