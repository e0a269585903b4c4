"""The checks catch plausible mistakes: every planted bug (tests/grading/planted/bugs.py) costs points on its exercise."""

import importlib.util
from pathlib import Path

import pytest

from minigrad.grading.manifest import part_of
from minigrad.grading.runner import DEFAULT_MEMORY_MB, grade_exercise

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261201
TIMEOUT = 30.0


def _load_bugs():
    spec = importlib.util.spec_from_file_location("planted_bugs", ROOT / "tests" / "grading" / "planted" / "bugs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BUGS


BUGS = _load_bugs()


def test_bug_ids_are_unique_and_every_chapter_has_two():
    assert len({b.id for b in BUGS}) == len(BUGS)
    for number in ("01", "02", "03", "04", "05", "06", "07", "08", "09"):
        assert sum(b.file.startswith(number) for b in BUGS) >= 2, number


def _grade(exercise_id: str, path: Path):
    part = part_of(exercise_id)
    assert part.file == path.name, f"exercise {exercise_id} is in {part.file}, not {path.name}"
    [exercise] = [e for e in part.exercises if e.id == exercise_id]
    return grade_exercise(part, exercise, path, timeout=TIMEOUT, memory_mb=DEFAULT_MEMORY_MB, seed=SEED)


@pytest.mark.parametrize("exercise_id", sorted({b.exercise for b in BUGS}))
def test_unchanged_solution_scores_full_marks_with_the_same_seed(exercise_id):
    """The control: without the planted change the same exercise, graded the same way, loses nothing."""
    [file] = {b.file for b in BUGS if b.exercise == exercise_id}
    result = _grade(exercise_id, ROOT / "solutions" / file)
    assert result.score == result.max_score, result.output


@pytest.mark.parametrize("bug", BUGS, ids=[b.id for b in BUGS])
def test_planted_bug_loses_points_on_its_exercise(bug, tmp_path):
    solution = (ROOT / "solutions" / bug.file).read_text()
    assert solution.count(bug.original) == 1, f"{bug.id}: the text to replace must occur exactly once in solutions/{bug.file}"
    path = tmp_path / bug.file
    path.write_text(solution.replace(bug.original, bug.replacement))
    result = _grade(bug.exercise, path)
    assert result.score < result.max_score, f"{bug.id} ({bug.description}) scored full marks on {bug.exercise}"


@pytest.mark.parametrize("bug_id, named", [
    ("split_remainder_points_back", "a cycle: the next of block"),
    ("merge_forgets_the_back_link", "a broken back-link: the next of block"),
])
def test_allocator_checks_name_the_broken_pointer(bug_id, named, tmp_path):
    """A block list with a cycle or a broken back-link is named in the feedback, not a bare MemoryError or KeyError."""
    [bug] = [b for b in BUGS if b.id == bug_id]
    path = tmp_path / bug.file
    path.write_text((ROOT / "solutions" / bug.file).read_text().replace(bug.original, bug.replacement))
    result = _grade(bug.exercise, path)
    assert result.score < result.max_score and named in result.output, result.output
