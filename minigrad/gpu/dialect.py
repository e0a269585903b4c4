"""The names a kernel's body is written with, in one table: the simulator's objects, and device functions.

Each name has a ``cupyx.jit`` counterpart of the same name. The objects
here are the simulator's (built-in variables from ``simulator/threads.py``,
``shared_memory`` and ``atomic_add`` from ``simulator/arrays.py``,
``syncthreads`` from ``simulator/barriers.py``, the shuffles from
``simulator/warps.py``) plus NumPy's ufuncs for the math, so a kernel
launched with NumPy arrays runs them as they are; ``cupy_kernel.py`` swaps
each for its ``cupyx.jit`` counterpart before a kernel goes to a GPU.
Kernels import them from :mod:`minigrad.gpu.jit`, which adds the decorator
that makes a kernel.

A :class:`DeviceFunction` is a helper a kernel calls like any function
(``@jit.rawkernel(device=True)``; ``cupyx.jit`` compiles it to a
``__device__`` function). It may return a value; it may not contain
``syncthreads()`` (write barriers in the kernel itself).
"""

from __future__ import annotations

import functools

import numpy as np

from minigrad.gpu.errors import KernelLaunchError
from minigrad.gpu.simulator.arrays import atomic_add, shared_memory
from minigrad.gpu.simulator.barriers import syncthreads, thread_program
from minigrad.gpu.simulator.limits import count_step
from minigrad.gpu.simulator.threads import (
    CURRENT, blockDim, blockIdx, gridDim, grid, gridsize, laneid, threadIdx, warpsize,
)
from minigrad.gpu.simulator.warps import shfl_down_sync, shfl_sync, shfl_up_sync, shfl_xor_sync

# Math on scalars: NumPy's ufuncs here, so float32 stays float32; CuPy's of the same name on the GPU.
exp, log, sqrt, isfinite = np.exp, np.log, np.sqrt, np.isfinite
MATH_NAMES = ("exp", "log", "sqrt", "isfinite")

# The names a kernel's body may use besides math; each has a cupyx.jit counterpart of the same name.
KERNEL_NAMES = (
    "threadIdx", "blockIdx", "blockDim", "gridDim", "grid", "gridsize", "laneid", "warpsize",
    "shared_memory", "syncthreads", "atomic_add", "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync",
)


class DeviceFunction:
    """A helper called from kernels: plain Python on the simulator, a ``__device__`` function on the GPU."""

    def __init__(self, func):
        self.func = func
        self.name = func.__name__
        self._program = None  # func with the simulator's step counter in its loops, made on first call
        functools.update_wrapper(self, func)

    def __call__(self, *args):
        if CURRENT.kernel is None:
            raise KernelLaunchError(
                f"device function '{self.name}' can only be called from inside a kernel; launch a kernel "
                f"that calls it"
            )
        if self._program is None:
            self._program = thread_program(self.func, count_step, pause=False)[0]
        return self._program(*args)

    def __getitem__(self, config):
        raise KernelLaunchError(
            f"device function '{self.name}' cannot be launched with [grid, block]; call it from a kernel, "
            f"or decorate it with @jit.rawkernel() (without device=True) to make it a kernel"
        )

    def __repr__(self) -> str:
        return f"<minigrad.gpu.jit.rawkernel(device=True) '{self.name}'>"
