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
the launch's ``shared_mem=`` bytes), ``syncthreads()`` (a statement of the
kernel body), ``atomic_add(array, index, value)``, and the warp shuffles
``shfl_sync``, ``shfl_up_sync``, ``shfl_down_sync``, ``shfl_xor_sync``
(``(mask, value, val_id, width=32)``, called in the kernel's own code).
Math on one value: ``exp``, ``log``, ``sqrt``, ``isfinite`` (NumPy's ufuncs
on the simulator, so float32 stays float32; CuPy's ufuncs of the same name
on the GPU, which is how ``cupyx.jit`` kernels call math: ``cupy.exp(x)``).
``syncwarp`` is not provided: the race detector orders shared-memory
accesses by block barriers only.

The simulator runs any Python; the GPU runs what ``cupyx.jit`` can type.
Two rules learners meet first: a kernel returns nothing (it writes its
results into arrays), and ``threadIdx``/``blockIdx``/``blockDim`` are
unsigned 32-bit integers that ``cupyx.jit`` will not mix in arithmetic with
signed int32 variables (such as a ``range`` loop over an int argument):
convert with ``numpy.uint32(...)``. ``minigrad.gpu.compile_check`` checks a
kernel against those rules without a GPU.
"""

from __future__ import annotations

import numpy as _np

from minigrad.gpu.errors import KernelError
from minigrad.gpu.kernel import DeviceFunction, RawKernel, rawkernel
from minigrad.gpu.simulator.arrays import atomic_add, shared_memory
from minigrad.gpu.simulator.scheduler import last_launch_stats
from minigrad.gpu.simulator.threads import blockDim, blockIdx, gridDim, grid, gridsize, laneid, threadIdx, warpsize
from minigrad.gpu.simulator.warps import shfl_down_sync, shfl_sync, shfl_up_sync, shfl_xor_sync


def syncthreads() -> None:
    """Barrier: wait until every thread of the block has reached this statement.

    In a simulated kernel each ``syncthreads()`` statement is rewritten into a
    pause of the thread before it runs (see ``minigrad/gpu/simulator/barriers.py``), so
    this function only runs when it is called some other way.
    """
    raise KernelError(
        "jit.syncthreads() must be a statement of its own in the kernel's body (not inside an expression, "
        "a helper function, or outside a kernel launch), e.g. a line `jit.syncthreads()`"
    )


# Math on scalars; each is a ufunc of CuPy of the same name on the GPU (see cupy_kernel.py).
exp, log, sqrt, isfinite = _np.exp, _np.log, _np.sqrt, _np.isfinite
MATH_NAMES = ("exp", "log", "sqrt", "isfinite")

# Names a kernel may use; each has a cupyx.jit counterpart of the same name.
KERNEL_NAMES = (
    "rawkernel", "threadIdx", "blockIdx", "blockDim", "gridDim", "grid", "gridsize", "laneid", "warpsize",
    "shared_memory", "syncthreads", "atomic_add", "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync",
)

__all__ = [*KERNEL_NAMES, *MATH_NAMES, "RawKernel", "DeviceFunction", "last_launch_stats"]
