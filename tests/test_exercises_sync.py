"""exercises/ and solutions/ are generated from the library and must match a fresh build."""

import subprocess
import sys
from pathlib import Path

import pytest

from minigrad.grading.carve import MarkerError, build, find_regions
from minigrad.grading.manifest import part_of, parts

ROOT = Path(__file__).resolve().parents[1]


def test_committed_exercises_and_solutions_match_a_fresh_build():
    stale = build(ROOT, check=True)
    assert not stale, f"run `minigrad exercises build`: out of date: {stale}"


def test_cli_check_mode(tmp_path):
    run = subprocess.run([sys.executable, "-m", "minigrad.cli", "exercises", "build", "--check", "--root", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 1 and "out of date" in run.stdout
    run = subprocess.run([sys.executable, "-m", "minigrad.cli", "exercises", "build", "--root", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 0
    assert not build(tmp_path, check=True)


@pytest.mark.parametrize("ch", parts(), ids=lambda p: p.file)
def test_stubs_raise_with_exercise_ids_and_solutions_have_no_markers(ch):
    stub = (ROOT / "exercises" / ch.file).read_text()
    solution = (ROOT / "solutions" / ch.file).read_text()
    for e in ch.exercises:
        assert f'NotImplementedError(\'Exercise {e.id}: ' in stub or f'NotImplementedError("Exercise {e.id}: ' in stub
    assert "### BEGIN SOLUTION" not in solution and "### END SOLUTION" not in solution
    compile(stub, ch.file, "exec")
    compile(solution, ch.file, "exec")


@pytest.mark.parametrize(
    "lines, message",
    [
        (["### BEGIN SOLUTION 1.1 | h", "x = 1"], "never closed"),
        (["### END SOLUTION"], "without a BEGIN"),
        (["### BEGIN SOLUTION 1.1 | h", "### BEGIN SOLUTION 1.2 | h"], "inside the region"),
        (["### BEGIN SOLUTION"], "write markers as"),
    ],
)
def test_malformed_markers_are_reported(lines, message):
    with pytest.raises(MarkerError, match=message):
        find_regions(lines)


def test_parts_are_found_by_chapter_or_exercise_id():
    assert part_of("01").file == "01_scalar_autograd.py"
    assert part_of("2.3").file == "02_neural_nets_from_scalars.py"
    with pytest.raises(ValueError, match="no exercise '9.9'"):
        part_of("9.9")
