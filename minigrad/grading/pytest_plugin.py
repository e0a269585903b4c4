"""pytest plugin used inside the grading sandbox.

- ``@pytest.mark.exercise("1.2")`` ties a check to an exercise;
  ``--exercise 1.2`` keeps only that exercise's checks.
- The ``submission`` fixture is the module at ``$MINIGRAD_SUBMISSION``.
- Each finished check is appended, as one JSON line, to ``$MINIGRAD_RESULTS``
  and flushed at once, so results survive a later crash of the process.
"""

from __future__ import annotations

import json
import os
import random

import pytest

from minigrad.grading.loader import load_module


def pytest_addoption(parser):
    parser.addoption("--exercise", default=None, help="run only the checks of this exercise id, e.g. 1.2")


def pytest_configure(config):
    config.addinivalue_line("markers", "exercise(id): the graded exercise this check belongs to")


def _exercise_of(item) -> str | None:
    marker = item.get_closest_marker("exercise")
    return marker.args[0] if marker else None


def _record(entry: dict) -> None:
    path = os.environ.get("MINIGRAD_RESULTS")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
        os.fsync(f.fileno())


def pytest_collection_modifyitems(config, items):
    wanted = config.getoption("--exercise")
    if wanted is not None:
        keep = [item for item in items if _exercise_of(item) == wanted]
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
        items[:] = keep
    _record({"event": "collected", "tests": [item.nodeid for item in items]})


def pytest_runtest_logreport(report):
    if report.when == "call" or report.failed:
        message = ""
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            message = crash.message if crash is not None else str(report.longrepr)
            message = message[-2000:]
            seed = dict(report.user_properties).get("seed")
            if seed is not None:
                message += f" [random seed {seed}]"
        _record({"event": "result", "test": report.nodeid, "when": report.when, "outcome": report.outcome, "message": message})


@pytest.fixture(scope="session")
def submission():
    """The learner's module (or the reference/solution file being graded)."""
    path = os.environ.get("MINIGRAD_SUBMISSION")
    if not path:
        raise RuntimeError("MINIGRAD_SUBMISSION is not set: run the checks through `minigrad grade`")
    return load_module(path)


@pytest.fixture
def rng(request):
    """A fresh random generator per check; its seed is shown when the check fails."""
    seed = random.SystemRandom().randrange(2**32)
    request.node.user_properties.append(("seed", seed))
    return random.Random(seed)
