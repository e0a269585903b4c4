"""Running a learner's kernel on the simulator (child side) and judging what came back (grader side), chapter 07.

In the child, :func:`launch` runs one kernel of the submission with
``kernel[grid, block](*args)`` on NumPy arrays the grader chose (so on the
simulator) and returns every array argument after the launch together with
the launch's traffic counters. A simulator error - an out-of-bounds access,
a shared-memory race, a divergent barrier - propagates as the learner's
error, message included, and costs the check. The output arrays the grader
sends start as NaN, so an element no thread wrote shows as NaN. Everything
here imports the library inside functions: the child imports this module
before the submission is loaded.
"""

from __future__ import annotations

import numpy as np


def launch(submission, state, kernel_name: str, grid, block, args: list) -> dict:
    """(child) ``submission.<kernel_name>[grid, block](*args)``; the arrays after it and the launch's counters."""
    from minigrad.gpu import jit

    kernel = getattr(submission, kernel_name)
    kernel[tuple(grid) if isinstance(grid, list) else grid, tuple(block) if isinstance(block, list) else block](*args)
    stats = jit.last_launch_stats().as_dict()
    return {"arrays": [a for a in args if isinstance(a, np.ndarray)], "stats": stats}


def np_generator(rng) -> np.random.Generator:
    """A NumPy generator seeded from the check's ``random.Random`` (``--seed`` replays it)."""
    return np.random.default_rng(rng.randrange(2**32))


def nan_array(shape) -> np.ndarray:
    """A float32 output array whose elements are NaN until a thread writes them."""
    return np.full(shape, np.nan, dtype=np.float32)


def assert_close(actual, expected, what: str, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """``actual`` matches ``expected`` (float32 tolerances); name the first wrong index and say if it was never written."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    unwritten = np.isnan(actual) & ~np.isnan(expected)
    if unwritten.any():
        first = tuple(int(i) for i in np.argwhere(unwritten)[0])
        raise AssertionError(
            f"{what}: {int(unwritten.sum())} of {actual.size} elements were never written, the first at index {first}"
        )
    wrong = ~np.isclose(actual, expected, rtol=rtol, atol=atol)
    if wrong.any():
        first = tuple(int(i) for i in np.argwhere(wrong)[0])
        raise AssertionError(
            f"{what}: {int(wrong.sum())} of {actual.size} elements are wrong, the first at index {first}: "
            f"got {float(actual[first]):.6g}, expected {float(expected[first]):.6g}"
        )
