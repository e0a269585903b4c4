"""Every exercise has tiered help that teaches without handing over the code.

The convention (chapters 07-11 follow it too):

- The stub (``exercises/<file>``: the marker's one-line hint plus the library's
  docstrings and comments around the region) says *what* to compute and which
  idea of the chapter it uses. It never holds a line of the solution.
- The chapter's notebook holds two or three hint cells per exercise, markdown
  cells whose metadata is ``{"minigrad": {"hint": "<id>", "level": k}}`` and
  whose text is one collapsed ``<details>`` block: level 1 a nudge, level 2 the
  key formula or idea, level 3 (optional) a worked small case. No level holds
  a line of the solution's code.

"A line of the solution" is a line of a solution region (comments dropped,
whitespace ignored) that is long enough to say something and does not also
occur in the library outside the exercise regions (so a line the learner is
given anyway, such as ``return out``, is not a giveaway).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from minigrad.grading.carve import find_regions, stub_text
from minigrad.grading.manifest import chapters, parts

ROOT = Path(__file__).resolve().parent.parent
MIN_CHARS = 12  # shorter lines ("else:", "return y") say nothing on their own


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _code(line: str) -> str:
    return _squeeze(line.split("#", 1)[0])


def solution_lines(part) -> dict[str, set[str]]:
    """Exercise id -> the squeezed code lines of its solution that a stub or hint must not contain."""
    lines = part.source.read_text().splitlines()
    regions = find_regions(lines, str(part.source))
    inside = {i for r in regions for i in range(r.begin, r.end + 1)}
    given = {_code(line) for i, line in enumerate(lines) if i not in inside}
    return {
        r.exercise: {
            code
            for code in (_code(line) for line in lines[r.begin + 1 : r.end])
            if len(code) >= MIN_CHARS and code not in given
        }
        for r in regions
    }


def notebook_for(chapter: str) -> Path:
    found = sorted((ROOT / "chapters").glob(f"{chapter}_*.ipynb"))
    assert len(found) == 1, f"chapter {chapter}: expected one notebook, found {found}"
    return found[0]


def hint_cells(chapter: str) -> dict[str, dict[int, str]]:
    """Exercise id -> level -> the hint cell's text."""
    nb = json.loads(notebook_for(chapter).read_text())
    hints: dict[str, dict[int, str]] = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("minigrad", {})
        if "hint" in meta:
            assert cell["cell_type"] == "markdown", f"hint {meta} must be a markdown cell"
            level = int(meta["level"])
            assert level not in hints.setdefault(meta["hint"], {}), f"hint {meta} appears twice"
            hints[meta["hint"]][level] = "".join(cell["source"])
    return hints


def _leaks(text: str, solution: set[str]) -> list[str]:
    squeezed = _squeeze(text)
    return sorted(code for code in solution if code in squeezed)


@pytest.mark.parametrize("part", parts(), ids=lambda p: p.file)
def test_the_stub_does_not_contain_its_solution(part):
    stub = stub_text(part)
    for exercise, solution in solution_lines(part).items():
        leaked = _leaks(stub, solution)
        assert not leaked, f"exercises/{part.file}: the stub of {exercise} contains its solution: {leaked}"


@pytest.mark.parametrize("chapter", sorted(chapters()))
def test_each_exercise_has_two_or_three_collapsed_hint_levels(chapter):
    hints = hint_cells(chapter)
    wanted = {e.id for e in chapters()[chapter].exercises}
    assert set(hints) == wanted, f"chapter {chapter}: hint cells for {sorted(hints)}, exercises {sorted(wanted)}"
    for exercise, levels in hints.items():
        assert sorted(levels) in ([1, 2], [1, 2, 3]), f"{exercise}: hint levels {sorted(levels)}"
        for level, text in levels.items():
            stripped = text.strip()
            assert stripped.startswith("<details>") and stripped.endswith("</details>"), (
                f"{exercise} hint {level}: one collapsed <details> block"
            )
            assert f"Hint {level}" in stripped.split("</summary>")[0], (
                f"{exercise} hint {level}: the summary names the level ('Hint {level}')"
            )


@pytest.mark.parametrize("chapter", sorted(chapters()))
def test_no_hint_contains_the_solution_code(chapter):
    hints = hint_cells(chapter)
    for part in chapters()[chapter].parts:
        for exercise, solution in solution_lines(part).items():
            for level, text in sorted(hints.get(exercise, {}).items()):
                leaked = _leaks(text, solution)
                assert not leaked, f"{exercise} hint {level} contains solution code: {leaked}"


LEVEL_TWO_INVARIANT_CHAPTERS = ("07",)  # chapters whose level-2 hints follow the stricter rule below
ASSIGNMENT_OR_INDEX = re.compile(r"`[^`\n]*(?:[^=!<>]=[^=]|\+=|-=|\w\[[^\]`]*\])[^`\n]*`")


@pytest.mark.parametrize("chapter", LEVEL_TWO_INVARIANT_CHAPTERS)
def test_level_two_hints_state_the_invariant_without_spelling_out_code(chapter):
    """A level-2 hint says what holds after each step, and leaves the assignments and indices to the learner:
    no code span with an assignment (``x = ...``, ``+=``) or a subscript (``a[i + s]``)."""
    for exercise, levels in hint_cells(chapter).items():
        text = levels[2]
        assert "the invariant" in text.split("</summary>")[0], f"{exercise} hint 2: its summary names the invariant"
        spelled = ASSIGNMENT_OR_INDEX.findall(text)
        assert not spelled, f"{exercise} hint 2 spells out code: {spelled}"


# Chapters whose hints stop at the invariant: no level spells out an assignment in code, and no level before the
# worked case (3) an index or address expression in code, or the answer as an equation.
INVARIANT_CHAPTERS = ("08",)
CODE_SPAN = re.compile(r"`([^`\n]+)`|```.*?```", re.S)
ASSIGNMENT = re.compile(r"(?<![=!<>])(?:[-+*/]?=)(?!=)")
INDEXING = re.compile(r"\[[^\]]*[:+\-*][^\]]*\]|\w\.\w+\s*[-+*/]\s*\w")
EQUATION = re.compile(r"\$[^$]*=[^$]*\$")


def _spelled_out(text: str, level: int) -> list[str]:
    found = []
    for match in CODE_SPAN.finditer(text):
        code = match.group(0).strip("`")
        if ASSIGNMENT.search(code):
            found.append(f"an assignment in code: {code!r}")
        elif level < 3 and INDEXING.search(code):  # the worked case may show its inputs (views such as a[1:])
            found.append(f"an index or address expression in code: {code!r}")
    if level < 3:
        found += [f"an equation: {m.group(0)!r}" for m in EQUATION.finditer(text)]
    return found


@pytest.mark.parametrize("chapter", INVARIANT_CHAPTERS)
def test_hints_stop_at_the_invariant(chapter):
    """A hint says what must hold afterwards ("the blocks of a segment tile it; after the split there is one more"),
    never the statements that make it hold."""
    for exercise, levels in sorted(hint_cells(chapter).items()):
        for level, text in sorted(levels.items()):
            found = _spelled_out(text, level)
            assert not found, f"{exercise} hint {level} spells out the solution: {found}"


def test_the_invariant_rule_catches_spelled_out_hints():
    assert _spelled_out("The remainder starts at `block.address + size`", 2)
    assert _spelled_out("then `block.next.prev = remainder`", 3)
    assert _spelled_out("Activations: $B \\sum_{i=1}^{L-1} n_i$ and $P = n_0 n_1$", 2)
    assert _spelled_out("hidden widths `sizes[1:-1]`", 1)
    assert not _spelled_out("the `prev` of its `next` is the block itself; `malloc(1000)` rounds to 1024", 2)


@pytest.mark.parametrize("chapter", sorted(chapters()))
def test_every_chapter_has_a_grade_cell_and_a_try_my_code_cell(chapter):
    """The README's promise: each chapter grades its exercises in place and runs its demo on the learner's code."""
    nb = json.loads(notebook_for(chapter).read_text())
    code = ["".join(cell["source"]) for cell in nb["cells"] if cell["cell_type"] == "code"]
    assert any(f'grade("{chapter}")' in source for source in code), f"chapter {chapter}: no grade(\"{chapter}\") cell"
    assert any("try_my_code(" in source for source in code), f"chapter {chapter}: no try_my_code cell"
