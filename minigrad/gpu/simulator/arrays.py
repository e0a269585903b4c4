"""Instrumented arrays: the global arrays a kernel is given and the shared arrays a block allocates.

Every element access goes through ``__getitem__``/``__setitem__`` here,
which (1) checks the index against the array's shape - a negative index is
out of bounds, as on a GPU, not NumPy's count-from-the-end - (2) adds the
element's bytes to the launch's counters and (3), for shared memory, reports
the access to the block's race detector. Values keep the array's dtype: a
global read returns a NumPy scalar of it, a shared array stores NumPy scalars
of its dtype, so float32 arithmetic stays float32.

Shared memory is per block: the first thread of a block that calls
``shared_memory(dtype, size)`` at a given place in the kernel allocates the
array, every other thread of that block calling from the same place gets
the same array (CUDA's ``__shared__`` declaration); the next block gets
fresh ones. Every dynamic array (``shared_memory(dtype, None)``) of a block
is the same ``extern __shared__`` buffer, as in CUDA: its bytes count once,
and a second dtype for it is refused. Fresh shared memory is not zeroed on a
GPU; here every element starts *unset* (poisoned, whatever the dtype: a bool
array does not start as a plausible False) and reading one before any thread
of the block wrote it gives a poison that raises :class:`UninitializedReadError`, so
no comparison, ``max()`` or select can hide it (``poison.py``).
"""

from __future__ import annotations

import operator
import os
import sys

import numpy as np

from minigrad.gpu.errors import KernelError, KernelSourceError, OutOfBoundsError, where
from minigrad.gpu.simulator import races
from minigrad.gpu.simulator import poison
from minigrad.gpu.simulator.poison import Poison
from minigrad.gpu.simulator.races import MANY, RaceDetector, Steps
from minigrad.gpu.simulator.sectors import LOAD, SHARED, STORE, WarpAccesses
from minigrad.gpu.simulator.threads import CURRENT


_U32 = np.uint32  # the type of threadIdx.x and friends (threads.py): an index as common as an int
_UNSET = None  # a shared element no thread has written (a NumPy scalar is never None)
ATOMIC_ADD_DTYPES = ("int32", "uint32", "uint64", "float16", "float32", "float64")  # cupyx.jit's atomicAdd
_OWN_FILES = {os.path.abspath(__file__), os.path.abspath(races.__file__)}


def _kernel_frame():
    """The frame of the learner's code (kernel or device function) that made the access (error paths only)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) in _OWN_FILES:
        frame = frame.f_back
    return frame


def _kernel_line() -> int:
    """The source line of the learner's code being executed (0 if unknown)."""
    frame = _kernel_frame()
    return frame.f_lineno if frame is not None else 0


def _local_name(array) -> str | None:
    """The kernel's local variable bound to ``array``, for messages."""
    frame = _kernel_frame()
    if frame is not None:
        for name, value in frame.f_locals.items():
            if value is array:
                return name
    return None


def _as_index(index, ndim: int, describe):
    """``index`` as a tuple of ``ndim`` Python ints, or a KernelError saying what is wrong."""
    parts = index if type(index) is tuple else (index,)
    if len(parts) != ndim:
        raise KernelError(
            f"{describe()} is {ndim}-D but was indexed with {len(parts)} "
            f"{'index' if len(parts) == 1 else 'indices'} {index!r}; give one integer per axis, e.g. a[i, j]"
        )
    try:
        return tuple(operator.index(part) for part in parts)
    except TypeError:
        raise KernelError(
            f"{describe()} was indexed with {index!r}; kernels index one element at a time with "
            f"integers (no slices, no float indices: use // for integer division)"
        ) from None


class GlobalArray:
    """A NumPy array passed to a kernel, seen through bounds checks and traffic counters."""

    __slots__ = ("_data", "name", "shape", "ndim", "size", "dtype", "_itemsize", "_length", "_stats", "_strides")

    def __init__(self, data: np.ndarray, name: str, stats):
        self._data = data
        self.name = name
        self.shape = data.shape
        self.ndim = data.ndim
        self.size = data.size
        self.dtype = data.dtype
        self._itemsize = data.dtype.itemsize
        self._length = data.shape[0] if data.ndim == 1 else -1
        self._stats = stats
        self._strides = data.strides  # bytes per step along each axis: where an element lies in the buffer

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index):
        if type(index) is _U32:  # threadIdx arithmetic
            index = int(index)
        if type(index) is not int or not 0 <= index < self._length:
            index = self._checked(index, "read")
        self._stats.global_load_bytes += self._itemsize
        frame = sys._getframe(1)
        warps = CURRENT.memory.warps  # for the sector counts (sectors.py)
        site = warps.sites.get((id(frame.f_code), frame.f_lasti, self))
        if site is None:
            site = warps.site(frame, self, LOAD)
        log = warps.log
        log.append(site)
        log.append(CURRENT.linear_thread)
        log.append(index * self._strides[0] if type(index) is int else self._byte(index))
        return self._data[index]

    def __setitem__(self, index, value):
        if type(index) is _U32:  # threadIdx arithmetic
            index = int(index)
        if type(index) is not int or not 0 <= index < self._length:
            index = self._checked(index, "write")
        self._stats.global_store_bytes += self._itemsize
        frame = sys._getframe(1)
        warps = CURRENT.memory.warps
        site = warps.sites.get((id(frame.f_code), frame.f_lasti, self))
        if site is None:
            site = warps.site(frame, self, STORE)
        log = warps.log
        log.append(site)
        log.append(CURRENT.linear_thread)
        log.append(index * self._strides[0] if type(index) is int else self._byte(index))
        try:
            self._data[index] = value
        except (TypeError, ValueError):
            if type(value) is GlobalArray:  # out[i] = x with x an array: say so, not NumPy's "sequence"
                value._not_a_number()
            raise

    def _byte(self, index: tuple) -> int:
        """The offset in bytes of a (checked) element of a 2-D or more array in its buffer, for the sector counts."""
        return sum(map(operator.mul, index, self._strides))

    def _atomic_add(self, index, value):
        old = self._data[index]
        self._data[index] = old + value
        return old

    def _describe(self) -> str:
        return f"global array '{self.name}' ({self.dtype}{list(self.shape)})"

    def _not_a_number(self, *_):
        element = "x[()]" if self.ndim == 0 else "x[i]"
        raise KernelError(
            f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: the {self._describe()} is used as "
            f"a number (line {_kernel_line()}); a kernel reads one element at a time: "
            f"{element.replace('x', self.name)}"
        )

    __float__ = __int__ = __index__ = __bool__ = __complex__ = _not_a_number
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _not_a_number
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = _not_a_number

    def _checked(self, index, access: str):
        if type(index) is _U32 and index < self._length:
            return int(index)
        if type(index) is tuple and len(index) == self.ndim:
            key = []
            for i, n in zip(index, self.shape):
                if type(i) is _U32:
                    i = int(i)
                if type(i) is not int or not 0 <= i < n:
                    break
                key.append(i)
            else:
                return tuple(key)
        key = _as_index(index, self.ndim, self._describe)
        for axis, (i, n) in enumerate(zip(key, self.shape)):
            if not 0 <= i < n:
                shown = key[0] if self.ndim == 1 else key
                raise OutOfBoundsError(
                    f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: out-of-bounds {access} "
                    f"{self.name}[{shown}] (line {_kernel_line()}): argument '{self.name}' has shape "
                    f"{self.shape}, so axis {axis} takes indices 0..{n - 1}. On a GPU this {access} would "
                    f"silently corrupt memory or crash. Guard it with a bounds check such as `if i < n:`."
                )
        return key[0] if self.ndim == 1 else key

    def __repr__(self) -> str:
        return f"<{self._describe()} in a simulated kernel>"


class SharedArray:
    """One ``__shared__`` array of one block: bounds-checked, counted, race-checked."""

    __slots__ = ("_values", "_scalar", "label", "size", "shape", "dtype", "_itemsize", "_races", "_accesses",
                 "_stats", "_warps", "_steps")

    def __init__(self, dtype: np.dtype, size: int, label: str, stats, warps: WarpAccesses | None = None,
                 steps: Steps | None = None):
        self._scalar = dtype.type
        # A list of NumPy scalars of the array's dtype: reading one is a list lookup (the hot path of
        # tiled kernels) and arithmetic on it still rounds as the dtype does. _UNSET: never written.
        self._values = [_UNSET] * size
        self.label = label
        self.size = size
        self.shape = (size,)
        self.dtype = dtype
        self._itemsize = dtype.itemsize
        self._stats = stats
        self._races = RaceDetector(self._race_message)
        self._accesses = self._races.accesses
        self._warps = warps if warps is not None else WarpAccesses(stats)  # the block's log of accesses
        self._steps = steps if steps is not None else Steps()  # the block's loop passes since the barrier

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index):
        if type(index) is _U32:  # threadIdx arithmetic
            index = int(index)
        if type(index) is not int or not 0 <= index < self.size:
            index = self._checked(index, "read")
        frame = sys._getframe(1)
        thread = CURRENT.linear_thread
        record = self._accesses.get(index)
        if record is None or record[1] != MANY or record[0] is not None or record[2] is not None:
            # Not the common "only read, by several threads" case: let the detector check and record.
            self._races.read(index, thread, frame.f_lineno, self._steps.step(thread, frame))
        self._stats.shared_load_bytes += self._itemsize
        warps = self._warps  # for the bank conflicts (sectors.py)
        site = warps.sites.get((id(frame.f_code), frame.f_lasti, self))
        if site is None:
            site = warps.site(frame, self, SHARED)
        log = warps.log
        log.append(site)
        log.append(thread)
        log.append(index * self._itemsize)
        value = self._values[index]
        return self._unset(index, "reads") if value is _UNSET else value

    def __setitem__(self, index, value):
        if type(index) is _U32:  # threadIdx arithmetic
            index = int(index)
        if type(index) is not int or not 0 <= index < self.size:
            index = self._checked(index, "write")
        frame = sys._getframe(1)
        thread = CURRENT.linear_thread
        self._races.write(index, thread, frame.f_lineno, self._steps.step(thread, frame))
        self._stats.shared_store_bytes += self._itemsize
        warps = self._warps
        site = warps.sites.get((id(frame.f_code), frame.f_lasti, self))
        if site is None:
            site = warps.site(frame, self, SHARED)
        log = warps.log
        log.append(site)
        log.append(thread)
        log.append(index * self._itemsize)
        self._values[index] = value if type(value) is Poison else self._scalar(value)

    def _atomic_add(self, index, value):
        old = self._values[index]
        if old is _UNSET:
            old = self._unset(index, "atomically updates")
        new = old + value
        self._values[index] = new if type(new) is Poison else self._scalar(new)
        return old

    def _unset(self, index: int, verb: str) -> Poison:
        name = _local_name(self) or "shared"
        return Poison(
            f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: {verb} {name}[{index}] (line "
            f"{_kernel_line()}) before any thread of this block wrote it: {self._name()} starts with whatever "
            f"the card's shared memory held (garbage on a GPU, whatever the dtype). Write every element the "
            f"block reads (e.g. a 0 for the threads past the end of the data) and syncthreads() before reading; "
            f"if another thread writes it later in the same phase, that is a race."
        )

    def barrier(self) -> None:
        self._races.new_epoch()

    def _name(self) -> str:
        local = _local_name(self)
        return f"shared array '{local}' ({self.label})" if local else f"shared array ({self.label})"

    def _describe(self) -> str:
        return self._name()

    def _checked(self, index, access: str):
        if type(index) is _U32 and index < self.size:
            return int(index)
        (i,) = _as_index(index, 1, self._describe)
        if not 0 <= i < self.size:
            name = _local_name(self) or "shared"
            raise OutOfBoundsError(
                f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: out-of-bounds {access} "
                f"{name}[{i}] (line {_kernel_line()}): {self._name()} holds {self.size} "
                f"elements (indices 0..{self.size - 1}). On a GPU this {access} would silently touch another "
                f"array's shared memory. Check the index arithmetic or size the array for the whole block."
            )
        return i

    def _race_message(self, address, thread, line, verb, other, other_line, other_verb, same_step=False) -> str:
        me = CURRENT.thread_name(thread)
        if other == MANY:
            them = f"other threads of the block {other_verb} it (first on line {other_line})"
        else:
            them = f"thread {CURRENT.thread_name(other)} {other_verb} it on line {other_line}"
        name = _local_name(self) or "shared"
        head = (f"{where(CURRENT.kernel, CURRENT.block_idx, me)}: shared-memory data race on {name}[{address}] "
                f"(shared {self.label}): this thread {verb} it on line {line}, and {them}")
        if same_step and verb.endswith("writes") and other_verb == "wrote":
            return (
                f"{head}, in the same step: your partner index wrote this slot in the same phase. No barrier "
                f"can order two writes of one step: only one thread may write a slot in a step. Check which "
                f"threads take part (an if that lets only the slot's owner write, for instance)."
            )
        if same_step:
            return (
                f"{head}, in the same step: your partner index {other_verb} this slot in the same phase. Within one "
                f"step a slot may be written by one thread or read by others, not both, and no barrier can "
                f"order two accesses of one step. Check which threads are active in the step and which slots "
                f"they read: the slots written in a step must not be read by another thread in that step."
            )
        return (
            f"{head}, with no barrier between the phases: no syncthreads() between the two accesses. Threads "
            f"of a block run in no fixed order between barriers, so the result depends on timing. Put a "
            f"jit.syncthreads() between the two accesses (reached by every thread of the block)."
        )

    def __repr__(self) -> str:
        return f"<shared array ({self.label}) in a simulated kernel>"


SHARED_BYTES_PER_BLOCK = 48 * 1024  # CUDA's limit without opting in to more (same on every card since 2010)
DYNAMIC = "extern __shared__"  # where BlockMemory keeps the block's one dynamic buffer


class BlockMemory:
    """The shared arrays of the block being simulated, found by the place in the kernel that declares them."""

    def __init__(self, stats, dynamic_bytes: int):
        self._stats = stats
        self._arrays: dict = {}
        self._dynamic_bytes = dynamic_bytes
        self._bytes = 0
        self.warps = WarpAccesses.of_launch(stats)  # the launch's accesses, counted per warp instruction
        self.warps.begin_block()
        self.steps = Steps()  # each thread's loop passes since the last barrier, for the race reports

    def finish(self) -> None:
        """The block is done; after the launch's last block its warp instructions' counts are in the counters."""
        last = tuple(CURRENT.block_idx) == tuple(g - 1 for g in CURRENT.grid_dim)  # blocks run in order
        self.warps.end_block(last)

    def allocate(self, dtype, size, site) -> SharedArray:
        if size is None:  # every dynamic array is the one extern __shared__ buffer of the block
            site = DYNAMIC
        array = self._arrays.get(site)
        if array is not None and (size is None or size == array.size) and dtype == array.dtype:
            return array
        dtype = np.dtype(dtype)
        if size is None:
            if self._dynamic_bytes < dtype.itemsize:
                raise KernelError(
                    f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: "
                    f"jit.shared_memory({dtype}, None) asks for dynamic shared memory, but the launch gave "
                    f"{self._dynamic_bytes} bytes; launch with kernel[grid, block](*args, shared_mem=NBYTES)"
                )
            if array is not None:
                raise KernelError(
                    f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: "
                    f"jit.shared_memory({dtype}, None) and the earlier jit.shared_memory({array.dtype}, None) are "
                    f"one buffer (CUDA's extern __shared__: every dynamic array starts at the same byte), and "
                    f"the simulator does not reinterpret its bytes as two dtypes; declare the dynamic buffer "
                    f"once, with one dtype, and give each part its own range of indices"
                )
            size = self._dynamic_bytes // dtype.itemsize
            kind = "dynamic "
        else:
            try:
                size = operator.index(size)
            except TypeError:
                raise KernelError(
                    f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: jit.shared_memory size "
                    f"must be an integer known when the kernel is compiled, got {size!r}"
                ) from None
            if size <= 0:
                raise KernelSourceError(
                    f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: jit.shared_memory({dtype}, "
                    f"{size}): the size is a number of elements > 0 (CUDA refuses it: the size of an array must "
                    f"be greater than zero); for the launch's shared_mem bytes pass None"
                )
            kind = ""
        if array is None:
            self._bytes += self._dynamic_bytes if kind else size * dtype.itemsize
            if self._bytes > SHARED_BYTES_PER_BLOCK:
                raise KernelError(
                    f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: shared memory of "
                    f"{self._bytes:,} bytes per block (with this {dtype}[{size}]) exceeds CUDA's "
                    f"{SHARED_BYTES_PER_BLOCK:,} bytes; use smaller tiles or fewer shared arrays"
                )
            label = f"{kind}{dtype}[{size}]"
            array = self._arrays[site] = SharedArray(dtype, size, label, self._stats, self.warps, self.steps)
        elif array.dtype != dtype or array.size != size:
            raise KernelError(
                f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: jit.shared_memory declared "
                f"{array.dtype}[{array.size}] for this block, but this thread asks for {dtype}[{size}] at the "
                f"same place; a __shared__ array has one dtype and one size for the whole block"
            )
        return array

    def barrier(self) -> None:
        poison.report()
        self.steps.clear()
        self.warps.barrier()
        for array in self._arrays.values():
            array.barrier()


def shared_memory(dtype, size):
    """Declare a block's shared array of ``size`` elements (``None``: the launch's dynamic ``shared_mem``)."""
    memory = CURRENT.memory
    if memory is None:
        CURRENT.thread_idx[0]  # outside a launch: raises the explanation
    caller = sys._getframe(1)
    return memory.allocate(dtype, size, (caller.f_code, caller.f_lasti))


def atomic_add(array, index, value):
    """Add ``value`` to ``array[index]`` as one indivisible step; return the old value."""
    if isinstance(array, SharedArray):
        if type(index) is not int or not 0 <= index < array.size:
            index = array._checked(index, "atomic_add on")
        frame = sys._getframe(1)
        thread = CURRENT.linear_thread
        array._races.atomic(index, thread, frame.f_lineno, array._steps.step(thread, frame))
    elif isinstance(array, GlobalArray):
        if type(index) is not int or not 0 <= index < array._length:
            index = array._checked(index, "atomic_add on")
    else:
        if CURRENT.kernel is None:
            CURRENT.thread_idx[0]
        raise KernelError(
            f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: jit.atomic_add needs a kernel "
            f"argument array or a shared array as its first argument, got {type(array).__name__}"
        )
    if array.dtype.name not in ATOMIC_ADD_DTYPES:
        raise KernelSourceError(
            f"{where(CURRENT.kernel, CURRENT.block_idx, CURRENT.thread_idx)}: jit.atomic_add on an array of "
            f"{array.dtype}: cupyx.jit's atomicAdd does not support {array.dtype} input (it takes "
            f"{', '.join(ATOMIC_ADD_DTYPES)}); use an int32 or float32 array for the counter"
        )
    CURRENT.stats.atomics += 1
    return array._atomic_add(index, value)
