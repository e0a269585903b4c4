"""Random numbers: one default NumPy ``Generator``, seeded with ``manual_seed``.

``randn``/``rand``/``randint`` take an optional ``generator=`` (a
``numpy.random.Generator``); without one they draw from the default generator.
Random tensors are drawn on the host and then moved to their device, so a
seed gives the same numbers on every device. ``get_rng_state`` /
``set_rng_state`` save and restore the default generator (activation
checkpointing replays a forward pass with them, chapter 10).
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

import numpy as np

__all__ = ["manual_seed", "default_generator", "get_rng_state", "set_rng_state", "fork_rng"]

_generator = np.random.Generator(np.random.PCG64())


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the default generator (as ``torch.manual_seed``); returns it."""
    _generator.bit_generator.state = np.random.PCG64(seed).state
    return _generator


def default_generator() -> np.random.Generator:
    return _generator


def get_rng_state() -> dict:
    """A copy of the default generator's state."""
    return copy.deepcopy(_generator.bit_generator.state)


def set_rng_state(state: dict) -> None:
    _generator.bit_generator.state = copy.deepcopy(state)


@contextmanager
def fork_rng():
    """Run a block and then put the default generator back where it was."""
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
