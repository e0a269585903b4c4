"""Stage 4 (chapter 07): GPU kernels, written once, run on an NVIDIA GPU (CuPy) or on minigrad's kernel simulator.

``from minigrad.gpu import jit`` gives the kernel-writing names of
``cupyx.jit`` (see :mod:`minigrad.gpu.jit`); ``kernel[grid, block](*args)``
runs a kernel on the GPU when given CuPy arrays and on the simulator when
given NumPy arrays. Importing this package never needs CuPy. The simulator
executes every thread of every block with real barriers and turns GPU bugs -
out-of-bounds accesses, divergent barriers, shared-memory data races - into
errors that name the kernel, block, thread and index; it counts each
launch's memory traffic (``jit.last_launch_stats()``).

Reading order
-------------
How a kernel runs on the CPU, in the order to read it (1,346 lines in all):

1. ``jit.py`` (66 lines): the names a kernel is written with.
2. ``kernel.py`` (125 lines): ``@jit.rawkernel()``, ``kernel[grid, block](*args)``,
   and the choice between GPU and simulator.
3. ``threads.py`` (130 lines): which thread is running; ``threadIdx``,
   ``blockIdx``, ``grid()``... read it.
4. ``barriers.py`` (136 lines): ``syncthreads()`` (and warp shuffles)
   rewritten into ``yield``, so a thread can pause at a barrier.
5. ``simulator.py`` (231 lines): the scheduler - blocks, threads, barrier
   rounds, divergent barriers; measured speed.
6. ``memory.py`` (311 lines): global and shared arrays with bounds checks,
   counters and race checks; ``shared_memory``, ``atomic_add``.
7. ``races.py`` (107 lines): the shared-memory race detector.
8. ``warps.py`` (130 lines): warp shuffles, a meeting point for the 32
   threads of a warp.
9. ``counters.py`` (72 lines): what a launch moved, the inputs of a roofline.
10. ``errors.py`` (38 lines): the error classes and their common prefix.

Extensions (not on the reading path)
------------------------------------
- ``launch.py`` (99 lines): checking grid/block sizes and where arguments live.
- ``cupy_kernel.py`` (94 lines): the same kernel handed to ``cupyx.jit`` for a real GPU.
- ``compile_check.py`` (125 lines): transpile with ``cupyx.jit`` and compile with
  NVRTC, without a GPU (the ``gpu-check`` extra).
"""

from minigrad.gpu import jit
from minigrad.gpu.counters import LaunchStats
from minigrad.gpu.errors import (
    DivergentBarrierError,
    DivergentWarpError,
    KernelError,
    KernelLaunchError,
    OutOfBoundsError,
    SharedMemoryRaceError,
)

__all__ = [
    "jit",
    "LaunchStats",
    "KernelError",
    "KernelLaunchError",
    "OutOfBoundsError",
    "DivergentBarrierError",
    "DivergentWarpError",
    "SharedMemoryRaceError",
]
