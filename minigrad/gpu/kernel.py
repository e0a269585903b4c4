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
import types

from minigrad.gpu import cupy_kernel as _cupy_kernel
from minigrad.gpu import launch as _launch
from minigrad.gpu.dialect import DeviceFunction
from minigrad.gpu.errors import KernelLaunchError
from minigrad.gpu.simulator import limits as _limits
from minigrad.gpu.simulator import refusals as _refusals
from minigrad.gpu.simulator import scheduler as _scheduler
from minigrad.gpu.simulator.barriers import parsed_source, thread_program


class RawKernel:
    """A kernel function plus what each target needs, prepared on first use and kept."""

    def __init__(self, func):
        self.func = func
        self.name = func.__name__
        self.parameters = list(inspect.signature(func).parameters)
        self._program = None
        self._cupy = None
        self._checked: set = set()  # the argument types whose refusal check has passed
        functools.update_wrapper(self, func)

    def __getitem__(self, config):
        grid, block = _launch.split_config(self.name, config)

        def launcher(*args, shared_mem: int = 0, stream=None):
            return self(grid, block, args, shared_mem=shared_mem, stream=stream)

        return launcher

    def __call__(self, *launch, shared_mem: int = 0, stream=None):
        """``kernel(grid, block, args)``: what ``kernel[grid, block](*args)`` calls."""
        _scheduler.refuse_nested_launch(self.name)
        _scheduler.forget_last_stats()  # a refused launch leaves no counters behind, not the previous ones
        if len(launch) != 3 or not isinstance(launch[2], (tuple, list)):
            raise KernelLaunchError(
                f"kernel '{self.name}' is launched with its grid and block sizes: "
                f"{self.name}[grid, block]({', '.join(self.parameters)}), e.g. "
                f"{self.name}[(n + 255) // 256, 256](...), or {self.name}(grid, block, (args...)); "
                f"it was called with {len(launch)} positional argument{'s' if len(launch) != 1 else ''}"
            )
        grid, block, args = launch
        grid3 = _launch.dim3(self.name, "grid", grid)
        block3 = _launch.dim3(self.name, "block", block)
        shared_mem = _launch.shared_bytes(self.name, shared_mem)
        args = tuple(args)
        if _launch.target(self.name, self.parameters, args) == "cupy":
            return self.cupy_kernel()(grid3, block3, args, shared_mem=shared_mem, stream=stream)
        self.refuse_what_cupyx_refuses(args)
        program, barriers = self.simulator_program()
        _scheduler.simulate(self.name, program, barriers, self.parameters, grid3, block3, args, shared_mem)
        return None

    def refuse_what_cupyx_refuses(self, args) -> None:
        """Refuse, before it runs, a kernel whose source or argument types cupyx.jit would not compile."""
        signature = tuple(getattr(a, "dtype", type(a)) if not isinstance(a, int) or isinstance(a, bool)
                          else _refusals.scalar_type(a) for a in args)
        if signature not in self._checked:
            context = types.SimpleNamespace(source_of=parsed_source, kernel_type=RawKernel,
                                            device_function_type=DeviceFunction)
            _refusals.check_kernel(self.name, self.func, self.parameters, args, context)
            self._checked.add(signature)

    def simulator_program(self):
        """The per-thread function the simulator runs, and its number of barrier statements."""
        if self._program is None:
            self._program = thread_program(self.func, _limits.count_step)
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
