"""Suite-wide settings: Hypothesis profiles, and running a suite on every device.

Hypothesis profiles:

- ``ci`` (always the default, on a laptop as in CI): derandomized, so every
  run draws the same examples and a red run is a real defect, never bad luck;
  no deadline (shared machines are slow at random moments); a failure prints
  the blob that replays it.
- ``wide`` (on demand): random examples, many more of them, to hunt for
  bugs the fixed examples miss: ``pytest --hypothesis-profile=wide`` or
  ``MINIGRAD_HYPOTHESIS_PROFILE=wide pytest``. A failure found this way becomes
  an ``@example`` or a fixed strategy, so ``ci`` keeps checking it.

Tests leave ``max_examples`` and ``deadline`` to the profile.

Devices: a suite opts in to running on the CPU and on the strict test device
(arrays that refuse to become NumPy, as CuPy's do) with an autouse fixture in
its ``conftest.py``::

    @pytest.fixture(autouse=True)
    def _on_every_device(device):
        yield

Each of its tests then runs twice, ``[cpu]`` and ``[strict]``, with the
factories' default device set accordingly (``mt.set_default_device``). A test
marked ``@pytest.mark.host_only`` runs once, with the CPU as default device:
tests about the CPU itself, and tests that name their devices themselves.
The strict half takes about 1.6 times the CPU half's time (the wrapper's
bookkeeping): about 17 s against 10 s of CPU time for tests/tensor + tests/nn.

The strict half runs with the GPU stage in place: ``minigrad.gpu`` imported
and its fused ops registered for the strict device, as they are for
``"cuda"`` on a GPU, with the kernels' array-operation stand-ins
(:mod:`minigrad.testing.reference_kernels`; float32 and float64, so gradchecks
pass through them). Code of the fused path that reached for host NumPy fails
there as it would on CuPy.
"""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import HealthCheck, settings

import minigrad.gpu  # noqa: F401  (the GPU stage in place: "cuda" known to the device registry)
import minigrad.tensor as mt
from minigrad.gpu.device.backend_ops import register_fused_ops, unregister_fused_ops
from minigrad.memory import buffers
from minigrad.testing import strict_backend
from minigrad.testing.reference_kernels import REFERENCE_KERNELS

import suite_scheduling

CI_EXAMPLES = 60
WIDE_EXAMPLES = 1000

settings.register_profile(
    "ci", max_examples=CI_EXAMPLES, derandomize=True, deadline=None, print_blob=True, database=None,
)
settings.register_profile(
    "wide", max_examples=WIDE_EXAMPLES, derandomize=False, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# ``--hypothesis-profile`` (read later, by Hypothesis's pytest plugin) overrides this.
settings.load_profile(os.environ.get("MINIGRAD_HYPOTHESIS_PROFILE", "ci"))

DEVICES = ["cpu", strict_backend.DEVICE_TYPE]


def pytest_xdist_make_scheduler(config, log):
    """Under ``pytest -n N`` (pytest-xdist): each scope of ``suite_scheduling.scheduling_scope`` runs whole on one
    worker, in order.

    A notebook's cells must (nbval runs them in one kernel, in order); a module's module-scoped fixtures (a
    JupyterLab server, a class of graded students) are then made once, and the shared gradings once, not once
    per worker. (``--dist loadgroup`` with ``xdist_group`` marks would say the same, but under pytest 9.2 it
    silently stops grouping.)
    """
    from xdist.scheduler import LoadFileScheduling

    class FilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return suite_scheduling.scheduling_scope(nodeid)

    return FilesTogether(config, log)


_file_running: list[str] = [""]


def pytest_runtest_setup(item):
    """Each test file starts with no tensor buffer alive, whichever file ran before it on this worker.

    A simulated card counts every live buffer when it opens, and the tensors of an earlier test can outlive it in
    reference cycles (an exception's traceback and its frames) until the garbage collector runs. Which file ran
    before depends on the scheduling of ``pytest -n``, so without this a tight card could fit in one run and not the
    next. No file keeps a tensor alive between files (no module-level tensors), so anything alive here is garbage.
    """
    path = suite_scheduling.file_of(item.nodeid)
    if path != _file_running[0]:
        _file_running[0] = path
        if buffers.live_bytes():
            gc.collect()


def pytest_configure(config):
    config.addinivalue_line("markers", "host_only: runs once, with the CPU as default device (not again on the strict test device)")


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: only the tests that will run
def pytest_collection_modifyitems(config, items):
    """Put the slowest files first (tests/suite_scheduling.py); tell tests/planted_grading.py which planted bugs the
    selected tests ask about, so it grades them together."""
    suite_scheduling.slowest_first(items)
    wanted = set()
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for value in (params.get("bug"), params.get("bug_id")):
            wanted.add(getattr(value, "id", value))
    if wanted - {None}:
        import planted_grading

        planted_grading.WANTED.update(wanted & set(planted_grading.BY_ID))


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        devices = ["cpu"] if metafunc.definition.get_closest_marker("host_only") else DEVICES
        metafunc.parametrize("device", devices, indirect=True)


@pytest.fixture
def device(request):
    """The device of this run of the test; the factories' default device meanwhile (strict: with fused ops)."""
    strict = request.param == strict_backend.DEVICE_TYPE
    dev = strict_backend.register() if strict else mt.cpu
    if strict:
        register_fused_ops(strict_backend.DEVICE_TYPE, REFERENCE_KERNELS)
    mt.set_default_device(dev)
    try:
        yield dev
    finally:
        mt.set_default_device(mt.cpu)
        if strict:
            unregister_fused_ops(strict_backend.DEVICE_TYPE)


@pytest.fixture(scope="session")
def cupy():
    """CuPy, for tests marked ``gpu``; skips with the reason when it is missing or sees no GPU."""
    try:
        import cupy
    except ImportError as error:
        pytest.skip(f'CuPy is not usable here ({error}): pip install "minigrad[gpu]"')
    from minigrad.gpu.device.backend import no_gpu_reason

    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("CuPy sees no GPU (the kernel simulator needs none)")
    except Exception as error:  # no driver, or a driver too old for this CUDA
        pytest.skip(f"{no_gpu_reason(error)} (the kernel simulator needs none)")
    return cupy


@pytest.fixture(scope="module")
def chromium():
    """A Chromium for the browser tests of one module (one launch, not one per test); skips where it cannot run.

    Module-scoped, not session-scoped: Playwright's synchronous driver runs an event loop in this thread, which
    must be gone before the chapters' nbval kernels (jupyter_client's own loop) run later in the session.
    """
    from browser_support import chromium_browser

    with chromium_browser() as browser:
        yield browser


BROWSER_TEST_FILES = ("test_notebooks_browser.py", "test_learner_path_browser.py")
_browser_skips: dict[str, int] = {}  # reason -> how many browser tests it skipped


def pytest_runtest_logreport(report):
    if report.skipped and report.nodeid.split("::")[0].endswith(BROWSER_TEST_FILES):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        _browser_skips[reason] = _browser_skips.get(reason, 0) + 1


def pytest_terminal_summary(terminalreporter):
    """One line, not one per test: why the browser tests did not run and what enables them."""
    for reason, count in _browser_skips.items():
        terminalreporter.write_line(
            f"skipped {count} browser tests: {reason}; they need the browser extra "
            f"(pip install -e \".[browser]\") and a Chromium binary", yellow=True)
