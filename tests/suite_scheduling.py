"""How the suite spreads over the cores under ``pytest -n`` (pytest-xdist; tests/conftest.py plugs these in).

A worker runs a whole file, in order (see :func:`scheduling_scope`), and the
slowest files start first (:func:`slowest_first`). Its own module, not the
conftest, so that tests can import it by a name no other file has.
"""

from __future__ import annotations

# Test files that read the same once-per-run gradings (tests/planted_grading.py): one worker runs them all, so
# the gradings are made once, not once per worker.
SHARED_GRADINGS = ("tests/test_grading.py", "tests/test_grading_planted.py", "tests/test_grading_output.py")
# The files that take longest (seconds of one serial run on 2 cores), started first so that no worker is left
# with one of them at the end while the others idle. Only the balance depends on this list, never a result.
SLOWEST_FIRST = (
    "tests/test_notebooks_browser.py",  # 280 s: every chapter in JupyterLab
    *SHARED_GRADINGS,  # 280 s: the solutions, the stubs, the reference and 295 planted bugs, graded
    "tests/test_learner_path_browser.py",  # 50 s
    "chapters/06_convolutions.ipynb",  # 47 s
    "chapters/11_capstone.ipynb",  # 45 s
)


def file_of(nodeid: str) -> str:
    """The file of a test id, relative to the project (``tests/test_x.py``, ``chapters/01_....ipynb``)."""
    return nodeid.split("::", 1)[0]


def scheduling_scope(nodeid: str) -> str:
    """The unit a worker runs whole: the test's file, or one scope for all of ``SHARED_GRADINGS``."""
    path = file_of(nodeid)
    return "the shared gradings" if path in SHARED_GRADINGS else path


def slowest_first(items: list) -> None:
    """Sort the collected ``items`` in place: the files of ``SLOWEST_FIRST`` first, in its order; every file's
    tests stay together and in their order, the other files as collected."""
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(file_of(item.nodeid), len(rank)))
