"""nbval on the chapters: a notebook that needs data which is not on this machine is skipped, not failed.

A notebook states what it needs in its metadata, ``{"minigrad": {"needs": ["mnist"]}}``
("mnist": the full MNIST files, found the way ``minigrad.data.MNIST`` finds
them, never downloaded here). Without them the notebook is one skipped test
and the run ends with one line saying what to set; every other test still runs.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

# The notebooks' kernels are new processes: one BLAS thread each, as the committed outputs were made, so that a
# core busy with other work cannot make BLAS threads wait on each other (tens of times slower on 2 cores).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

NEEDS_KEY = "minigrad"
MISSING_DATA = "minigrad-missing-data"  # the user property that carries a skipped notebook's reason in its reports
_skipped_notebooks: dict[str, str] = {}  # notebook name -> reason, for the closing line


@lru_cache(maxsize=None)
def missing_data(need: str) -> str | None:
    """Why ``need`` is not available on this machine, or None when it is."""
    if need != "mnist":
        raise ValueError(f"a chapter's metadata needs unknown data {need!r}; known: 'mnist'")
    from minigrad.data import MNIST, MNISTNotFound, data_root

    try:
        for train in (True, False):
            MNIST(train=train, download=False)
    except MNISTNotFound:
        return (
            f"needs the full MNIST, not found under {data_root()}: set MINIGRAD_DATA to the folder "
            f"that holds the four MNIST .gz files (or run minigrad.data.MNIST() once online to download them)"
        )
    return None


def notebook_needs(path: Path) -> list[str]:
    try:
        metadata = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError):
        return []  # nbval reports an unreadable notebook itself
    return list(metadata.get(NEEDS_KEY, {}).get("needs", []))


class NotebookWithoutData(pytest.File):
    """Stands in for a notebook whose data is missing: one test, skipped with the reason."""

    reason = ""

    def collect(self):
        item = SkippedNotebook.from_parent(self, name=self.path.name)
        item.add_marker(pytest.mark.skip(reason=self.reason))
        item.user_properties.append((MISSING_DATA, self.reason))  # reports carry it, from a pytest-xdist worker too
        yield item


class SkippedNotebook(pytest.Item):
    def runtest(self):  # never called: the item carries a skip mark
        raise AssertionError("a notebook without its data was run")

    def reportinfo(self):
        return self.path, 0, self.name


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent):
    collected = yield
    if file_path.suffix != ".ipynb" or not collected:
        return collected
    reasons = [r for r in (missing_data(need) for need in notebook_needs(file_path)) if r]
    if not reasons:
        return collected
    stand_in = NotebookWithoutData.from_parent(parent, path=file_path)
    stand_in.reason = "; ".join(reasons)
    return [stand_in]


def pytest_runtest_logreport(report):
    """Remember each notebook skipped for its data: here, or in a worker of ``pytest -n`` (the report comes here)."""
    for key, reason in report.user_properties:
        if key == MISSING_DATA and report.skipped:
            _skipped_notebooks[Path(report.nodeid.split("::")[0]).name] = reason


def pytest_terminal_summary(terminalreporter, config):
    for reason in dict.fromkeys(_skipped_notebooks.values()):
        names = ", ".join(sorted(name for name, why in _skipped_notebooks.items() if why == reason))
        terminalreporter.write_line(f"skipped {names}: {reason}", yellow=True)
