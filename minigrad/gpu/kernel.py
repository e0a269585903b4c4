"""A kernel: one Python function, launched on the GPU (CuPy arrays) or the simulator (NumPy arrays).

``@jit.rawkernel()`` wraps a function in a :class:`RawKernel`. Indexing it
with the launch configuration gives a launcher, exactly as in ``cupyx.jit``::

    kernel[grid, block](*args)                  # sizes: int or tuple of 1-3 ints
    kernel[grid, block](*args, shared_mem=n)    # n bytes of dynamic shared memory per block
    kernel(grid, block, args, shared_mem=n)     # the same, spelled as a call

Like CuPy's, a launch returns None; after a simulated launch
``jit.last_launch_stats()`` holds its traffic counters.

``@jit.rawkernel(device=True)`` makes a
:class:`~minigrad.gpu.dialect.DeviceFunction` instead: a helper that kernels
call like a Python function (``cupyx.jit`` compiles it to a ``__device__``
function).
"""

from __future__ import annotations

import functools
import inspect

from minigrad.gpu import cupy_kernel as _cupy_kernel
from minigrad.gpu import launch as _launch
from minigrad.gpu.dialect import DeviceFunction
from minigrad.gpu.errors import KernelLaunchError
from minigrad.gpu.simulator import scheduler as _scheduler
from minigrad.gpu.simulator.barriers import thread_program


class RawKernel:
    """A kernel function plus what each target needs, prepared on first use and kept."""

    def __init__(self, func):
        self.func = func
        self.name = func.__name__
        self.parameters = list(inspect.signature(func).parameters)
        self._program = None
        self._cupy = None
        functools.update_wrapper(self, func)

    def __getitem__(self, config):
        grid, block = _launch.split_config(self.name, config)

        def launcher(*args, shared_mem: int = 0, stream=None):
            return self(grid, block, args, shared_mem=shared_mem, stream=stream)

        return launcher

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None):
        _scheduler.refuse_nested_launch(self.name)
        grid3 = _launch.dim3(self.name, "grid", grid)
        block3 = _launch.dim3(self.name, "block", block)
        if not isinstance(shared_mem, int) or shared_mem < 0:
            raise KernelLaunchError(f"kernel '{self.name}': shared_mem is a byte count >= 0, got {shared_mem!r}")
        args = tuple(args)
        if _launch.target(self.name, self.parameters, args) == "cupy":
            _scheduler.forget_last_stats()
            return self.cupy_kernel()(grid3, block3, args, shared_mem=shared_mem, stream=stream)
        program, barriers = self.simulator_program()
        _scheduler.simulate(self.name, program, barriers, self.parameters, grid3, block3, args, shared_mem)
        return None

    def simulator_program(self):
        """The per-thread function the simulator runs, and its number of barrier statements."""
        if self._program is None:
            self._program = thread_program(self.func)
        return self._program

    def cupy_kernel(self):
        """The ``cupyx.jit.rawkernel`` of this kernel (imports CuPy)."""
        if self._cupy is None:
            self._cupy = _cupy_kernel.cupy_kernel(self.func)
        return self._cupy

    def __repr__(self) -> str:
        return f"<minigrad.gpu.jit.rawkernel '{self.name}'>"


def rawkernel(*, mode: str = "cuda", device: bool = False):
    """Decorator: make a function a kernel (``@jit.rawkernel()``, as in ``cupyx.jit``), or with ``device=True`` a helper."""
    if mode != "cuda":
        raise ValueError(f"rawkernel: only mode='cuda' is supported, got {mode!r}")

    def decorate(func):
        return DeviceFunction(func) if device else RawKernel(func)

    return decorate
