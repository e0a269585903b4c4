"""Stage 4: GPU kernels, written once and run on an NVIDIA GPU (CuPy) or on minigrad's kernel simulator.

``from minigrad.gpu import jit`` gives the kernel-writing names (see
:mod:`minigrad.gpu.jit`). Importing this package never needs CuPy: a kernel
launched with NumPy arrays runs on the simulator (``minigrad/gpu/simulator.py``),
which executes every thread with real barriers and turns GPU bugs -
out-of-bounds accesses, divergent barriers, shared-memory data races - into
errors that name the kernel, block, thread and index.
"""

from minigrad.gpu import jit
from minigrad.gpu.counters import LaunchStats
from minigrad.gpu.errors import (
    DivergentBarrierError,
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
    "SharedMemoryRaceError",
]
