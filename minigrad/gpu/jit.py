"""The names kernels are written with: ``from minigrad.gpu import jit``.

They mirror ``cupyx.jit``, so one kernel source runs on an NVIDIA GPU
(launched with CuPy arrays) and on minigrad's kernel simulator (launched with
NumPy arrays)::

    from minigrad.gpu import jit

    @jit.rawkernel()
    def add(x, y, out, n):
        i = jit.grid(1)
        if i < n:
            out[i] = x[i] + y[i]

    add[(n + 127) // 128, 128](x, y, out, n)
    jit.last_launch_stats()          # simulator only: bytes moved, barriers, ...

Built-in variables: ``threadIdx``, ``blockIdx``, ``blockDim``, ``gridDim``
(each with ``.x``, ``.y``, ``.z``), ``warpsize``. Functions: ``grid(ndim)``,
``gridsize(ndim)``, ``laneid()``, ``shared_memory(dtype, size)`` (``size=None``:
the launch's ``shared_mem=`` bytes, one buffer however often declared), ``syncthreads()`` (a statement of the
kernel body), ``atomic_add(array, index, value)``, and the warp shuffles
``shfl_sync``, ``shfl_up_sync``, ``shfl_down_sync``, ``shfl_xor_sync``
(``(mask, value, val_id, width=32)``, called in the kernel's own code).
Math on one value: ``exp``, ``log``, ``sqrt``, ``isfinite`` (NumPy's ufuncs
on the simulator, so float32 stays float32; CuPy's ufuncs of the same name
on the GPU, which is how ``cupyx.jit`` kernels call math: ``cupy.exp(x)``).
``syncwarp`` is not provided: the race detector orders shared-memory
accesses by block barriers only.

The GPU runs what ``cupyx.jit`` can type, and the simulator refuses at
launch what ``cupyx.jit`` refuses (lists, ``print``, ``try``, ...; see
``simulator/refusals.py``). Two rules learners meet first: a kernel returns
nothing (it writes its results into arrays), and ``threadIdx``/``blockIdx``/
``blockDim`` are unsigned 32-bit integers (``numpy.uint32`` on the
simulator too: ``threadIdx.x - 1`` wraps to 4294967295 on thread 0) that
``cupyx.jit`` will not mix in arithmetic with signed int32 variables (such as
a ``range`` loop over an int argument): convert with ``numpy.uint32(...)``.
``minigrad.gpu.compile_check`` compiles a kernel for a GPU without one.

Where the names come from: ``rawkernel`` from :mod:`minigrad.gpu.kernel`,
``last_launch_stats`` from the simulator's scheduler, every other name from
the table in :mod:`minigrad.gpu.dialect`.
"""

from __future__ import annotations

from minigrad.gpu.dialect import KERNEL_NAMES, MATH_NAMES, DeviceFunction, exp, isfinite, log, sqrt
from minigrad.gpu.dialect import atomic_add, shared_memory, syncthreads
from minigrad.gpu.dialect import blockDim, blockIdx, gridDim, grid, gridsize, laneid, threadIdx, warpsize
from minigrad.gpu.dialect import shfl_down_sync, shfl_sync, shfl_up_sync, shfl_xor_sync
from minigrad.gpu.kernel import RawKernel, rawkernel
from minigrad.gpu.simulator.scheduler import last_launch_stats

__all__ = ["rawkernel", *KERNEL_NAMES, *MATH_NAMES, "RawKernel", "DeviceFunction", "last_launch_stats"]
