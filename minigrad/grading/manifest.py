"""The exercise manifest: chapters, their exercise files (parts) and the points of each exercise.

A chapter has one or more *parts*: one library source file carrying solution
regions, the exercise/solution file generated from it, and the checks for it.
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
class Part:
    """One exercise file: generated from ``source``, graded by ``checks``."""

    chapter: str
    title: str  # the chapter's title
    source: Path
    file: str  # file name under exercises/ and solutions/
    checks: Path
    exercises: tuple[Exercise, ...]

    @property
    def max_points(self) -> float:
        return sum(e.points for e in self.exercises)


@dataclass(frozen=True)
class Chapter:
    number: str
    title: str
    parts: tuple[Part, ...]

    @property
    def exercises(self) -> tuple[Exercise, ...]:
        return tuple(e for p in self.parts for e in p.exercises)

    @property
    def max_points(self) -> float:
        return sum(p.max_points for p in self.parts)


@cache
def chapters() -> dict[str, Chapter]:
    raw = json.loads((Path(__file__).resolve().parent / "manifest.json").read_text())
    result = {}
    for number, c in raw["chapters"].items():
        parts = tuple(
            Part(
                chapter=number,
                title=c["title"],
                source=PACKAGE_DIR / p["source"],
                file=p["file"],
                checks=CHECKS_DIR / p["checks"],
                exercises=tuple(Exercise(**e) for e in p["exercises"]),
            )
            for p in c["parts"]
        )
        result[number] = Chapter(number, c["title"], parts)
    return result


def parts() -> list[Part]:
    return [p for c in chapters().values() for p in c.parts]


def chapter(number: str | int) -> Chapter:
    """Look a chapter up by ``"01"``, ``"1"`` or ``1``."""
    key = f"{int(number):02d}" if str(number).isdigit() else str(number)
    try:
        return chapters()[key]
    except KeyError:
        known = ", ".join(chapters())
        raise ValueError(f"no graded exercises for chapter {number!r}; chapters with exercises: {known}") from None


def part_of(key: str | int) -> Part:
    """The exercise file for ``key``: a chapter with a single file ("01") or an exercise id ("5.3")."""
    key = str(key)
    if "." in key:
        for p in parts():
            if any(e.id == key for e in p.exercises):
                return p
        raise ValueError(f"no exercise {key!r}; exercises: {', '.join(e.id for p in parts() for e in p.exercises)}")
    ch = chapter(key)
    if len(ch.parts) > 1:
        listing = "; ".join(f"{p.file} ({', '.join(e.id for e in p.exercises)})" for p in ch.parts)
        raise ValueError(
            f"chapter {ch.number} has {len(ch.parts)} exercise files: {listing}; "
            f"choose one by an exercise id, e.g. {ch.parts[-1].exercises[0].id!r}"
        )
    return ch.parts[0]
