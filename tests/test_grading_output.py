"""What the grader prints is short and actionable: one line for an untouched stub, the smallest failing input, FILE:LINE."""

import importlib.util
import math
import re
from pathlib import Path

import pytest

from minigrad.grading import grade
from minigrad.grading.carve import stub_text
from minigrad.grading.manifest import part_of, parts
from minigrad.grading.report import gradescope, table
from minigrad.grading.runner import DEFAULT_MEMORY_MB, PartResult, grade_exercise

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261201


def _bugs():
    spec = importlib.util.spec_from_file_location("planted_bugs", ROOT / "tests" / "grading" / "planted" / "bugs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {b.id: b for b in module.BUGS}


BUGS = _bugs()


def _grade_bug(bug_id: str, tmp_path: Path) -> str:
    """The table's text for one planted bug's exercise."""
    bug = BUGS[bug_id]
    path = tmp_path / bug.file
    path.write_text((ROOT / "solutions" / bug.file).read_text().replace(bug.original, bug.replacement))
    part = part_of(bug.exercise)
    [exercise] = [e for e in part.exercises if e.id == bug.exercise]
    result = grade_exercise(part, exercise, path, timeout=30.0, memory_mb=DEFAULT_MEMORY_MB, seed=SEED)
    assert result.score < result.max_score
    return table([PartResult(part, path, [result])])


def test_untouched_stubs_print_at_most_two_lines_per_exercise():
    results = grade("all", folder=ROOT / "exercises", show=False, seed=SEED)
    for result in results:
        text = table([result])
        rows = text.splitlines()[1:-1]  # the chapter's header and total left out
        assert len(rows) <= 2 * len(result.exercises), text
        assert all(r.status == "not started" for r in result.exercises), text
        assert text.count("(hint: ") == len(result.exercises), text  # the hint once per exercise
    for test in gradescope(results)["tests"]:
        assert test["status"] == "failed" and test["output"].startswith("not started: open "), test
        assert "exercises/" in test["output"] and "(hint: " in test["output"]


@pytest.mark.parametrize("exercise", [e for p in parts() if len(p.exercises) > 1 for e in p.exercises], ids=lambda e: e.id)
def test_an_exercise_scores_full_marks_with_only_its_own_solution(exercise, tmp_path):
    """Each exercise is graded on its own: the chapter's other exercises left as stubs cost it nothing."""
    part = part_of(exercise.id)
    path = tmp_path / part.file
    path.write_text(stub_text(part, (exercise.id,)))
    result = grade_exercise(part, exercise, path, timeout=60.0, memory_mb=DEFAULT_MEMORY_MB, seed=SEED)
    assert result.score == result.max_score, result.output



GRAPH_BUGS = ["topological_order_lists_reused_node_twice", "topological_order_parents_first"] + [
    b.id for b in BUGS.values() if b.exercise == "4.5"
]


@pytest.mark.parametrize("bug_id", GRAPH_BUGS)
def test_a_graph_exercise_shows_a_counterexample_of_at_most_5_nodes(bug_id, tmp_path):
    text = _grade_bug(bug_id, tmp_path)
    sizes = [int(n) for n in re.findall(r"smallest failing input: a graph of (\d+) nodes", text)]
    assert sizes and sizes[0] <= 5, text
    file = BUGS[bug_id].file
    assert re.search(rf"{re.escape(file)}:\d+", text), text  # the learner's function, as FILE:LINE
    assert text.count("replay: minigrad grade") == 1 and "[seed" not in text, text


VIEW_BUGS = ["index_ignores_offset", "permute_keeps_strides", "view_never_copies", "view_merges_any_neighbours",
             "view_stride_of_whole_run", "map_writes_out_contiguously", "map_forgets_source_offset",
             "map_forgets_out_offset", "expand_new_dims_stride_one"]


@pytest.mark.parametrize("bug_id", VIEW_BUGS)
def test_a_failing_chapter_3_exercise_shows_a_2_by_3_or_smaller_array(bug_id, tmp_path):
    text = _grade_bug(bug_id, tmp_path)
    shape = re.search(r"smallest failing input: a view of shape \(([\d, ]*)\)", text)
    assert shape, text
    assert math.prod(int(n) for n in shape.group(1).replace(",", " ").split()) <= 6, text


KERNEL_BUGS = ["grid_stride_bound_off_by_one", "grid_stride_no_loop", "grid_stride_steps_by_one",
               "grid_stride_steps_by_block", "thread_index_forgets_the_block"]


@pytest.mark.parametrize("bug_id", KERNEL_BUGS)
def test_a_failing_kernel_names_a_block_of_at_most_8_threads(bug_id, tmp_path):
    text = _grade_bug(bug_id, tmp_path)
    threads = re.search(r"smallest failing input: .* block\(s\) of (\d+) threads", text)
    assert threads and int(threads.group(1)) <= 8, text


def test_a_learner_exception_is_shown_once_as_file_and_line(tmp_path):
    text = _grade_bug("grid_stride_bound_off_by_one", tmp_path)
    assert len(re.findall(r"\(07_elementwise\.py:\d+\)", text)) == 1, text
