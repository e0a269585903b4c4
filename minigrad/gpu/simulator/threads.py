"""Which simulated thread is running, and the built-in variables that read it.

On a GPU, ``threadIdx``, ``blockIdx``, ``blockDim`` and ``gridDim`` are
registers every thread reads. The simulator runs one thread at a time on
the CPU, so before it resumes a thread it records that thread's position in
the single :data:`CURRENT` object, and the built-ins read from there. The
kernel code never notices: ``jit.threadIdx.x`` is an attribute lookup either
way.

The built-ins have cupyx.jit's type: ``threadIdx.x``, ``blockIdx.x``,
``blockDim.x``, ``gridDim.x``, ``grid(1)``, ``gridsize(1)`` and ``laneid()``
are unsigned 32-bit integers (``numpy.uint32``), so ``threadIdx.x - 1`` wraps
to 4294967295 on thread 0 as it does on a GPU, a guard ``i >= 0`` is always
true, and the access that follows is caught as out of bounds.
:data:`CURRENT` also keeps the position as plain ints for messages.

Invariant: outside a simulated launch :data:`CURRENT` holds no position,
and reading a built-in raises a :class:`KernelError` that says so.
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu.errors import KernelError

U32 = np.uint32


class _NoLaunch:
    """Stands in for a position outside any launch: indexing it explains the mistake."""

    def __init__(self, name: str):
        self.name = name

    def __getitem__(self, axis):
        raise KernelError(
            f"jit.{self.name} only has a value inside a running kernel: launch the kernel as "
            f"kernel[grid, block](*args) instead of reading {self.name} (or calling the kernel's code) directly"
        )


class SimulatedPosition:
    """The launch, block and thread the simulator is executing right now."""

    def __init__(self):
        self.end_launch()

    def begin_launch(self, kernel: str, grid: tuple, block: tuple, stats) -> None:
        self.kernel = kernel
        self.grid_dim = grid
        self.block_dim = block
        self.grid_reg = tuple(U32(v) for v in grid)
        self.block_dim_reg = tuple(U32(v) for v in block)
        self.grid_size = tuple(U32((g * b) & 0xFFFFFFFF) for g, b in zip(grid, block))
        self.stats = stats

    def enter_block(self, block_idx: tuple, memory) -> None:
        self.block_idx = block_idx
        self.block_reg = tuple(U32(v) for v in block_idx)
        self.block_start = tuple(b * d for b, d in zip(block_idx, self.block_dim))
        self.memory = memory

    def enter_thread(self, thread_idx: tuple, linear: int, registers: tuple = ()) -> None:
        """Run as thread ``thread_idx`` (ints) whose ``threadIdx`` register is ``registers`` (uint32s)."""
        self.thread_idx = thread_idx
        self.thread_reg = registers or tuple(U32(v) for v in thread_idx)
        self.linear_thread = linear
        self.steps = 0

    def end_launch(self) -> None:
        self.kernel = None
        self.grid_dim = _NoLaunch("gridDim")
        self.block_dim = _NoLaunch("blockDim")
        self.block_idx = _NoLaunch("blockIdx")
        self.thread_idx = _NoLaunch("threadIdx")
        self.grid_reg, self.block_dim_reg = self.grid_dim, self.block_dim
        self.block_reg, self.thread_reg = self.block_idx, self.thread_idx
        self.linear_thread = -1
        self.steps = 0
        self.stats = None
        self.memory = None

    def thread_name(self, linear: int) -> tuple[int, int, int]:
        """The ``(x, y, z)`` threadIdx of a thread given its linear index in the block (x varies fastest)."""
        bx, by, _ = self.block_dim
        return (linear % bx, (linear // bx) % by, linear // (bx * by))


CURRENT = SimulatedPosition()


class _Dim3Register:
    """A built-in ``dim3`` variable (``threadIdx``, ``blockIdx``, ...) with ``.x``, ``.y``, ``.z``."""

    def __init__(self, name: str, field: str):
        self._name = name
        self._field = field

    @property
    def x(self) -> np.uint32:
        return getattr(CURRENT, self._field)[0]

    @property
    def y(self) -> np.uint32:
        return getattr(CURRENT, self._field)[1]

    @property
    def z(self) -> np.uint32:
        return getattr(CURRENT, self._field)[2]

    def __repr__(self) -> str:
        return f"minigrad.gpu.jit.{self._name}"


threadIdx = _Dim3Register("threadIdx", "thread_reg")
blockIdx = _Dim3Register("blockIdx", "block_reg")
blockDim = _Dim3Register("blockDim", "block_dim_reg")
gridDim = _Dim3Register("gridDim", "grid_reg")


def _check_ndim(name: str, ndim: int) -> None:
    if ndim not in (1, 2, 3):
        raise KernelError(f"jit.{name}(ndim) takes ndim = 1, 2 or 3, got {ndim!r}")


def grid(ndim: int):
    """This thread's global index: ``blockIdx * blockDim + threadIdx`` per axis (a uint32 for 1-D, else a tuple)."""
    if ndim == 1 and CURRENT.kernel is not None:
        return U32((CURRENT.block_start[0] + CURRENT.thread_idx[0]) & 0xFFFFFFFF)
    _check_ndim("grid", ndim)
    b, d, t = CURRENT.block_idx, CURRENT.block_dim, CURRENT.thread_idx
    return tuple(U32((b[axis] * d[axis] + t[axis]) & 0xFFFFFFFF) for axis in range(ndim))


def gridsize(ndim: int):
    """The total number of threads per axis, ``blockDim * gridDim`` (the stride of a grid-stride loop), uint32."""
    if ndim == 1 and CURRENT.kernel is not None:
        return CURRENT.grid_size[0]
    _check_ndim("gridsize", ndim)
    d, g = CURRENT.block_dim, CURRENT.grid_dim
    return tuple(U32((d[axis] * g[axis]) & 0xFFFFFFFF) for axis in range(ndim))


def laneid() -> np.uint32:
    """This thread's index within its warp of 32 (threads are grouped into warps by linear index)."""
    if CURRENT.kernel is None:
        _NoLaunch("laneid()")[0]
    return U32(CURRENT.linear_thread % warpsize)


warpsize = 32
