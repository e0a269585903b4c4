"""The simulator's hostile set: kernels a learner will write that once gave a silent wrong answer, a crash, a
hang, a false alarm or a misleading message - each with what must happen now.

One table, ``CASES``; each case has a class:

- ``silent-wrong``: the simulator used to run it and give an answer a GPU would not; it must now raise the
  simulator's own error (naming kernel, block, thread and index where there is one), or refuse the kernel at
  launch with cupyx.jit's reason;
- ``crash``: an internal error (a traceback from the simulator, ZeroDivisionError...) must become a clear one;
- ``hang``: it ran forever or for hours; it must end quickly with a clear error;
- ``false-alarm``: a correct kernel was refused; it must run and give the right answer;
- ``message``: the error was raised but said the wrong thing; it must say the right one.

Where the simulator refuses a kernel because cupyx.jit refuses it, ``test_cupyx_refuses_it_too`` confirms it
with the real transpiler (``minigrad.gpu.compile_check``, skipped without CuPy). Every case runs in well under a
second; kernels that loop forever run under a small step limit.
"""

from __future__ import annotations

import importlib
import re
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest

from minigrad.gpu import (
    DivergentBarrierError,
    KernelError,
    KernelLaunchError,
    KernelSourceError,
    OutOfBoundsError,
    SharedMemoryRaceError,
    StepLimitError,
    UninitializedReadError,
    jit,
)
from minigrad.gpu.kernels import scaled_add
from minigrad.gpu.simulator import limits, scheduler

f32, i32 = np.float32, np.int32
FULL = 0xFFFFFFFF
TABLE = np.arange(4, dtype=np.float32)  # a module-level array (kernels must not read it)
NEGATIVE_SIZE = -4


def zeros(n=8, dtype=np.float32):
    return np.zeros(n, dtype)


# ---------------------------------------------------------------- kernels: unsigned indices


@jit.rawkernel()
def left_neighbour_guarded(x, out, n):
    i = jit.threadIdx.x - 1
    if i >= 0:  # always true: i is unsigned
        out[i] = x[i]


@jit.rawkernel()
def left_of_global_index(x, out, n):
    i = jit.grid(1)
    left = i - 1
    if left >= 0 and i < n:
        out[i] = x[left]


@jit.rawkernel()
def left_neighbour_correct(x, out, n):
    i = jit.grid(1)
    if i >= 1 and i < n:
        out[i] = x[i - 1]


@jit.rawkernel()
def signed_range_plus_thread(x, n):
    for j in range(n):
        x[j + jit.threadIdx.x] = np.float32(0)


@jit.rawkernel()
def thread_minus_int_argument(x, out, n):
    i = jit.threadIdx.x - n
    out[0] = x[i]


@jit.rawkernel()
def thread_plus_negative_constant(x, out):
    out[0] = x[jit.threadIdx.x + -1]


@jit.rawkernel()
def warpsize_plus_thread(out):
    out[0] = jit.warpsize + jit.threadIdx.x


@jit.rawkernel()
def counter_from_constant_plus_thread(out):
    c = 3
    out[0] = jit.threadIdx.x + c


@jit.rawkernel()
def signed_assigned_to_unsigned(out, n):
    t = jit.threadIdx.x
    t = n
    out[0] = t


@jit.rawkernel()
def unsigned_plus_int64_argument(out, n):
    i = jit.threadIdx.x + n
    out[0] = i


@jit.rawkernel()
def unsigned_range_loop(out):
    for j in range(np.uint32(4)):
        out[j + jit.threadIdx.x] = np.float32(1)


@jit.rawkernel()
def product_of_python_float_arguments(out, a, b):
    out[0] = a * b


# ---------------------------------------------------------------- kernels: shared memory


@jit.rawkernel()
def two_dynamic_arrays_alias(out):
    a = jit.shared_memory(np.float32, None)
    b = jit.shared_memory(np.float32, None)
    t = jit.threadIdx.x
    a[t] = np.float32(t)
    jit.syncthreads()
    out[t] = b[t]


@jit.rawkernel()
def two_dynamic_dtypes(out):
    a = jit.shared_memory(np.float32, None)
    b = jit.shared_memory(np.int32, None)
    a[0] = np.float32(1)
    out[0] = b[0]


@jit.rawkernel()
def dynamic_declared_in_a_loop(out):
    t = jit.threadIdx.x
    for k in range(2):
        buffer = jit.shared_memory(np.float32, None)
        buffer[t] = np.float32(k)
    out[t] = buffer[t]


@jit.rawkernel()
def uninitialised_compare(out):
    s = jit.shared_memory(np.float32, 8)
    t = jit.threadIdx.x
    if s[t] > 0:
        out[t] = np.float32(1)


@jit.rawkernel()
def uninitialised_max(x, out):
    s = jit.shared_memory(np.float32, 8)
    t = jit.threadIdx.x
    out[t] = max(s[t], x[t])


@jit.rawkernel()
def uninitialised_bool_flag(out):
    flags = jit.shared_memory(np.bool_, 8)
    t = jit.threadIdx.x
    if flags[t]:
        out[t] = np.float32(1)


@jit.rawkernel()
def uninitialised_to_global(out):
    s = jit.shared_memory(np.float32, 8)
    out[jit.threadIdx.x] = s[jit.threadIdx.x] * np.float32(2)


@jit.rawkernel()
def only_thread_zero_fills(out):
    s = jit.shared_memory(np.int32, 8)
    t = jit.threadIdx.x
    if t == 0:
        s[0] = 1
    jit.syncthreads()
    out[t] = s[t]


@jit.rawkernel()
def uninitialised_atomic_counter(out):
    counter = jit.shared_memory(np.int32, 1)
    jit.atomic_add(counter, 0, 1)
    jit.syncthreads()
    out[jit.threadIdx.x] = counter[0]


@jit.rawkernel()
def negative_shared_size(out):
    s = jit.shared_memory(np.float32, -4)
    out[0] = s[0]


@jit.rawkernel()
def shared_size_from_a_negative_constant(out):
    s = jit.shared_memory(np.float32, NEGATIVE_SIZE)
    out[0] = s[0]


@jit.rawkernel()
def dynamic_reverse(x, out):
    s = jit.shared_memory(np.float32, None)
    t = jit.threadIdx.x
    s[t] = x[t]
    jit.syncthreads()
    out[t] = s[jit.blockDim.x - 1 - t]


# ---------------------------------------------------------------- kernels: Python cupyx.jit refuses


@jit.rawkernel()
def reads_module_array(out):
    out[jit.threadIdx.x] = TABLE[1]


@jit.rawkernel()
def writes_module_array(out):
    TABLE[0] = out[0]


@jit.rawkernel()
def catches_index_error(x, out, n):
    i = jit.grid(1)
    try:
        out[i] = x[i]
    except IndexError:
        pass


@jit.rawkernel()
def yields_a_value(out):
    yield 1


@jit.rawkernel()
def returns_a_value(out):
    out[0] = np.float32(1)
    return 1


@jit.rawkernel()
def builds_a_list(out):
    weights = [1, 2]
    out[0] = weights[0]


@jit.rawkernel()
def builds_a_dict(out):
    weights = {0: 1}
    out[0] = weights[0]


@jit.rawkernel()
def prints(out, n):
    print(n)


@jit.rawkernel()
def recurses(out, n):
    recurses(out, n)


@jit.rawkernel(device=True)
def countdown(n):
    return countdown(n - 1)


@jit.rawkernel()
def calls_a_recursive_helper(out, n):
    out[0] = countdown(n)


@jit.rawkernel()
def uses_global(out):
    global TABLE
    out[0] = np.float32(1)


@jit.rawkernel()
def imports(out):
    import math

    out[0] = np.float32(1)


@jit.rawkernel()
def iterates_an_array(x, out):
    for value in x:
        out[0] = value


@jit.rawkernel()
def uses_a_lambda(x, out):
    double = lambda v: v * 2  # noqa: E731
    out[0] = double(x[0])


@jit.rawkernel()
def chained_comparison(out, n):
    if 0 < n < 10:
        out[0] = np.float32(1)


@jit.rawkernel()
def chained_assignment(out):
    out[0] = out[1] = np.float32(0)


@jit.rawkernel()
def calls_numpy_exp(x, out):
    out[0] = np.exp(x[0])


def python_helper(v):
    return v * 2


@jit.rawkernel()
def calls_a_python_function(x, out):
    out[0] = python_helper(x[0])


@jit.rawkernel()
def uses_abs(x, out):
    out[0] = abs(x[0])


@jit.rawkernel()
def shuffle_with_keywords(x, out):
    out[0] = jit.shfl_down_sync(mask=FULL, var=x[0], delta=1)


@jit.rawkernel()
def shuffle_up_by_minus_one(x, out):
    t = jit.threadIdx.x
    out[t] = jit.shfl_up_sync(FULL, x[t], -1)


@jit.rawkernel()
def global_atomic_add(counts, x):
    jit.atomic_add(counts, 0, x[jit.threadIdx.x])


@jit.rawkernel()
def needs_n(out, n):
    out[0] = n


# ---------------------------------------------------------------- kernels: barriers, warps, loops


@jit.rawkernel()
def half_block_barrier(x, out):
    s = jit.shared_memory(np.float32, 32)
    t = jit.threadIdx.x
    s[t] = x[t]
    if t < 16:
        jit.syncthreads()
    out[t] = s[31 - t]


@jit.rawkernel()
def barrier_in_different_iterations(out):
    t = jit.threadIdx.x
    for j in range(2):
        if t == 0 or j == 1:
            jit.syncthreads()
    out[t] = np.float32(1)


@jit.rawkernel()
def barrier_in_a_uniform_loop(x, out):
    s = jit.shared_memory(np.float32, 8)
    t = jit.threadIdx.x
    s[t] = x[t]
    jit.syncthreads()
    for j in range(3):
        v = s[(t + 1) % 8]
        jit.syncthreads()
        s[t] = v
        jit.syncthreads()
    out[t] = s[t]


@jit.rawkernel()
def half_warps_with_own_masks(x, out):
    t = jit.threadIdx.x
    mask = np.uint32(0x0000FFFF) if t < 16 else np.uint32(0xFFFF0000)
    out[t] = jit.shfl_xor_sync(mask, x[t], 1)


@jit.rawkernel()
def half_warps_at_two_lines(x, out):
    t = jit.threadIdx.x
    if t < 16:
        out[t] = jit.shfl_down_sync(0x0000FFFF, x[t], 1, width=16)
    else:
        out[t] = jit.shfl_up_sync(0xFFFF0000, x[t], 1, width=16)


@jit.rawkernel()
def shuffle_with_numpy_width(x, out, width):
    t = jit.threadIdx.x
    out[t] = jit.shfl_down_sync(FULL, x[t], 1, width=width)


@jit.rawkernel()
def shuffle_up_by_a_variable(x, out, delta):
    t = jit.threadIdx.x
    out[t] = jit.shfl_up_sync(FULL, x[t], delta)


@jit.rawkernel()
def spins_forever(out):
    while True:
        out[0] = np.float32(1)


@jit.rawkernel()
def forgets_the_increment(x, out, n):
    i = jit.grid(1)
    while i < n:
        out[i] = x[i]


@jit.rawkernel()
def waits_for_a_flag(flag, out):
    if jit.threadIdx.x == 0:
        while flag[0] == 0:
            out[0] = out[0] + 1
    else:
        flag[0] = 1


@jit.rawkernel()
def waits_for_a_shared_flag(out):
    flag = jit.shared_memory(np.int32, 1)
    if jit.threadIdx.x == 1:
        flag[0] = 0
    jit.syncthreads()
    if jit.threadIdx.x == 0:
        while flag[0] == 0:
            out[0] = np.float32(1)
    else:
        flag[0] = 1


@jit.rawkernel()
def long_serial_loop(out, n):
    i = 0
    while i < n:
        i += 1
    out[0] = i


@jit.rawkernel()
def waits_for_the_host(flag, out):
    while flag[0] == 0:
        out[0] = np.float32(1)


@jit.rawkernel()
def scale(x, out, n):
    i = jit.grid(1)
    if i < n:
        out[i] = x[i] * np.float32(2)


@jit.rawkernel()
def zero_d_read(x, out):
    out[0] = x[()]


@jit.rawkernel()
def zero_d_as_a_number(x, out):
    out[0] = x


# ---------------------------------------------------------------- kernels: more of each kind


@jit.rawkernel()
def up_neighbour_2d(x, out):
    i, j = jit.grid(2)
    up = i - 1
    if up >= 0:
        out[i, j] = x[up, j]


@jit.rawkernel()
def previous_block(x, out):
    b = jit.blockIdx.x - 1
    if b >= 0:
        out[jit.threadIdx.x] = x[b * jit.blockDim.x + jit.threadIdx.x]


@jit.rawkernel()
def shared_left_neighbour(x, out):
    s = jit.shared_memory(np.float32, 8)
    t = jit.threadIdx.x
    s[t] = x[t]
    jit.syncthreads()
    left = t - 1
    if left >= 0:
        out[t] = s[left]


@jit.rawkernel()
def int32_argument_plus_thread(out, n):
    out[jit.threadIdx.x + n] = np.float32(1)


@jit.rawkernel()
def builds_a_set(out):
    seen = {1, 2}
    out[0] = np.float32(1)


@jit.rawkernel()
def list_comprehension(out):
    squares = [k * k for k in range(3)]
    out[0] = np.float32(1)


@jit.rawkernel()
def uses_with(out, n):
    with n:
        out[0] = np.float32(1)


@jit.rawkernel()
def raises(out, n):
    if n > 3:
        raise ValueError("too big")
    out[0] = np.float32(1)


@jit.rawkernel()
def deletes(out):
    v = out[0]
    del v


@jit.rawkernel()
def compares_with_is(out, n):
    if n is None:
        out[0] = np.float32(1)


@jit.rawkernel()
def uses_in(out, n):
    if n in (1, 2):
        out[0] = np.float32(1)


@jit.rawkernel()
def matrix_product_operator(x, out):
    out[0] = x[0] @ x[1]


@jit.rawkernel()
def for_else(out, n):
    for j in range(n):
        out[j] = np.float32(1)
    else:
        out[0] = np.float32(2)


@jit.rawkernel()
def while_else(out, n):
    i = 0
    while i < n:
        i += 1
    else:
        out[0] = np.float32(2)


@jit.rawkernel()
def nested_def(out):
    def helper(v):
        return v

    out[0] = helper(np.float32(1))


@jit.rawkernel()
def walrus(out, n):
    if (m := n) > 0:
        out[0] = np.float32(m)


@jit.rawkernel()
def star_unpacking(x, out):
    out[0] = max(*(x[0], x[1]))


def make_closure_kernel():
    table = np.arange(4, dtype=np.float32)

    @jit.rawkernel()
    def reads_closure_array(out):
        out[0] = table[1]

    return reads_closure_array


reads_closure_array = make_closure_kernel()


@jit.rawkernel()
def shared_atomic_int8(out):
    counter = jit.shared_memory(np.int8, 1)
    if jit.threadIdx.x == 0:
        counter[0] = 0
    jit.syncthreads()
    jit.atomic_add(counter, 0, 1)


@jit.rawkernel()
def uninitialised_negated_flag(out):
    flags = jit.shared_memory(np.bool_, 8)
    if not flags[jit.threadIdx.x]:
        out[jit.threadIdx.x] = np.float32(1)


@jit.rawkernel()
def uninitialised_as_an_index(x, out):
    slots = jit.shared_memory(np.int32, 8)
    out[jit.threadIdx.x] = x[slots[jit.threadIdx.x]]


@jit.rawkernel()
def uninitialised_through_exp(out):
    s = jit.shared_memory(np.float32, 8)
    if jit.exp(s[jit.threadIdx.x]) > np.float32(1):
        out[jit.threadIdx.x] = np.float32(1)


@jit.rawkernel()
def uninitialised_through_min(x, out):
    s = jit.shared_memory(np.float32, 8)
    out[jit.threadIdx.x] = min(x[jit.threadIdx.x], s[jit.threadIdx.x])


@jit.rawkernel()
def uninitialised_int_to_global(out):
    s = jit.shared_memory(np.int32, 8)
    out[jit.threadIdx.x] = s[jit.threadIdx.x] + 1


@jit.rawkernel()
def uninitialised_through_a_shuffle(out):
    s = jit.shared_memory(np.float32, 32)
    v = jit.shfl_down_sync(FULL, s[jit.threadIdx.x], 1)
    out[jit.threadIdx.x] = v


@jit.rawkernel()
def barrier_forever(out):
    while True:
        jit.syncthreads()


@jit.rawkernel()
def shuffle_forever(x, out):
    v = x[jit.threadIdx.x]
    while True:
        v = jit.shfl_xor_sync(FULL, v, 1)


@jit.rawkernel()
def huge_range(out):
    for j in range(10**12):
        out[0] = np.float32(j)


@jit.rawkernel()
def barrier_waits_for_a_flag(flag, out):
    while flag[0] == 0:
        jit.syncthreads()


@jit.rawkernel()
def fractional_shared_size(out):
    s = jit.shared_memory(np.float32, 2.5)
    out[0] = s[0]


@jit.rawkernel()
def grid_of_four_dimensions(out):
    i = jit.grid(4)
    out[0] = i


@jit.rawkernel()
def float_index(x, out):
    out[0] = x[jit.threadIdx.x / 2]


@jit.rawkernel()
def two_indices_on_1d(x, out):
    out[0] = x[0, 0]


@jit.rawkernel()
def slices(x, out):
    out[0] = x[0:2]


@jit.rawkernel()
def atomic_on_a_number(out):
    jit.atomic_add(3, 0, 1)


@jit.rawkernel()
def shuffle_with_a_float_mask(x, out):
    t = jit.threadIdx.x
    out[t] = jit.shfl_xor_sync(0.5, x[t], 1)


@jit.rawkernel()
def grid_stride_with_int64_n(x, out, n):
    i = jit.grid(1)
    stride = jit.gridsize(1)
    while i < n:
        out[i] = x[i] + np.float32(1)
        i += stride


@jit.rawkernel()
def broadcast_from_lane_0(x, out):
    t = jit.threadIdx.x
    out[t] = jit.shfl_sync(np.uint32(FULL), x[t], np.uint32(0))


@jit.rawkernel()
def unsigned_value_into_an_int32_atomic(counts):
    jit.atomic_add(counts, 0, jit.threadIdx.x)


@jit.rawkernel()
def barrier_under_a_block_uniform_branch(x, out):
    s = jit.shared_memory(np.float32, 8)
    t = jit.threadIdx.x
    if jit.blockIdx.x == 0:
        s[t] = x[t]
        jit.syncthreads()
        out[t] = s[7 - t]


@jit.rawkernel()
def nested_loops_with_barriers(out):
    s = jit.shared_memory(np.int32, 4)
    t = jit.threadIdx.x
    s[t] = 0
    jit.syncthreads()
    for a in range(2):
        for b in range(3):
            if t == 0:
                s[0] = s[0] + 1
            jit.syncthreads()
    out[t] = s[0]


@jit.rawkernel()
def loop_variable_below_threadIdx(out, n):
    for j in range(n):
        if j < jit.threadIdx.x:
            out[jit.threadIdx.x] = out[jit.threadIdx.x] + np.float32(1)


@jit.rawkernel()
def block_range_plus_thread(out):
    for j in range(jit.blockDim.x):
        out[j + jit.threadIdx.x] = np.float32(1)


@jit.rawkernel()
def divergent_in_2d(out):
    if jit.threadIdx.y == 0:
        jit.syncthreads()
    out[jit.threadIdx.y, jit.threadIdx.x] = np.float32(1)


@jit.rawkernel(device=True)
def spin_in_a_helper(v):
    while v > 0:
        v = v + 1
    return v


@jit.rawkernel()
def calls_a_spinning_helper(out):
    out[0] = spin_in_a_helper(np.float32(1))


@jit.rawkernel(device=True)
def helper_that_prints(v):
    print(v)
    return v


@jit.rawkernel()
def calls_a_printing_helper(out):
    out[0] = helper_that_prints(np.float32(1))


@jit.rawkernel(device=True)
def helper_reading_a_module_array(i):
    return TABLE[1]


@jit.rawkernel()
def calls_a_helper_reading_a_module_array(out):
    out[0] = helper_reading_a_module_array(0)


@jit.rawkernel(device=True)
def sum_of_first(n):
    total = np.float32(0)
    for k in range(n):
        total += np.float32(k)
    return total


@jit.rawkernel()
def calls_a_looping_helper(out):
    out[jit.threadIdx.x] = sum_of_first(4)


@jit.rawkernel()
def only_block_zero_fills(out):
    s = jit.shared_memory(np.float32, 1)
    if jit.blockIdx.x == 0 and jit.threadIdx.x == 0:
        s[0] = np.float32(5)
    jit.syncthreads()
    out[jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x] = s[0]


@jit.rawkernel()
def race_before_a_full_barrier(out):
    s = jit.shared_memory(np.float32, 8)
    t = jit.threadIdx.x
    s[0] = np.float32(t)
    jit.syncthreads()
    out[t] = s[0]


@jit.rawkernel()
def reads_before_its_neighbour_writes(x, out):
    s = jit.shared_memory(np.float32, 8)
    t = jit.threadIdx.x
    s[t] = x[t]
    out[t] = s[(t + 1) % 8]


@jit.rawkernel()
def overlapping_masks(x, out):
    t = jit.threadIdx.x
    mask = np.uint32(0x0000FFFF) if t < 16 else np.uint32(0xFFFFFF00)
    out[t] = jit.shfl_xor_sync(mask, x[t], 1)


@jit.rawkernel()
def reads_across_the_groups(x, out):
    t = jit.threadIdx.x
    mask = np.uint32(0x0000FFFF) if t < 16 else np.uint32(0xFFFF0000)
    out[t] = jit.shfl_xor_sync(mask, x[t], 16)


# ---------------------------------------------------------------- the table


@dataclass
class Case:
    """``run()`` launches; ``raises`` (an error class and a regex its message must match) or ``check(result)``."""

    id: str
    klass: str
    run: object
    raises: tuple | None = None
    check: object = None
    cupyx: tuple | None = None  # (kernel, example args) that cupyx.jit must refuse to transpile
    note: str = field(default="")


def launch(kernel, grid, block, *args, **kwargs):
    def run():
        kernel[grid, block](*args, **kwargs)
        return args

    return run


def with_limit(steps, run):
    def limited():
        with limits.step_limit(steps):
            return run()

    return limited


def _threads_0():
    x = np.ones(4, np.float32)
    return scaled_add(1.0, x, x, threads=0)


def _stats_after_refused_launch():
    scale[1, 8](np.ones(8, f32), zeros(), 8)
    assert jit.last_launch_stats() is not None
    try:
        scale[0, 8](np.ones(8, f32), zeros(), 8)
    except KernelLaunchError:
        pass
    return jit.last_launch_stats()


def _stats_after_refused_source():
    scale[1, 8](np.ones(8, f32), zeros(), 8)
    try:
        builds_a_list[1, 1](zeros())
    except KernelSourceError:
        pass
    return jit.last_launch_stats()


def _second_thread_launch():
    """A launch from the main thread while another Python thread's launch runs is refused; the other finishes.

    The other launch spins until the host sets its flag, which the host does after its own launch was refused.
    """
    flag, out = zeros(1, i32), zeros(1)
    worker = threading.Thread(target=lambda: waits_for_the_host[1, 1](flag, out))
    worker.start()
    deadline = time.monotonic() + 5
    while scheduler.CURRENT.kernel is None and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.0005)
    try:
        scale[1, 8](np.ones(8, f32), zeros(), 8)
        error = None
    except KernelLaunchError as caught:
        error = caught
    flag[0] = 1
    worker.join()
    return error, out


def _large_grid_warns(monkeypatch_value=64):
    previous = limits.WARN_THREADS
    limits.WARN_THREADS = monkeypatch_value
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scale[4, 32](np.ones(128, f32), zeros(128), 128)
    finally:
        limits.WARN_THREADS = previous
    return [str(w.message) for w in caught]


def _call_without_config():
    out = zeros()
    scale(out)


def _float_arguments():
    out = np.zeros(1, np.float64)
    product_of_python_float_arguments[1, 1](out, 0.1, 3.0)
    return out


def equal(expected):
    def check(result):
        np.testing.assert_array_equal(result, expected)

    return check


def _out(run, index=-1):
    def wrapped():
        return run()[index]

    return wrapped


x8 = np.arange(8, dtype=np.float32)
x32 = np.arange(32, dtype=np.float32)
WHERE = r"kernel '{}', block \(0, 0, 0\), thread \({}, 0, 0\)"

CASES = [
    # ------------------------------------------------ silent wrong answers, now caught or refused
    Case("unsigned-guard-after-threadIdx-minus-1", "silent-wrong",
         launch(left_neighbour_guarded, 1, 8, x8, zeros(), 8),
         (OutOfBoundsError, WHERE.format("left_neighbour_guarded", 0) + r": out-of-bounds read x\[4294967295\]")),
    Case("unsigned-guard-after-grid-minus-1", "silent-wrong",
         launch(left_of_global_index, 1, 8, x8, zeros(), 8),
         (OutOfBoundsError, WHERE.format("left_of_global_index", 0) + r": out-of-bounds read x\[4294967295\]")),
    Case("signed-range-counter-plus-threadIdx", "silent-wrong",
         launch(signed_range_plus_thread, 1, 4, zeros(), 4),
         (KernelSourceError, r"kernel 'signed_range_plus_thread', line \d+: arithmetic \(Add\) mixing an unsigned "
                             r"uint32 .* signed int32 - cupyx.jit refuses .*cannot cast from 'int32' to uint32"),
         cupyx=(signed_range_plus_thread, (zeros(), 4))),
    Case("threadIdx-minus-int-argument", "silent-wrong",
         launch(thread_minus_int_argument, 1, 4, x8, zeros(), 2),
         (KernelSourceError, r"arithmetic \(Sub\) mixing an unsigned"),
         cupyx=(thread_minus_int_argument, (x8, zeros(), 2))),
    Case("threadIdx-plus-negative-constant", "silent-wrong",
         launch(thread_plus_negative_constant, 1, 4, x8, zeros()),
         (KernelSourceError, r"a negative constant .* out of bounds for uint32"),
         cupyx=(thread_plus_negative_constant, (x8, zeros()))),
    Case("warpsize-plus-threadIdx", "silent-wrong", launch(warpsize_plus_thread, 1, 1, zeros(1, np.int64)),
         (KernelSourceError, r"mixing an unsigned uint32"), cupyx=(warpsize_plus_thread, (zeros(1, np.int64),))),
    Case("int-variable-plus-threadIdx", "silent-wrong", launch(counter_from_constant_plus_thread, 1, 1, zeros()),
         (KernelSourceError, r"mixing an unsigned uint32"), cupyx=(counter_from_constant_plus_thread, (zeros(),))),
    Case("int32-assigned-to-an-unsigned-variable", "silent-wrong",
         launch(signed_assigned_to_unsigned, 1, 1, zeros(), 3),
         (KernelSourceError, r"assigning a signed int32 to 't'"), cupyx=(signed_assigned_to_unsigned, (zeros(), 3))),
    Case("python-float-arguments-are-float32", "silent-wrong", _float_arguments,
         check=equal([np.float32(0.1) * np.float32(3.0)]), note="cupyx.jit types a Python float as float32"),
    Case("two-dynamic-arrays-alias-one-buffer", "silent-wrong",
         _out(launch(two_dynamic_arrays_alias, 1, 8, zeros(), shared_mem=32)), check=equal(x8)),
    Case("two-dynamic-arrays-of-two-dtypes", "silent-wrong", launch(two_dynamic_dtypes, 1, 1, zeros(), shared_mem=32),
         (KernelError, r"are one buffer \(CUDA's extern __shared__")),
    Case("module-level-array-read", "silent-wrong", launch(reads_module_array, 1, 4, zeros(4)),
         (KernelSourceError, r"kernel 'reads_module_array', line \d+: the module-level array 'TABLE' .* freezes")),
    Case("module-level-array-written", "silent-wrong", launch(writes_module_array, 1, 1, zeros(4)),
         (KernelSourceError, r"module-level array 'TABLE'")),
    Case("except-IndexError-swallows-out-of-bounds", "silent-wrong",
         launch(catches_index_error, 2, 8, x8, zeros(), 8),
         (KernelSourceError, r"try/except in a kernel - cupyx.jit refuses .*throw/catch are not allowed"),
         cupyx=(catches_index_error, (x8, zeros(), 8))),
    Case("uninitialised-shared-in-a-comparison", "silent-wrong", launch(uninitialised_compare, 1, 8, zeros()),
         (UninitializedReadError, WHERE.format("uninitialised_compare", 0) + r": reads s\[0\] \(line \d+\) before "
                                  r"any thread of this block wrote it.*decides a branch")),
    Case("uninitialised-shared-through-max", "silent-wrong", launch(uninitialised_max, 1, 8, x8, zeros()),
         (UninitializedReadError, r"reads s\[0\].*max\(\)")),
    Case("uninitialised-bool-shared-is-not-False", "silent-wrong", launch(uninitialised_bool_flag, 1, 8, zeros()),
         (UninitializedReadError, r"reads flags\[0\] .*shared array 'flags' \(bool\[8\]\)")),
    Case("uninitialised-shared-stored-to-global", "silent-wrong", launch(uninitialised_to_global, 1, 8, zeros()),
         (UninitializedReadError, r"reads s\[0\].*stored into global memory")),
    Case("shared-filled-by-one-thread-read-by-all", "silent-wrong",
         launch(only_thread_zero_fills, 1, 8, zeros(8, np.int32)),
         (UninitializedReadError, WHERE.format("only_thread_zero_fills", 1) + r": reads s\[1\]")),
    Case("uninitialised-shared-atomic-counter", "silent-wrong",
         launch(uninitialised_atomic_counter, 1, 4, zeros(4, np.int32)),
         (UninitializedReadError, r"atomically updates counter\[0\]")),
    Case("barrier-in-different-loop-iterations", "silent-wrong",
         launch(barrier_in_different_iterations, 1, 4, zeros(4)),
         (DivergentBarrierError, r"divergent barrier: 1 thread \(\(0, 0, 0\)\) wait at syncthreads\(\) on line \d+ "
                                 r"in the 1st iteration of its loop; 3 threads .* in the 2nd iteration")),
    Case("yield-in-a-kernel", "silent-wrong", launch(yields_a_value, 1, 1, zeros()),
         (KernelSourceError, r"yield in a kernel .*not supported: Yield"), cupyx=(yields_a_value, (zeros(),))),
    Case("return-a-value-from-a-kernel", "silent-wrong", launch(returns_a_value, 1, 1, zeros()),
         (KernelSourceError, r"`return` with a value from a kernel"), cupyx=(returns_a_value, (zeros(),))),
    Case("list-in-a-kernel", "silent-wrong", launch(builds_a_list, 1, 1, zeros()),
         (KernelSourceError, r"a list in a kernel"), cupyx=(builds_a_list, (zeros(),))),
    Case("dict-in-a-kernel", "silent-wrong", launch(builds_a_dict, 1, 1, zeros()),
         (KernelSourceError, r"a dict in a kernel"), cupyx=(builds_a_dict, (zeros(),))),
    Case("print-in-a-kernel", "silent-wrong", launch(prints, 1, 1, zeros(), 3),
         (KernelSourceError, r"a call of the Python function print"), cupyx=(prints, (zeros(), 3))),
    Case("kernel-calls-itself", "silent-wrong", launch(recurses, 1, 1, zeros(), 3),
         (KernelSourceError, r"calling the kernel 'recurses' from a kernel"), cupyx=(recurses, (zeros(), 3))),
    Case("recursive-device-function", "silent-wrong", launch(calls_a_recursive_helper, 1, 1, zeros(), 3),
         (KernelSourceError, r"device function 'countdown' calling itself.*recursive function is not supported"),
         cupyx=(calls_a_recursive_helper, (zeros(), 3))),
    Case("global-statement", "silent-wrong", launch(uses_global, 1, 1, zeros()),
         (KernelSourceError, r"global in a kernel"), cupyx=(uses_global, (zeros(),))),
    Case("import-in-a-kernel", "silent-wrong", launch(imports, 1, 1, zeros()),
         (KernelSourceError, r"import in a kernel"), cupyx=(imports, (zeros(),))),
    Case("for-over-an-array", "silent-wrong", launch(iterates_an_array, 1, 1, x8, zeros()),
         (KernelSourceError, r"for-loop is supported only for range iterator"),
         cupyx=(iterates_an_array, (x8, zeros()))),
    Case("lambda-in-a-kernel", "silent-wrong", launch(uses_a_lambda, 1, 1, x8, zeros()),
         (KernelSourceError, r"a lambda in a kernel"), cupyx=(uses_a_lambda, (x8, zeros()))),
    Case("chained-comparison", "silent-wrong", launch(chained_comparison, 1, 1, zeros(), 3),
         (KernelSourceError, r"comparison of 3 or more values"), cupyx=(chained_comparison, (zeros(), 3))),
    Case("chained-assignment", "silent-wrong", launch(chained_assignment, 1, 1, zeros()),
         (KernelSourceError, r"a chained assignment"), cupyx=(chained_assignment, (zeros(),))),
    Case("numpy-exp-instead-of-jit-exp", "silent-wrong", launch(calls_numpy_exp, 1, 1, x8, zeros()),
         (KernelSourceError, r"numpy.exp\(...\) in a kernel .*use jit.exp"), cupyx=(calls_numpy_exp, (x8, zeros()))),
    Case("plain-python-function-call", "silent-wrong", launch(calls_a_python_function, 1, 1, x8, zeros()),
         (KernelSourceError, r"Python function python_helper"), cupyx=(calls_a_python_function, (x8, zeros()))),
    Case("abs-builtin", "silent-wrong", launch(uses_abs, 1, 1, x8, zeros()),
         (KernelSourceError, r"Python function abs"), cupyx=(uses_abs, (x8, zeros()))),
    Case("concurrent-launch-from-a-second-thread", "silent-wrong", _second_thread_launch,
         check=lambda result: (
             None if result[0] is not None and re.search(r"from a second Python thread", str(result[0]))
             and result[1][0] == 1 else pytest.fail(f"not refused clearly: {result}"))),
    Case("last-launch-stats-after-a-refused-launch", "silent-wrong", _stats_after_refused_launch, check=equal(None)),
    Case("last-launch-stats-after-a-refused-kernel", "silent-wrong", _stats_after_refused_source, check=equal(None)),
    Case("shared-mem-over-the-card-limit", "silent-wrong",
         launch(dynamic_reverse, 1, 8, x8, zeros(), shared_mem=48 * 1024 + 4),
         (KernelLaunchError, r"shared_mem=49,156 bytes exceeds the 49,152 bytes")),
    *[Case(f"atomic-add-on-{dtype}", "silent-wrong",
           launch(global_atomic_add, 1, 2, zeros(1, dtype), np.ones(2, dtype)),
           (KernelSourceError, rf"atomic_add on an array of {dtype}: cupyx.jit's atomicAdd does not support"),
           cupyx=(global_atomic_add, (zeros(1, dtype), np.ones(2, dtype))))
      for dtype in ("int64", "int16", "uint8", "bool", "complex64")],
    Case("scalar-argument-too-wide", "silent-wrong", launch(needs_n, 1, 1, zeros(1, np.float64), 2**64),
         (KernelLaunchError, r"argument 'n' = 18446744073709551616 does not fit a 64-bit signed integer")),
    Case("scalar-argument-just-past-int64", "silent-wrong", launch(needs_n, 1, 1, zeros(1, np.float64), 2**63),
         (KernelLaunchError, r"argument 'n' = 9223372036854775808 does not fit")),
    Case("shared-memory-negative-size", "silent-wrong", launch(negative_shared_size, 1, 1, zeros()),
         (KernelSourceError, r"jit.shared_memory with a negative size .*greater than zero")),
    # ------------------------------------------------ hangs, now ended
    Case("while-true", "hang", with_limit(1000, launch(spins_forever, 1, 1, zeros())),
         (StepLimitError, WHERE.format("spins_forever", 0) + r": ran 1,000 loop iterations .*line \d+.*step_limit")),
    Case("grid-stride-loop-without-increment", "hang",
         with_limit(1000, launch(forgets_the_increment, 1, 4, x8, zeros(), 8)),
         (StepLimitError, r"infinite loop, or a spin-wait")),
    Case("spin-wait-on-a-global-flag", "hang", with_limit(1000, launch(waits_for_a_flag, 1, 2, zeros(1, i32), zeros())),
         (StepLimitError, WHERE.format("waits_for_a_flag", 0) + r".*spin-wait on a value another thread sets")),
    Case("spin-wait-on-a-shared-flag", "hang", with_limit(1000, launch(waits_for_a_shared_flag, 1, 2, zeros())),
         (StepLimitError, r"spin-wait")),
    Case("huge-grid", "hang", launch(scale, 2**31 - 1, 1024, x8, zeros(), 8),
         (KernelLaunchError, r"2,199,023,254,528 threads; the simulator runs every thread on the CPU .* refuses")),
    Case("large-grid-warns", "hang", _large_grid_warns,
         check=lambda messages: None if any("simulating 128 threads will take" in m for m in messages)
         else pytest.fail(str(messages))),
    Case("long-loop-within-the-default-limit", "false-alarm", _out(launch(long_serial_loop, 1, 1, zeros(1), 200_000), 0),
         check=equal([200_000])),
    # ------------------------------------------------ crashes, now clear errors
    Case("kernel-called-without-grid-and-block", "crash", _call_without_config,
         (KernelLaunchError, r"kernel 'scale' is launched with its grid and block sizes: scale\[grid, block\]\(x, out, n\)")),
    Case("scaled-add-threads-0", "crash", _threads_0,
         (ValueError, r"threads per block must be an int from 1 to 1024 .*got 0")),
    Case("zero-d-array-used-as-a-number", "crash", launch(zero_d_as_a_number, 1, 1, np.full((), 2.0), zeros()),
         (KernelError, r"the global array 'x' \(float64\[\]\) is used as a number .*x\[\(\)\]")),
    Case("shuffle-keyword-arguments", "crash", launch(shuffle_with_keywords, 1, 32, x32, zeros(32)),
         (KernelSourceError, r"jit.shfl_down_sync called with keyword argument 'mask'"),
         cupyx=(shuffle_with_keywords, (x32, zeros(32)))),
    # ------------------------------------------------ false alarms, now gone
    Case("half-warps-with-their-own-masks", "false-alarm",
         _out(launch(half_warps_with_own_masks, 1, 32, x32, zeros(32))), check=equal(x32.reshape(-1, 2)[:, ::-1].ravel())),
    Case("half-warps-at-two-shuffles", "false-alarm", _out(launch(half_warps_at_two_lines, 1, 32, x32, zeros(32))),
         check=equal(np.r_[np.arange(1, 16), 15, 16, np.arange(16, 31)].astype(np.float32))),
    Case("dynamic-buffer-declared-twice-counted-once", "false-alarm",
         _out(launch(two_dynamic_arrays_alias, 1, 8, zeros(), shared_mem=40_000)), check=equal(x8)),
    Case("dynamic-buffer-declared-in-a-loop", "false-alarm",
         _out(launch(dynamic_declared_in_a_loop, 1, 8, zeros(), shared_mem=32)), check=equal(np.ones(8, f32))),
    Case("unsigned-index-guarded-correctly", "false-alarm", _out(launch(left_neighbour_correct, 1, 8, x8, zeros(), 8), 1),
         check=equal(np.r_[0, x8[:-1]])),
    Case("uint32-plus-int64-argument", "false-alarm", _out(launch(unsigned_plus_int64_argument, 1, 1, zeros(1, np.int64), np.int64(2**40)), 0),
         check=equal([2**40])),
    Case("uint32-range-plus-threadIdx", "false-alarm", _out(launch(unsigned_range_loop, 1, 1, zeros(4))),
         check=equal(np.ones(4, f32))),
    Case("barrier-in-a-loop-every-thread-takes", "false-alarm", _out(launch(barrier_in_a_uniform_loop, 1, 8, x8, zeros())),
         check=equal(np.roll(x8, -3))),
    Case("atomic-add-on-uint64-and-float16", "false-alarm",
         lambda: (launch(global_atomic_add, 1, 4, zeros(1, np.uint64), np.ones(4, np.uint64))()[0],
                  launch(global_atomic_add, 1, 4, zeros(1, np.float16), np.ones(4, np.float16))()[0]),
         check=lambda r: np.testing.assert_array_equal([r[0][0], r[1][0]], [4, 4])),
    Case("zero-d-array-read-as-x[()]", "false-alarm", _out(launch(zero_d_read, 1, 1, np.full((), 2.5, f32), zeros())),
         check=lambda out: np.testing.assert_array_equal(out[0], 2.5)),
    Case("shuffle-width-numpy-int32-16", "false-alarm",
         _out(launch(shuffle_with_numpy_width, 1, 32, x32, zeros(32), np.int32(16)), 1),
         check=equal(np.r_[np.arange(1, 16), 15, np.arange(17, 32), 31].astype(np.float32))),
    Case("shared-mem-as-numpy-int64", "false-alarm",
         _out(launch(dynamic_reverse, 1, 8, x8, zeros(), shared_mem=np.int64(32))), check=equal(x8[::-1])),
    # ------------------------------------------------ messages, now right
    Case("shuffle-width-numpy-int32-12", "message", launch(shuffle_with_numpy_width, 1, 32, x32, zeros(32), np.int32(12)),
         (KernelError, r"width must be a power of two up to 32, got 12$")),
    Case("shuffle-up-by-minus-one", "message", launch(shuffle_up_by_minus_one, 1, 32, x32, zeros(32)),
         (KernelSourceError, r"jit.shfl_up_sync with a negative offset .*use shfl_down_sync"),
         cupyx=(shuffle_up_by_minus_one, (x32, zeros(32)))),
    Case("shuffle-up-by-a-negative-variable", "message", launch(shuffle_up_by_a_variable, 1, 32, x32, zeros(32), -1),
         (KernelError, r"shfl_up_sync on line \d+: its third argument \(the lane offset\) must be an unsigned int "
                       r"\(0 or more\); use shfl_down_sync .*got -1")),
    Case("barrier-reached-by-half-the-block", "message", launch(half_block_barrier, 1, 32, x32, zeros(32)),
         (DivergentBarrierError, r"divergent barrier: 16 threads .* wait at syncthreads\(\) on line \d+; 16 threads "
                                 r".* finished the kernel without reaching it")),
    Case("shared-memory-size-from-a-negative-constant", "message",
         launch(shared_size_from_a_negative_constant, 1, 1, zeros()),
         (KernelSourceError, r"thread \(0, 0, 0\): jit.shared_memory\(float32, -4\): the size is a number of elements "
                             r"> 0 .*greater than zero")),
    Case("shared-mem-negative", "message", launch(dynamic_reverse, 1, 8, x8, zeros(), shared_mem=np.int64(-8)),
         (KernelLaunchError, r"shared_mem is a byte count >= 0 \(an int\), got -8$")),
    Case("shared-mem-float", "message", launch(dynamic_reverse, 1, 8, x8, zeros(), shared_mem=32.0),
         (KernelLaunchError, r"shared_mem is a byte count >= 0 \(an int\), got 32.0$")),
    # ------------------------------------------------ more hostile kernels of each class
    Case("unsigned-guard-2d", "silent-wrong", launch(up_neighbour_2d, (1, 1), (4, 4), np.ones((4, 4), f32), np.zeros((4, 4), f32)),
         (OutOfBoundsError, r"out-of-bounds read x\[\(4294967295, 0\)\]")),
    Case("unsigned-guard-on-blockIdx", "silent-wrong", launch(previous_block, 2, 4, x8, zeros()),
         (OutOfBoundsError, r"kernel 'previous_block', block \(0, 0, 0\), thread \(0, 0, 0\): out-of-bounds read x\[\d+\]")),
    Case("unsigned-guard-on-a-shared-index", "silent-wrong", launch(shared_left_neighbour, 1, 8, x8, zeros()),
         (OutOfBoundsError, r"thread \(0, 0, 0\): out-of-bounds read s\[4294967295\]")),
    Case("numpy-int32-argument-plus-threadIdx", "silent-wrong", launch(int32_argument_plus_thread, 1, 4, zeros(), np.int32(2)),
         (KernelSourceError, r"mixing an unsigned uint32"), cupyx=(int32_argument_plus_thread, (zeros(), np.int32(2)))),
    Case("set-in-a-kernel", "silent-wrong", launch(builds_a_set, 1, 1, zeros()),
         (KernelSourceError, r"a set in a kernel"), cupyx=(builds_a_set, (zeros(),))),
    Case("list-comprehension", "silent-wrong", launch(list_comprehension, 1, 1, zeros()),
         (KernelSourceError, r"a list comprehension"), cupyx=(list_comprehension, (zeros(),))),
    Case("with-block", "silent-wrong", launch(uses_with, 1, 1, zeros(), 3),
         (KernelSourceError, r"with in a kernel"), cupyx=(uses_with, (zeros(), 3))),
    Case("raise", "silent-wrong", launch(raises, 1, 1, zeros(), 3),
         (KernelSourceError, r"raise in a kernel"), cupyx=(raises, (zeros(), 3))),
    Case("del", "silent-wrong", launch(deletes, 1, 1, zeros()),
         (KernelSourceError, r"del in a kernel"), cupyx=(deletes, (zeros(),))),
    Case("is-comparison", "silent-wrong", launch(compares_with_is, 1, 1, zeros(), 3),
         (KernelSourceError, r"the `is` operator"), cupyx=(compares_with_is, (zeros(), 3))),
    Case("in-comparison", "silent-wrong", launch(uses_in, 1, 1, zeros(), 3),
         (KernelSourceError, r"the `in` operator"), cupyx=(uses_in, (zeros(), 3))),
    Case("matmul-operator", "silent-wrong", launch(matrix_product_operator, 1, 1, x8, zeros()),
         (KernelSourceError, r"the @ operator"), cupyx=(matrix_product_operator, (x8, zeros()))),
    Case("for-else", "silent-wrong", launch(for_else, 1, 1, zeros(), 3),
         (KernelSourceError, r"for ... else"), cupyx=(for_else, (zeros(), 3))),
    Case("while-else", "silent-wrong", launch(while_else, 1, 1, zeros(), 3),
         (KernelSourceError, r"while ... else"), cupyx=(while_else, (zeros(), 3))),
    Case("nested-def", "silent-wrong", launch(nested_def, 1, 1, zeros()),
         (KernelSourceError, r"a nested def"), cupyx=(nested_def, (zeros(),))),
    Case("walrus", "silent-wrong", launch(walrus, 1, 1, zeros(), 3),
         (KernelSourceError, r"the := operator"), cupyx=(walrus, (zeros(), 3))),
    Case("star-unpacking", "silent-wrong", launch(star_unpacking, 1, 1, x8, zeros()),
         (KernelSourceError, r"\*-unpacking"), cupyx=(star_unpacking, (x8, zeros()))),
    Case("closure-array", "silent-wrong", launch(reads_closure_array, 1, 1, zeros()),
         (KernelSourceError, r"the module-level array 'table'")),
    Case("shared-atomic-add-int8", "silent-wrong", launch(shared_atomic_int8, 1, 4, zeros()),
         (KernelSourceError, r"atomic_add on an array of int8")),
    Case("uninitialised-bool-negated", "silent-wrong", launch(uninitialised_negated_flag, 1, 8, zeros()),
         (UninitializedReadError, r"reads flags\[0\].*decides a branch")),
    Case("uninitialised-as-an-index", "silent-wrong", launch(uninitialised_as_an_index, 1, 8, x8, zeros()),
         (UninitializedReadError, r"reads slots\[0\].*used as an index")),
    Case("uninitialised-through-exp", "silent-wrong", launch(uninitialised_through_exp, 1, 8, zeros()),
         (UninitializedReadError, r"reads s\[0\]")),
    Case("uninitialised-through-min", "silent-wrong", launch(uninitialised_through_min, 1, 8, x8, zeros()),
         (UninitializedReadError, r"reads s\[0\]")),
    Case("uninitialised-int-stored-to-global", "silent-wrong", launch(uninitialised_int_to_global, 1, 8, zeros(8, np.int32)),
         (UninitializedReadError, r"reads s\[0\].*stored into global memory")),
    Case("uninitialised-through-a-shuffle", "silent-wrong", launch(uninitialised_through_a_shuffle, 1, 32, zeros(32)),
         (UninitializedReadError, r"reads s\[1\].*stored into global memory")),  # lane 0 received lane 1's value
    Case("infinite-loop-around-a-barrier", "hang", with_limit(1000, launch(barrier_forever, 1, 4, zeros())),
         (StepLimitError, r"ran 1,000 loop iterations")),
    Case("infinite-loop-around-a-shuffle", "hang", with_limit(1000, launch(shuffle_forever, 1, 32, x32, zeros(32))),
         (StepLimitError, r"ran 1,000 loop iterations")),
    Case("range-of-a-trillion", "hang", with_limit(1000, launch(huge_range, 1, 1, zeros())),
         (StepLimitError, r"ran 1,000 loop iterations")),
    Case("barrier-loop-waiting-for-a-flag", "hang", with_limit(1000, launch(barrier_waits_for_a_flag, 1, 4, zeros(1, i32), zeros())),
         (StepLimitError, r"spin-wait")),
    Case("step-limit-must-be-positive", "message", lambda: limits.step_limit(0).__enter__(),
         (ValueError, r"step_limit: the number of loop iterations is a positive int, got 0")),
    Case("fractional-shared-size", "crash", launch(fractional_shared_size, 1, 1, zeros()),
         (KernelError, r"jit.shared_memory size must be an integer known when the kernel is compiled, got 2.5")),
    Case("grid-of-four-dimensions", "crash", launch(grid_of_four_dimensions, 1, 1, zeros()),
         (KernelError, r"jit.grid\(ndim\) takes ndim = 1, 2 or 3, got 4")),
    Case("float-index", "crash", launch(float_index, 1, 2, x8, zeros()),
         (KernelError, r"global array 'x' \(float32\[8\]\) was indexed with .*no float indices")),
    Case("two-indices-on-a-1d-array", "crash", launch(two_indices_on_1d, 1, 1, x8, zeros()),
         (KernelError, r"is 1-D but was indexed with 2 indices")),
    Case("slice-in-a-kernel", "crash", launch(slices, 1, 1, x8, zeros()),
         (KernelError, r"one element at a time")),
    Case("atomic-add-on-a-number", "crash", launch(atomic_on_a_number, 1, 1, zeros()),
         (KernelError, r"jit.atomic_add needs a kernel argument array or a shared array .*got int")),
    Case("shuffle-with-a-float-mask", "crash", launch(shuffle_with_a_float_mask, 1, 32, x32, zeros(32)),
         (KernelError, r"the mask is an unsigned 32-bit int .*got 0.5")),
    Case("kernel-called-with-args-not-a-tuple", "crash", lambda: scale(1, 8, zeros()),
         (KernelLaunchError, r"is launched with its grid and block sizes")),
    Case("kernel-subscripted-with-one-size", "crash", lambda: scale[8](x8, zeros(), 8),
         (KernelLaunchError, r"launch as kernel\[grid, block\]\(\*args\) with two sizes")),
    Case("grid-size-shown-as-written", "message", launch(scale, (np.int64(0), 1), 8, x8, zeros(), 8),
         (KernelLaunchError, r"the grid size must be a positive int .*got \(0, 1\); launch as")),
    Case("block-of-2048-threads", "crash", launch(scale, 1, 2048, x8, zeros(), 8),
         (KernelLaunchError, r"exceeds CUDA's limit of 1024 on axis x")),
    Case("grid-stride-with-numpy-int64-n", "false-alarm", _out(launch(grid_stride_with_int64_n, 2, 4, x8, zeros(), np.int64(8)), 1),
         check=equal(x8 + 1)),
    Case("broadcast-from-lane-0-with-uint32-arguments", "false-alarm", _out(launch(broadcast_from_lane_0, 1, 32, x32, zeros(32))),
         check=equal(np.zeros(32, f32))),
    Case("unsigned-value-added-to-an-int32-counter", "false-alarm",
         _out(launch(unsigned_value_into_an_int32_atomic, 1, 8, zeros(1, np.int32)), 0), check=equal([28])),
    Case("barrier-under-a-block-uniform-branch", "false-alarm",
         _out(launch(barrier_under_a_block_uniform_branch, 2, 8, x8, zeros())), check=equal(x8[::-1])),
    Case("nested-loops-with-barriers", "false-alarm", _out(launch(nested_loops_with_barriers, 1, 4, zeros(4, np.int32))),
         check=equal([6, 6, 6, 6])),
    Case("compare-signed-loop-counter-with-threadIdx", "false-alarm",
         _out(launch(loop_variable_below_threadIdx, 1, 4, zeros(4), 4), 0), check=equal([0, 1, 2, 3])),
    Case("unsigned-range-counter-plus-threadIdx", "false-alarm", _out(launch(block_range_plus_thread, 1, 2, zeros(4))),
         check=equal([1, 1, 1, 0])),
    Case("divergent-barrier-in-a-2d-block", "message", launch(divergent_in_2d, 1, (2, 2), np.zeros((2, 2), f32)),
         (DivergentBarrierError, r"2 threads \(\(0, 0, 0\), \(1, 0, 0\)\) wait at syncthreads\(\) on line \d+; 2 threads "
                                 r"\(\(0, 1, 0\), \(1, 1, 0\)\) finished the kernel")),
    Case("infinite-loop-in-a-device-function", "hang", with_limit(1000, launch(calls_a_spinning_helper, 1, 1, zeros())),
         (StepLimitError, WHERE.format("calls_a_spinning_helper", 0) + r": ran 1,000 loop iterations")),
    Case("print-in-a-device-function", "silent-wrong", launch(calls_a_printing_helper, 1, 1, zeros()),
         (KernelSourceError, r"kernel 'calls_a_printing_helper', line \d+: a call of the Python function print"),
         cupyx=(calls_a_printing_helper, (zeros(),))),
    Case("module-level-array-in-a-device-function", "silent-wrong",
         launch(calls_a_helper_reading_a_module_array, 1, 1, zeros()), (KernelSourceError, r"module-level array 'TABLE'")),
    Case("device-function-with-a-bounded-loop", "false-alarm", _out(launch(calls_a_looping_helper, 1, 4, zeros(4))),
         check=equal(np.full(4, 6, f32))),
    Case("shared-memory-is-fresh-for-each-block", "silent-wrong", launch(only_block_zero_fills, 2, 2, zeros(4)),
         (UninitializedReadError, r"kernel 'only_block_zero_fills', block \(1, 0, 0\), thread \(0, 0, 0\): reads s\[0\]")),
    Case("race-before-a-barrier-every-thread-reaches", "message", launch(race_before_a_full_barrier, 1, 8, zeros()),
         (SharedMemoryRaceError, WHERE.format("race_before_a_full_barrier", 1) + r": shared-memory data race on s\[0\]")),
    Case("read-before-a-neighbour-writes-is-a-race", "message", launch(reads_before_its_neighbour_writes, 1, 8, x8, zeros()),
         (SharedMemoryRaceError, WHERE.format("reads_before_its_neighbour_writes", 1) + r": shared-memory data race on "
                                 r"s\[1\] .*thread \(0, 0, 0\) read it")),
    Case("overlapping-shuffle-masks", "message", launch(overlapping_masks, 1, 32, x32, zeros(32)),
         (KernelError, r"warp 0: lanes of one warp meet at shuffles with overlapping masks")),
    Case("shuffle-reads-a-lane-of-the-other-group", "message", launch(reads_across_the_groups, 1, 32, x32, zeros(32)),
         (KernelError, r"lane 0 \(thread \(0, 0, 0\)\) reads lane 16 through shfl_xor_sync .*not in mask 0xffff")),
]

CLASSES = ("silent-wrong", "crash", "hang", "false-alarm", "message")


def test_the_hostile_set_is_large_and_classified():
    assert len(CASES) >= 100
    assert {case.klass for case in CASES} == set(CLASSES)
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[f"{case.klass}:{case.id}" for case in CASES])
def test_hostile_kernel(case):
    if case.raises is not None:
        error, pattern = case.raises
        with pytest.raises(error) as caught:
            case.run()
        message = str(caught.value)
        assert re.search(pattern, message, re.S), f"message does not match {pattern!r}:\n{message}"
        assert not re.search(r"GlobalArray|SharedArray|Poison|_minigrad|Traceback", message), message
        assert jit.last_launch_stats() is None, "a failed launch must leave no counters"
    else:
        case.check(case.run())


def _cupyx_available() -> bool:
    for module in ("cupy", "nvidia.cuda_nvrtc", "nvidia.cuda_runtime"):
        try:
            importlib.import_module(module)
        except ImportError:
            return False
    return True


REFUSED = [case for case in CASES if case.cupyx is not None]


@pytest.mark.skipif(not _cupyx_available(), reason='needs the gpu-check extra: pip install -e ".[gpu-check]"')
@pytest.mark.parametrize("case", REFUSED, ids=[case.id for case in REFUSED])
def test_cupyx_refuses_it_too(case):
    """Each refusal of the simulator is a refusal of cupyx.jit's transpiler (the ground truth)."""
    from minigrad.gpu import compile_check

    kernel, args = case.cupyx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # cupyx.jit's refusals are TypeError/ValueError/NotImplementedError, or a KeyError for an operator it
        # has no rule for (is, in, @)
        with pytest.raises((TypeError, ValueError, NotImplementedError, OverflowError, KeyError, KernelError)):
            compile_check.cuda_source(kernel, *args)


@pytest.mark.skipif(not _cupyx_available(), reason='needs the gpu-check extra: pip install -e ".[gpu-check]"')
def test_what_the_simulator_models_cupyx_accepts_as_the_simulator_runs_it():
    """The unsigned guard transpiles (the GPU runs it and writes element 4294967295); a module-level array is
    frozen into the code as a constant (hence the simulator's refusal); two dynamic arrays alias one buffer."""
    from minigrad.gpu import compile_check

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        guard = compile_check.cuda_source(left_neighbour_guarded, x8, zeros(), 8).code
        frozen = compile_check.cuda_source(reads_module_array, zeros(4)).code
        alias = compile_check.cuda_source(two_dynamic_arrays_alias, zeros()).code
    assert "unsigned int i = (threadIdx.x - 1u)" in guard
    assert "TABLE" not in frozen and "out[" in frozen
    assert len(re.findall(r"extern\s+__shared__", alias)) == 2
