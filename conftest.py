"""The whole test run grades and loads exercises from a pristine workspace made for it, never a learner's.

A learner's answers live in their workspace (``workspace/`` in a clone, see
``minigrad.grading.workspace``). The chapters' grade and try-my-code cells
look there by default, so without this the run would execute whatever a
learner has written (an unfinished answer, an endless loop) and its result
would depend on how far they are. The notebooks' kernels inherit the variable.
"""

import os
import shutil
import tempfile

from minigrad.grading import workspace

_made: list[str] = []


def pytest_configure(config):
    folder = tempfile.mkdtemp(prefix="minigrad-test-workspace-")
    _made.append(folder)
    os.environ[workspace.ENVIRONMENT_VARIABLE] = folder
    workspace.sync(workspace.locate())


def pytest_unconfigure(config):
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)
