"""Shared fixtures for the tensor-core tests."""

import numpy as np
import pytest

import minigrad.tensor as mt


@pytest.fixture
def twin_device():
    """A second device type backed by NumPy, registered for one test (what minigrad.gpu does with CuPy)."""
    backend = mt.Backend(
        "twin",
        np,
        array_types=(),
        to_numpy=lambda a: np.array(a, copy=True),
        from_numpy=lambda a, index=None: np.array(a, copy=True),
        default_index=0,
    )
    mt.register_backend(backend)
    try:
        yield mt.device("twin")
    finally:
        mt.unregister_backend("twin")


@pytest.fixture(autouse=True)
def _on_every_device(device):
    """Every test runs on the CPU and on the strict test device (see tests/conftest.py)."""
    yield
