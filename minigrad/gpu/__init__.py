"""Stage 4 (chapter 07): GPU kernels, written once, run on an NVIDIA GPU (CuPy) or on minigrad's kernel simulator.

``from minigrad.gpu import jit`` gives the kernel-writing names of
``cupyx.jit`` (see :mod:`minigrad.gpu.jit`); ``kernel[grid, block](*args)``
runs a kernel on the GPU when given CuPy arrays and on the simulator when
given NumPy arrays. Importing this package never needs CuPy. The simulator
executes every thread of every block with real barriers and turns GPU bugs -
out-of-bounds accesses, divergent barriers, shared-memory data races - into
errors that name the kernel, block, thread and index; it counts each
launch's memory traffic (``jit.last_launch_stats()``).

:mod:`minigrad.gpu.kernels` holds the library's kernels, each with a host
wrapper that picks grid and block sizes (``fused_bias_relu(x, bias)``,
``tiled_matmul(a, b)``, ...) and works on NumPy and CuPy arrays alike.

Reading order
-------------
The names a kernel is written with, the library's kernels in the order
chapter 07 teaches them, then how a kernel runs on the CPU (1,921 lines in all):

1. ``jit.py`` (75 lines): the names a kernel is written with.
2. ``kernels/bias_relu.py`` (101 lines): elementwise and fused - bias + ReLU
   forward, and its backward with the bias gradient as a column reduction.
3. ``kernels/block_reduce.py`` (56 lines): a sum with a tree in shared memory
   and ``syncthreads`` between its steps.
4. ``kernels/warp_reduce.py`` (66 lines): the same sum with warp shuffles.
5. ``kernels/matmul.py`` (70 lines): tiled matmul, tiles staged in shared memory.
6. ``kernels/cross_entropy.py`` (138 lines): fused softmax + cross-entropy,
   forward (two reductions per row) and backward.
7. ``kernels/adam.py`` (75 lines): a fused Adam / AdamW step in place.
8. ``kernels/loss_scale.py`` (60 lines): unscale gradients and flag inf/NaN.
9. ``kernel.py`` (125 lines): ``@jit.rawkernel()``, ``kernel[grid, block](*args)``,
   and the choice between GPU and simulator.
10. ``threads.py`` (130 lines): which thread is running; ``threadIdx``,
    ``blockIdx``, ``grid()``... read it.
11. ``barriers.py`` (136 lines): ``syncthreads()`` (and warp shuffles)
    rewritten into ``yield``, so a thread can pause at a barrier.
12. ``simulator.py`` (231 lines): the scheduler - blocks, threads, barrier
    rounds, divergent barriers; measured speed.
13. ``memory.py`` (311 lines): global and shared arrays with bounds checks,
    counters and race checks; ``shared_memory``, ``atomic_add``.
14. ``races.py`` (107 lines): the shared-memory race detector.
15. ``warps.py`` (130 lines): warp shuffles, a meeting point for the 32
    threads of a warp.
16. ``counters.py`` (72 lines): what a launch moved, the inputs of a roofline.
17. ``errors.py`` (38 lines): the error classes and their common prefix.

Extensions (not on the reading path)
------------------------------------
- ``launch.py`` (99 lines): checking grid/block sizes and where arguments live.
- ``cupy_kernel.py`` (111 lines): the same kernel handed to ``cupyx.jit`` for a real GPU.
- ``compile_check.py`` (132 lines): transpile with ``cupyx.jit`` and compile with
  NVRTC, without a GPU (the ``gpu-check`` extra).
- ``kernels/__init__.py`` (27 lines): the kernels' host wrappers, imported in one place.
- ``kernels/host.py`` (56 lines): what every wrapper needs - the arrays' module
  (NumPy or CuPy), grid sizes, dtype and shape checks.
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
