"""Shared fixtures for the minigrad.nn tests."""

import numpy as np
import pytest

import minigrad.tensor as mt


@pytest.fixture
def torch():
    """PyTorch, for cross-checks; the test is skipped cleanly when it is not installed."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return torch


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same default generator state."""
    mt.manual_seed(0)
    yield


@pytest.fixture(autouse=True)
def _on_every_device(device):
    """Every test runs on the CPU and on the strict test device (see tests/conftest.py)."""
    yield
