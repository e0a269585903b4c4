"""Shared fixtures for the minigrad.amp tests."""

import pytest


@pytest.fixture
def torch():
    """PyTorch, for cross-checks; the test is skipped cleanly when it is not installed."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return torch
