"""Stage 4 (chapter 07): GPU kernels, written once, run on an NVIDIA GPU (CuPy) or on minigrad's kernel simulator.

``from minigrad.gpu import jit`` gives the kernel-writing names of
``cupyx.jit`` (see :mod:`minigrad.gpu.jit`); ``kernel[grid, block](*args)``
runs a kernel on the GPU when given CuPy arrays and on the simulator when
given NumPy arrays. The simulator executes every thread of every block with
real barriers and cupyx.jit's unsigned thread indices, and turns GPU bugs -
out-of-bounds accesses, divergent barriers, shared-memory data races, reads
of unwritten shared memory, loops that never end - into errors that name the
kernel, block, thread and index; it refuses at launch the Python cupyx.jit
refuses to compile, and counts each launch's memory traffic, the 32-byte
sectors its warps touch and its shared-memory bank conflicts
(``jit.last_launch_stats()``).

Importing this package never needs CuPy; it makes ``"cuda"`` a device of the
tensor core (:mod:`minigrad.gpu.device.backend`): the first ``x.to("cuda")``
imports CuPy, registers the backend and the fused kernels behind relu,
cross-entropy and Adam (:mod:`minigrad.gpu.device.backend_ops`), or raises a
clear error saying whether CuPy or a GPU is missing.

Layout
------
- the top: the dialect kernels are written in (``jit.py``, and the table of
  its names in ``dialect.py``), a kernel and its launch (``kernel.py``,
  ``launch.py``), the same kernel for ``cupyx.jit`` (``cupy_kernel.py``,
  ``compile_check.py``) and the errors;
- ``kernels/``: the library's kernels, each with a host wrapper that picks
  grid and block sizes (``fused_bias_relu(x, bias)``, ``tiled_matmul(a, b)``,
  ...) and works on NumPy and CuPy arrays alike;
- ``simulator/``: how a kernel runs on the CPU - threads, barriers, the
  scheduler, checked arrays, races, warps, counters;
- ``device/``: the ``"cuda"`` device of the tensor core and the fused ops
  behind it.

Imports point one way, down this list: ``device/``, ``kernels/``,
``jit.py``, ``compile_check.py``, ``kernel.py``, ``cupy_kernel.py``,
``dialect.py``, ``simulator/``, ``launch.py``, ``errors.py``.

Reading order
-------------
The names a kernel is written with, the library's kernels in the order
chapter 07 teaches them, then how a kernel runs on the CPU (3,179 lines in all):

1. ``jit.py`` (55 lines): the names a kernel is written with.
2. ``kernels/elementwise.py`` (52 lines): ``alpha * x + y`` with a grid-stride
   loop - thread index, bounds, any grid for any n (exercise 7.1).
3. ``kernels/bias_relu.py`` (103 lines): elementwise and fused - bias + ReLU
   forward, and its backward with the bias gradient as a column reduction
   (exercise 7.4).
4. ``kernels/block_reduce.py`` (58 lines): a sum with a tree in shared memory
   and ``syncthreads`` between its steps (exercise 7.2).
5. ``kernels/warp_reduce.py`` (68 lines): the same sum with warp shuffles and
   one barrier (exercise 7.6).
6. ``kernels/matmul.py`` (72 lines): tiled matmul, tiles staged in shared
   memory (exercise 7.3).
7. ``kernels/transpose.py`` (77 lines): a transpose through a padded shared
   tile - coalesced reads and writes, no bank conflicts (exercise 7.5).
8. ``kernels/softmax.py`` (89 lines): a row-wise softmax, a block per row and
   two two-level reductions (exercise 7.7).
9. ``kernels/cross_entropy.py`` (143 lines): fused softmax + cross-entropy,
   forward (two reductions per row) and backward.
10. ``kernels/adam.py`` (79 lines): a fused Adam / AdamW step in place.
11. ``kernels/loss_scale.py`` (62 lines): unscale gradients and flag inf/NaN (exercise 9.5).
12. ``kernel.py`` (112 lines): ``@jit.rawkernel()``,
    ``kernel[grid, block](*args)``, and the choice between GPU and simulator.
13. ``dialect.py`` (71 lines): where each name comes from, and device
    functions, the helpers a kernel calls.
14. ``simulator/threads.py`` (152 lines): which thread is running;
    ``threadIdx``, ``blockIdx``, ``grid()``... read it, as unsigned ints.
15. ``simulator/barriers.py`` (204 lines): ``syncthreads()`` (and warp
    shuffles) rewritten into ``yield``, so a thread can pause at a barrier.
16. ``simulator/scheduler.py`` (339 lines): blocks, threads, barrier rounds,
    divergent barriers, one launch at a time; measured speed.
17. ``simulator/limits.py`` (82 lines): the step limit that ends a runaway
    loop, and the largest launch.
18. ``simulator/arrays.py`` (463 lines): global and shared arrays with bounds
    checks, counters and race checks; ``shared_memory``, ``atomic_add``.
19. ``simulator/poison.py`` (86 lines): what reading unwritten shared memory
    gives, and when it is reported.
20. ``simulator/races.py`` (180 lines): the shared-memory race detector: two
    phases without a barrier, or two partners within one step.
21. ``simulator/warps.py`` (179 lines): warp shuffles, a meeting point for the
    32 threads of a warp.
22. ``simulator/sectors.py`` (258 lines): a warp's accesses rebuilt from the
    threads' - 32-byte sectors of global memory, bank conflicts of shared
    memory.
23. ``simulator/counters.py`` (145 lines): what a launch moved (requested
    bytes, sectors, bank conflicts), the inputs of a roofline.
24. ``errors.py`` (50 lines): the error classes and their common prefix.

Extensions (not on the reading path)
------------------------------------
- ``launch.py`` (127 lines): checking grid/block sizes, ``shared_mem`` and
  where arguments live.
- ``cupy_kernel.py`` (125 lines): the same kernel handed to ``cupyx.jit`` for a
  real GPU.
- ``compile_check.py`` (132 lines): transpile with ``cupyx.jit`` and compile
  with NVRTC, without a GPU (the ``gpu-check`` extra).
- ``simulator/refusals.py`` (365 lines): the Python ``cupyx.jit`` refuses to
  compile, refused before a simulated launch, with its reason.
- ``kernels/__init__.py`` (33 lines): the kernels' host wrappers, imported in
  one place.
- ``kernels/host.py`` (58 lines): what every wrapper needs - the arrays'
  module (NumPy or CuPy), grid sizes, dtype and shape checks.
- ``simulator/__init__.py`` (13 lines): what the simulator room holds.
- ``device/__init__.py`` (8 lines): what the device room holds.
- ``device/backend.py`` (136 lines): the ``"cuda"`` device - CuPy arrays,
  registered on first use; the error when CuPy or a GPU is missing.
- ``device/backend_ops.py`` (159 lines): the fused kernels behind the core's
  ops (relu backward with the bias gradient of linear, cross-entropy, Adam)
  through the per-device dispatch.
"""

from minigrad.gpu import jit
from minigrad.gpu.device.backend import CudaUnavailableError, cuda_available
from minigrad.gpu.errors import (
    DivergentBarrierError,
    DivergentWarpError,
    KernelError,
    KernelLaunchError,
    KernelSourceError,
    OutOfBoundsError,
    SharedMemoryRaceError,
    StepLimitError,
    UninitializedReadError,
)
from minigrad.gpu.simulator.counters import LaunchStats

__all__ = [
    "jit",
    "cuda_available",
    "CudaUnavailableError",
    "LaunchStats",
    "KernelError",
    "KernelLaunchError",
    "KernelSourceError",
    "OutOfBoundsError",
    "UninitializedReadError",
    "StepLimitError",
    "DivergentBarrierError",
    "DivergentWarpError",
    "SharedMemoryRaceError",
]
