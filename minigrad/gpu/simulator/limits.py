"""The simulator's limits: how long a thread may loop, and how large a launch may be.

A GPU kernel that never ends hangs the card; the simulator would hang the
notebook. So every loop of a simulated kernel counts its iterations (the
rewrite in ``barriers.py`` calls :func:`count_step` first in every loop
body) and a thread that runs more than :data:`STEP_LIMIT` iterations without
reaching a barrier or its end stops with :class:`StepLimitError`: an
infinite loop (with or without a barrier or a shuffle in it), or a
spin-wait on a value another thread sets. The count covers the thread's
whole launch.

:data:`STEP_LIMIT` is 1,000,000, the same for every chapter. Measured on
this project: no thread of the library's kernels, of chapter 07 or of its
graded exercises and planted bugs loops more than a few hundred times; a
serial loop over a million elements in one thread still fits; a runaway
loop or spin-wait ends in about 1-1.5 s. Change it for a block of code
with ``with step_limit(n): ...``.

A launch of more than :data:`WARN_THREADS` threads warns, one of more than
:data:`MAX_THREADS` is refused: the simulator runs every thread on the CPU,
at about :data:`SECONDS_PER_THREAD` each.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

from minigrad.gpu.errors import KernelLaunchError, StepLimitError, where
from minigrad.gpu.simulator.threads import CURRENT

STEP_LIMIT = 1_000_000  # loop iterations a thread may run in one launch (see the module docstring)
WARN_THREADS = 2**22  # a launch of more threads warns: about 2 us per thread and access on this CPU
MAX_THREADS = 2**26  # a launch of more threads is refused (minutes to hours)
SECONDS_PER_THREAD = 2e-6


@contextlib.contextmanager
def step_limit(steps: int):
    """Run the enclosed launches with a step limit of ``steps`` loop iterations per thread."""
    global STEP_LIMIT
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"step_limit: the number of loop iterations is a positive int, got {steps!r}")
    previous, STEP_LIMIT = STEP_LIMIT, steps
    try:
        yield
    finally:
        STEP_LIMIT = previous


def count_step() -> None:
    """One loop iteration of the running thread (the rewritten kernel calls this first in every loop body)."""
    CURRENT.steps += 1
    if CURRENT.steps > STEP_LIMIT:
        line = sys._getframe(1).f_lineno
        raise StepLimitError(
            f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: ran {STEP_LIMIT:,} loop "
            f"iterations without reaching the end of the kernel (the loop at line {line}): an "
            f"infinite loop, or a spin-wait on a value another thread sets. The simulator runs one thread at a "
            f"time between barriers, and a GPU does not promise that another thread runs while one waits "
            f"either: check the loop's condition and increment, and hand values between threads with "
            f"syncthreads(). If the loop really is this long, raise the limit: with "
            f"minigrad.gpu.simulator.limits.step_limit(n): ..."
        )


def check_size(name, grid, block) -> None:
    """Refuse a launch of more than MAX_THREADS threads; warn above WARN_THREADS."""
    count = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
    estimate = count * SECONDS_PER_THREAD
    if count > MAX_THREADS:
        raise KernelLaunchError(
            f"kernel '{name}': a grid of {grid} blocks of {block} is {count:,} threads; the simulator runs "
            f"every thread on the CPU (at least ~{estimate / 60:,.0f} minutes here) and refuses more than "
            f"{MAX_THREADS:,}: simulate a smaller problem, or use a grid-stride loop with fewer blocks"
        )
    if count > WARN_THREADS:
        warnings.warn(
            f"kernel '{name}': simulating {count:,} threads will take at least ~{estimate:,.0f} s on the CPU; "
            f"a smaller problem tests the kernel as well", stacklevel=4,
        )
