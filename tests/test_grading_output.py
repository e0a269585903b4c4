"""What the grader prints is short and actionable: one line for an untouched stub, the smallest failing input, FILE:LINE."""

import importlib.util
import math
import re
from pathlib import Path

import pytest

from planted_grading import BY_ID as BUGS
from planted_grading import SEED, graded_bug, graded_course, planted_file

from minigrad.grading.carve import stub_text
from minigrad.grading.manifest import part_of, parts
from minigrad.grading.report import gradescope, table
from minigrad.grading.runner import DEFAULT_MEMORY_MB, PartResult, grade_exercise

ROOT = Path(__file__).resolve().parents[1]


def _grade_bug(bug_id: str, tmp_path: Path) -> str:
    """The table's text for one planted bug's exercise (graded once per run, see tests/planted_grading.py)."""
    result = graded_bug(bug_id)
    assert result.score < result.max_score
    path = planted_file(bug_id)
    return table([PartResult(part_of(BUGS[bug_id].exercise), path, [result])])


def test_untouched_stubs_print_at_most_two_lines_per_exercise():
    results = graded_course("exercises")  # graded once per run, with SEED (tests/planted_grading.py)
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


# Caught only by what is judged at the exercise's own sizes (coalescing, bank conflicts, the GPU build, whole
# warps): their report names the full-size launch.
FULL_SIZE_ONLY = {
    "matmul_signed_phase_offset": "the GPU build",
    "matmul_a_tile_loaded_down_columns": "coalescing",
    "transpose_tile_not_padded": "bank conflicts",
    "transpose_signed_loop": "the GPU build",
    "softmax_threads_not_warps": "whole warps",
}
SCALED_KERNEL_BUGS = [b.id for b in BUGS.values() if b.exercise in ("7.2", "7.3", "7.4", "7.5", "7.6", "7.7")
                      and b.id not in FULL_SIZE_ONLY]
_INPUT = {  # the input's operands as the counterexample names them
    "7.2": r"n=(\d+) elements", "7.3": r"a (\d+)x(\d+) @ \d+x(\d+) product", "7.4": r"(\d+) rows x (\d+) columns",
    "7.5": r"a (\d+) x (\d+) matrix", "7.6": r"n=(\d+) elements", "7.7": r"a (\d+) x (\d+) matrix",
}


@pytest.mark.parametrize("bug_id", SCALED_KERNEL_BUGS)
def test_a_failing_kernel_of_7_2_to_7_7_names_a_block_of_at_most_8_threads_and_a_small_input(bug_id, tmp_path):
    """At most 8 threads (one warp for 7.6's shuffles), at most 64 elements in each operand, the learner's FILE:LINE."""
    bug = BUGS[bug_id]
    text = _grade_bug(bug_id, tmp_path)
    found = re.search(r"smallest failing input: (.*)", text)
    assert found, text
    line = found.group(1)
    threads = re.search(r"blocks?(?:\(s\))? of (?:\d+ x \d+ = )?(\d+) threads", line)
    assert threads and int(threads.group(1)) <= (32 if bug.exercise == "7.6" else 8), text
    if bug.exercise == "7.6":
        assert "one warp" in line, text
    sizes = re.search(_INPUT[bug.exercise], line)
    assert sizes, text
    numbers = [int(n) for n in sizes.groups()]
    operands = [numbers[0] * numbers[1], numbers[1] * numbers[2]] if bug.exercise == "7.3" else [math.prod(numbers)]
    assert max(operands) <= 64, text
    assert re.search(rf"{re.escape(bug.file)}:\d+", text), text  # the learner's kernel or the failing line
    assert "at full size it fails too: " in text, text


@pytest.mark.parametrize("bug_id", ["matmul_a_tile_loaded_down_columns", "transpose_tile_not_padded"])
def test_coalescing_and_bank_conflicts_are_judged_at_the_exercise_sizes(bug_id, tmp_path):
    text = _grade_bug(bug_id, tmp_path)
    assert re.search(r"smallest failing input: .* block\(s\) of \d+ x \d+ = 256 threads\n", text), text
    assert "for this run" not in text, text


def _solution_module(file: str):
    spec = importlib.util.spec_from_file_location(f"solution_{file[:-3]}", ROOT / "solutions" / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_scaled_launch_leaves_the_module_and_its_host_code_at_the_real_sizes():
    import numpy as np

    from minigrad.grading.checks._kernels import call_scaled, launch_scaled

    module = _solution_module("07_block_reduce.py")
    x = np.arange(13, dtype=np.float32)
    answer = launch_scaled(module, {}, "block_sum", {"BLOCK": [256, 8]}, 2, 8, [x, np.zeros(1, np.float32), 13])
    assert answer["arrays"][1][0] == x.sum() and answer["stats"]["block"] == (8, 1, 1)
    assert module.BLOCK == 256 and module.block_sum.func.__globals__["BLOCK"] == 256
    module.shared_memory_sum(x)
    from minigrad.gpu import jit

    assert jit.last_launch_stats().as_dict()["block"] == (256, 1, 1)
    assert launch_scaled(module, {}, "block_sum", {"BLOCK": [128, 8]}, 1, 8, [x, np.zeros(1, np.float32), 13]) is None
    softmax = _solution_module("07_softmax.py")
    answer = call_scaled(softmax, {}, "softmax_rows", {"BLOCK": [None, 8]}, [np.ones((2, 3), np.float32)])
    assert answer["stats"]["block"] == (8, 1, 1) and softmax.BLOCK == 128


def test_a_scaled_failure_alone_fails_nothing_and_leads_the_report_when_the_full_size_fails():
    from minigrad.grading.checks._smallest import Counterexample, first_failure_confirmed

    def attempt(case):
        assert case not in failing, f"wrong at {case}"

    failing = {"small"}
    first_failure_confirmed(["small"], ["full"], attempt, str)
    failing = {"small", "full"}
    with pytest.raises(Counterexample) as raised:
        first_failure_confirmed(["tiny", "small"], ["full"], attempt, str)
    assert raised.value.described == "small" and "at full size it fails too: full" in str(raised.value)
    failing = {"full"}
    with pytest.raises(Counterexample) as raised:
        first_failure_confirmed(["small"], ["full"], attempt, str)
    assert raised.value.described == "full" and "fails too" not in str(raised.value)


CHECKPOINT_BUGS = [b.id for b in BUGS.values() if b.exercise in ("10.1", "10.2", "10.3", "10.4")]
_CHECKPOINT_INPUT = {  # the counterexample's size, as it names it
    "10.1": r"on a \((\d+), (\d+)\) batch", "10.2": r"of shape \((\d+), (\d+)\)", "10.3": r"segment_bounds\((\d+), \d+\)",
    "10.4": r"a chain of (\d+) layers?:",
}
_CHECKPOINT_AT_MOST = {"10.3": 3, "10.4": 4}  # functions or layers; else input elements


@pytest.mark.parametrize("bug_id", CHECKPOINT_BUGS)
def test_a_failing_chapter_10_exercise_leads_with_a_small_block(bug_id, tmp_path):
    """At most 16 input elements (a chain of at most 3 functions for 10.3, 4 layers for 10.4), the learner's
    FILE:LINE when it raised."""
    bug = BUGS[bug_id]
    text = _grade_bug(bug_id, tmp_path)
    found = re.search(r"smallest failing input: (.*)", text)
    assert found, text
    size = re.search(_CHECKPOINT_INPUT[bug.exercise], found.group(1))
    assert size, text
    assert math.prod(int(n) for n in size.groups()) <= _CHECKPOINT_AT_MOST.get(bug.exercise, 16), text
    if "Error: " in text:  # the learner's code raised: its line is named
        assert re.search(rf"\({re.escape(bug.file)}:\d+\)", text), text
    assert text.count("replay: minigrad grade") == 1, text


def test_the_chain_dp_checks_lowest_peak_is_the_lowest_any_plan_reaches():
    """10.4's budgets: the bisected lowest peak (long chains) equals the least of every plan's peak (short ones)."""
    import random

    from minigrad.grading.checks import ch10_chain_dp as checks

    r = random.Random(4)
    for n in range(1, 7):
        for _ in range(4):
            saved, inputs = [r.randint(1, 40) for _ in range(n)], [r.randint(1, 15) for _ in range(n)]
            peaks = checks._all_peaks(saved, inputs)
            assert checks._lowest_peak((saved, inputs, [1] * n, None)) == peaks[0] and peaks[-1] >= sum(saved)
