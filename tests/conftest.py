"""Running a suite on every device: the CPU and the strict test device (arrays that refuse to become NumPy).

A suite opts in with an autouse fixture in its ``conftest.py``::

    @pytest.fixture(autouse=True)
    def _on_every_device(device):
        yield

Each of its tests then runs twice, ``[cpu]`` and ``[strict]``, with the
factories' default device set accordingly (``mt.set_default_device``). A test
marked ``@pytest.mark.host_only`` runs once, with the CPU as default device:
tests about the CPU itself, and tests that name their devices themselves.
The strict half takes about 1.6 times the CPU half's time (the wrapper's
bookkeeping): about 17 s against 10 s of CPU time for tests/tensor + tests/nn.
"""

import pytest

import minigrad.tensor as mt
from minigrad.tensor import strict_backend

DEVICES = ["cpu", strict_backend.DEVICE_TYPE]


def pytest_configure(config):
    config.addinivalue_line("markers", "host_only: runs once, with the CPU as default device (not again on the strict test device)")


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        devices = ["cpu"] if metafunc.definition.get_closest_marker("host_only") else DEVICES
        metafunc.parametrize("device", devices, indirect=True)


@pytest.fixture
def device(request):
    """The device of this run of the test; the factories' default device meanwhile."""
    dev = strict_backend.register() if request.param == strict_backend.DEVICE_TYPE else mt.cpu
    mt.set_default_device(dev)
    try:
        yield dev
    finally:
        mt.set_default_device(mt.cpu)
