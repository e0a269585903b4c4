"""How the suite spreads over the cores (``pytest -n``, tests/conftest.py): whole files per worker, the shared
gradings together, the slowest files first."""

import subprocess
import sys
from pathlib import Path

import suite_scheduling
from suite_scheduling import scheduling_scope

ROOT = Path(__file__).resolve().parents[1]


def test_a_notebook_runs_whole_on_one_worker():
    cells = ["chapters/01_scalar_autograd.ipynb::Cell 0", "chapters/01_scalar_autograd.ipynb::Cell 31"]
    assert {scheduling_scope(cell) for cell in cells} == {"chapters/01_scalar_autograd.ipynb"}


def test_a_module_runs_whole_on_one_worker_and_others_elsewhere():
    scopes = {scheduling_scope(nodeid) for nodeid in (
        "tests/test_gradebook.py::test_one", "tests/test_gradebook.py::test_two[a::b]",
        "tests/test_gradebook.py::TestClass::test_three")}
    assert scopes == {"tests/test_gradebook.py"}
    assert scheduling_scope("tests/test_doctor.py::test_one") != "tests/test_gradebook.py"


def test_the_files_that_share_gradings_run_together():
    scopes = {scheduling_scope(f"{path}::test_x") for path in suite_scheduling.SHARED_GRADINGS}
    assert len(scopes) == 1 and scopes != {"tests/test_grading.py"}


def test_the_slowest_files_exist_and_come_first(request):
    for path in (*suite_scheduling.SLOWEST_FIRST, *suite_scheduling.SHARED_GRADINGS):
        assert (ROOT / path).is_file(), f"{path} is listed in tests/suite_scheduling.py but does not exist: rename it there"
    order = [suite_scheduling.file_of(item.nodeid) for item in request.session.items]
    listed = [path for path in suite_scheduling.SLOWEST_FIRST if path in order]  # those this run selected
    firsts = list(dict.fromkeys(order))[: len(listed)]
    assert firsts == listed


def test_a_file_does_not_see_the_garbage_of_the_file_before_it():
    """test_budget.py leaves megabytes of tensors in reference cycles; the tight card of test_offload.py, run next on
    the same worker, must still fit (the suite collects the garbage when a file starts: tests/conftest.py)."""
    tight = "tests/checkpoint/test_offload.py::test_a_smaller_card_fits_the_offloaded_step"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n0", "tests/checkpoint/test_budget.py", tight],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
