"""Chapter 07's build check: a kernel the simulator runs but a GPU cannot build loses points; without CuPy a stub still scores 0."""

import importlib.util
import os
from pathlib import Path

import pytest

from minigrad.grading.manifest import part_of
from minigrad.grading.runner import DEFAULT_MEMORY_MB, grade_exercise

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261202


def _grade(exercise_id: str, path: Path):
    part = part_of(exercise_id)
    [exercise] = [e for e in part.exercises if e.id == exercise_id]
    return grade_exercise(part, exercise, path, timeout=60, memory_mb=DEFAULT_MEMORY_MB, seed=SEED)


def _cupy_usable() -> bool:
    try:
        return importlib.util.find_spec("cupyx") is not None and importlib.util.find_spec("nvidia.cuda_nvrtc") is not None
    except (ImportError, ValueError):
        return False


@pytest.mark.skipif(not _cupy_usable(), reason='needs the gpu-check extra: pip install -e ".[gpu-check]"')
def test_a_signed_index_that_runs_on_the_simulator_loses_the_build_check(tmp_path):
    path = tmp_path / "07_matmul.py"
    path.write_text((ROOT / "solutions" / "07_matmul.py").read_text().replace(
        "offset = np.uint32(phase * TILE)", "offset = phase * TILE"))
    result = _grade("7.3", path)
    assert 0 < result.score < result.max_score, result.output
    assert "would not build for a GPU" in result.output and "cupyx.jit cannot transpile it" in result.output
    assert result.output.count("test_") == 1, result.output  # every other check passes: the simulator does not mind


def test_without_cupy_a_stub_still_scores_zero_and_the_solution_full(tmp_path, monkeypatch):
    fake = tmp_path / "no_cupy"
    for name in ("cupy", "cupyx"):
        (fake / name).mkdir(parents=True)
        (fake / name / "__init__.py").write_text('raise ImportError("no CuPy here (a test)")\n')
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fake), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    assert _grade("7.1", ROOT / "exercises" / "07_elementwise.py").score == 0
    solved = _grade("7.1", ROOT / "solutions" / "07_elementwise.py")
    assert solved.score == solved.max_score, solved.output
