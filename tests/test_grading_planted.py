"""The checks catch plausible mistakes: every planted bug (tests/grading/planted/bugs.py) costs points on its exercise."""

from pathlib import Path

import pytest
from planted_grading import BUGS, ROOT, SEED, graded_bug, graded_course, graded_solution


def test_bug_ids_are_unique_and_every_chapter_has_two():
    assert len({b.id for b in BUGS}) == len(BUGS)
    for number in ("01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11"):
        assert sum(b.file.startswith(number) for b in BUGS) >= 2, number


@pytest.mark.parametrize("exercise_id", sorted({b.exercise for b in BUGS}))
def test_unchanged_solution_scores_full_marks_with_the_same_seed(exercise_id):
    """The control: without the planted change the same exercise, graded the same way, loses nothing."""
    [file] = {b.file for b in BUGS if b.exercise == exercise_id}
    result = graded_solution(exercise_id)  # the solutions, graded once per run as the bugs are (tests/planted_grading.py)
    assert result.seed == SEED and _graded_file(exercise_id) == ROOT / "solutions" / file
    assert result.score == result.max_score, result.output


def _graded_file(exercise_id: str) -> Path:
    [part] = [p for p in graded_course("solutions") if any(r.exercise.id == exercise_id for r in p.exercises)]
    return part.file


@pytest.mark.parametrize("bug", BUGS, ids=[b.id for b in BUGS])
def test_planted_bug_loses_points_on_its_exercise(bug):
    result = graded_bug(bug.id)
    assert result.score < result.max_score, f"{bug.id} ({bug.description}) scored full marks on {bug.exercise}"


@pytest.mark.parametrize("bug_id, named", [
    ("split_remainder_points_back", "a cycle: the next of block"),
    ("merge_forgets_the_back_link", "a broken back-link: the next of block"),
])
def test_allocator_checks_name_the_broken_pointer(bug_id, named):
    """A block list with a cycle or a broken back-link is named in the feedback, not a bare MemoryError or KeyError."""
    result = graded_bug(bug_id)
    assert result.score < result.max_score and named in result.output, result.output
