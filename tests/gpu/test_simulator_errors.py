"""GPU bugs become errors that name kernel, block, thread and index - and correct kernels raise none."""

import re

import numpy as np
import pytest
import sample_kernels as k

from minigrad.gpu import (
    DivergentBarrierError,
    KernelError,
    KernelLaunchError,
    OutOfBoundsError,
    SharedMemoryRaceError,
    jit,
)


def _line_of(kernel, text: str) -> int:
    """The file line number of the first line of ``kernel``'s source containing ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(kernel.func)
    return first + next(i for i, line in enumerate(lines) if text in line)


# ---------------------------------------------------------------- races


def test_reduction_without_any_barrier_is_a_race():
    x = np.ones(512, dtype=np.float32)
    with pytest.raises(SharedMemoryRaceError) as caught:
        k.block_sum_without_barriers[2, 256](x, np.zeros(1, np.float32), 512)
    message = str(caught.value)
    assert message.startswith("kernel 'block_sum_without_barriers', block (0, 0, 0), thread (1, 0, 0): ")
    assert "shared-memory data race on partial[1] (shared float32[256])" in message
    write_line = _line_of(k.block_sum_without_barriers, "partial[tid] = x[i]")
    read_line = _line_of(k.block_sum_without_barriers, "partial[tid] += partial[tid + step]")
    assert f"this thread writes it on line {write_line}" in message
    assert f"thread (0, 0, 0) read it on line {read_line}" in message
    assert "jit.syncthreads()" in message


def test_reduction_missing_only_the_barrier_in_its_loop_is_a_race():
    x = np.ones(256, dtype=np.float32)
    with pytest.raises(SharedMemoryRaceError, match=r"kernel 'block_sum_missing_loop_barrier', block \(0, 0, 0\)"):
        k.block_sum_missing_loop_barrier[1, 256](x, np.zeros(1, np.float32), 256)


def test_two_threads_writing_one_shared_address_is_a_race():
    with pytest.raises(SharedMemoryRaceError) as caught:
        k.all_write_one_address[1, 4](np.zeros(1, np.float32))
    assert "thread (1, 0, 0): shared-memory data race on slot[0]" in str(caught.value)
    assert "thread (0, 0, 0) wrote it" in str(caught.value)


def test_plain_read_of_an_address_another_thread_updates_atomically_is_a_race():
    @jit.rawkernel()
    def peek_at_counter(out):
        counter = jit.shared_memory(np.int32, 1)
        if jit.threadIdx.x == 0:
            counter[0] = 0
        jit.syncthreads()
        jit.atomic_add(counter, 0, 1)
        out[jit.threadIdx.x] = counter[0]

    with pytest.raises(SharedMemoryRaceError, match=r"thread \(1, 0, 0\).*this thread atomically updates it on line \d+, and thread \(0, 0, 0\) read it"):
        peek_at_counter[1, 2](np.zeros(2, np.int32))


@pytest.mark.parametrize(
    "launch",
    [
        lambda: k.block_sum[4, 256](np.ones(1000, np.float32), np.zeros(1, np.float32), 1000),
        lambda: k.tiled_matmul[(2, 2), (16, 16)](
            np.ones((20, 24), np.float32), np.ones((24, 18), np.float32), np.zeros((20, 18), np.float32), 20, 24, 18
        ),
        lambda: k.histogram[4, 64](np.arange(200, dtype=np.int32) % 16, np.zeros(16, np.int32), 200, 16),
        lambda: k.copy_through_shared[4, 32](np.ones(100, np.float32), np.zeros(100, np.float32), np.zeros(1, np.int32), 100),
        lambda: k.reverse_dynamic[2, 32](np.ones(64, np.float32), np.zeros(64, np.float32), 64, shared_mem=128),
    ],
    ids=["block_sum", "tiled_matmul", "histogram", "copy_through_shared", "reverse_dynamic"],
)
def test_correct_kernels_raise_nothing(launch):
    launch()


# ---------------------------------------------------------------- out of bounds


def test_out_of_bounds_global_access_names_kernel_block_thread_index_and_line():
    n = 1000
    x, y, out = (np.ones(n, np.float32) for _ in range(3))
    with pytest.raises(OutOfBoundsError) as caught:
        k.add_unguarded[(n + 127) // 128, 128](x, y, out, n)
    message = str(caught.value)
    line = _line_of(k.add_unguarded, "out[i] = x[i] + y[i]")
    # thread 104 of block 7 is global index 7 * 128 + 104 = 1000, the first past the end
    assert message.startswith(
        f"kernel 'add_unguarded', block (7, 0, 0), thread (104, 0, 0): out-of-bounds read x[1000] (line {line})"
    )
    assert "shape (1000,)" in message and "0..999" in message and "if i < n:" in message


def test_out_of_bounds_global_write_is_reported_as_a_write():
    @jit.rawkernel()
    def fill_one_too_many(out, n):
        i = jit.grid(1)
        if i <= n:
            out[i] = np.float32(1)

    with pytest.raises(OutOfBoundsError, match=r"block \(1, 0, 0\), thread \(2, 0, 0\): out-of-bounds write out\[10\]"):
        fill_one_too_many[2, 8](np.zeros(10, np.float32), 10)


def test_index_below_zero_wraps_as_on_a_gpu_and_is_out_of_bounds_not_counted_from_the_end():
    @jit.rawkernel()
    def left_neighbour(x, out, n):
        i = jit.grid(1)
        if i < n:
            out[i] = x[i - 1]

    with pytest.raises(OutOfBoundsError, match=r"thread \(0, 0, 0\): out-of-bounds read x\[4294967295\]"):
        left_neighbour[1, 4](np.ones(4, np.float32), np.zeros(4, np.float32), 4)


def test_out_of_bounds_2d_access_names_the_axis():
    @jit.rawkernel()
    def transpose_wrong(x, out, rows, cols):
        col, row = jit.grid(2)
        if row < rows and col < cols:
            out[row, col] = x[row, col]

    with pytest.raises(OutOfBoundsError, match=r"out-of-bounds write out\[\(0, 3\)\].*axis 1 takes indices 0\.\.2"):
        transpose_wrong[1, (4, 3)](np.ones((3, 4), np.float32), np.zeros((4, 3), np.float32), 3, 4)


def test_out_of_bounds_shared_read_names_the_shared_array():
    with pytest.raises(OutOfBoundsError) as caught:
        k.shift_left_shared[2, 64](np.ones(128, np.float32), np.zeros(128, np.float32), 128)
    line = _line_of(k.shift_left_shared, "out[i] = staged[tid + 1]")
    assert str(caught.value).startswith(
        f"kernel 'shift_left_shared', block (0, 0, 0), thread (63, 0, 0): out-of-bounds read staged[64] (line {line}): "
        "shared array 'staged' (float32[64]) holds 64 elements (indices 0..63)"
    )


def test_out_of_bounds_atomic_is_reported():
    @jit.rawkernel()
    def count_past_the_end(counts):
        jit.atomic_add(counts, jit.threadIdx.x, 1)

    with pytest.raises(OutOfBoundsError, match=r"thread \(3, 0, 0\): out-of-bounds atomic_add on counts\[3\]"):
        count_past_the_end[1, 4](np.zeros(3, np.int32))


# ---------------------------------------------------------------- divergent barriers


def test_barrier_inside_a_branch_only_half_the_block_takes():
    with pytest.raises(DivergentBarrierError) as caught:
        k.barrier_in_branch[1, 64](np.ones(64, np.float32), np.zeros(64, np.float32), 64)
    line = _line_of(k.barrier_in_branch, "jit.syncthreads()")
    message = str(caught.value)
    assert message.startswith("kernel 'barrier_in_branch', block (0, 0, 0): divergent barrier: ")
    assert f"32 threads ((0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0) and 28 more) wait at syncthreads() on line {line}" in message
    assert "32 threads ((32, 0, 0)" in message and "finished the kernel without reaching it" in message


def test_early_return_before_a_barrier_in_the_last_block():
    with pytest.raises(DivergentBarrierError, match=r"block \(1, 0, 0\): divergent barrier: 36 threads .* 28 threads"):
        k.early_return_before_barrier[2, 64](np.ones(100, np.float32), np.zeros(100, np.float32), 100)


def test_threads_waiting_at_two_different_barriers():
    @jit.rawkernel()
    def two_barriers(out):
        if jit.threadIdx.x % 2 == 0:
            jit.syncthreads()
        else:
            jit.syncthreads()
        out[jit.threadIdx.x] = 1

    with pytest.raises(DivergentBarrierError, match=r"2 threads .* on line \d+; 2 threads .* on line \d+\."):
        two_barriers[1, 4](np.zeros(4, np.int32))


# ---------------------------------------------------------------- other kernel mistakes


def test_python_error_inside_a_kernel_names_where_it_happened():
    @jit.rawkernel()
    def divide(x, out):
        i = jit.threadIdx.x
        out[i] = 1 // int(x[i])

    with pytest.raises(KernelError, match=r"kernel 'divide', block \(0, 0, 0\), thread \(2, 0, 0\): ZeroDivisionError on line \d+"):
        divide[1, 4](np.array([1, 1, 0, 1]), np.zeros(4, np.int64))


def test_slicing_in_a_kernel_is_explained():
    @jit.rawkernel()
    def take_slice(x, out):
        out[0] = x[0:2]

    with pytest.raises(KernelError, match=r"global array 'x' \(float32\[4\]\) was indexed with slice\(0, 2, None\)"):
        take_slice[1, 1](np.ones(4, np.float32), np.zeros(1, np.float32))


def test_builtins_outside_a_kernel_explain_the_launch():
    with pytest.raises(KernelError, match=re.escape("jit.threadIdx only has a value inside a running kernel")):
        jit.threadIdx.x


def test_syncthreads_not_written_as_a_statement():
    @jit.rawkernel()
    def barrier_in_expression(out):
        out[0] = jit.syncthreads() or 1

    with pytest.raises(KernelError, match="must be a statement of its own"):
        barrier_in_expression[1, 2](np.zeros(1, np.int32))


# ---------------------------------------------------------------- launches


@pytest.mark.parametrize(
    "config, pattern",
    [
        ((1,), r"launch as kernel\[grid, block\]\(\*args\) with two sizes"),
        ((0, 32), r"the grid size must be a positive int"),
        ((1, (32, 32, 2)), r"has 2048 threads; CUDA allows at most 1024 per block"),
        ((1, (1, 1, 65)), r"exceeds CUDA's limit of 64 on axis z"),
        (((1, 1, 1, 1), 32), r"tuple of 1 to 3 positive ints"),
        ((1.5, 32), r"positive int"),
    ],
)
def test_bad_launch_configurations(config, pattern):
    x = np.ones(4, np.float32)
    with pytest.raises(KernelLaunchError, match=r"kernel 'add': .*" + pattern):
        k.add[config](x, x, x, 4)


def test_wrong_number_of_arguments():
    x = np.ones(4, np.float32)
    with pytest.raises(KernelLaunchError, match=r"kernel 'add' takes 4 arguments \(x, y, out, n\), got 3"):
        k.add[1, 4](x, x, 4)


def test_unsupported_argument_is_named():
    x = np.ones(4, np.float32)
    with pytest.raises(KernelLaunchError, match=r"kernel 'add': argument 'out' is a builtins.list; pass a NumPy array"):
        k.add[1, 4](x, x, [0.0] * 4, 4)


def test_tensor_argument_gets_a_hint():
    import minigrad.tensor as mt

    x = np.ones(4, np.float32)
    with pytest.raises(KernelLaunchError, match=r"argument 'y' is a minigrad\..*Tensor; pass its array"):
        k.add[1, 4](x, mt.tensor(x), x, 4)


def test_object_arrays_are_refused():
    x = np.ones(4, np.float32)
    with pytest.raises(KernelLaunchError, match=r"argument 'x' has dtype object"):
        k.add[1, 4](np.array([None] * 4), x, x, 4)


def test_mixing_host_and_device_arrays_is_refused():
    class FakeCupyArray:  # what the launcher checks: a cupy-module type with a CUDA array interface
        __module__ = "cupy._core.core"
        __cuda_array_interface__ = {}

    x = np.ones(4, np.float32)
    with pytest.raises(KernelLaunchError, match=r"argument 'x' is a NumPy array .* but 'out' is a CuPy array"):
        k.add[1, 4](x, x, FakeCupyArray(), 4)


def test_dynamic_shared_memory_without_shared_mem_is_explained():
    with pytest.raises(KernelError, match=r"dynamic shared memory, but the launch gave 0 bytes.*shared_mem=NBYTES"):
        k.reverse_dynamic[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32), 32)


def test_launching_a_kernel_from_inside_a_kernel_is_refused():
    @jit.rawkernel()
    def launches_another(x):
        k.add[1, 1](x, x, x, 1)

    x = np.ones(1, np.float32)
    with pytest.raises(KernelError, match=r"kernel 'add' was launched while kernel 'launches_another' is running"):
        launches_another[1, 1](x)


def test_a_failed_launch_leaves_no_counters():
    x = np.ones(4, np.float32)
    k.add[1, 4](x, x, x, 4)
    assert jit.last_launch_stats() is not None
    with pytest.raises(OutOfBoundsError):
        k.add_unguarded[1, 8](x, x, x, 4)
    assert jit.last_launch_stats() is None


def test_device_functions_are_called_from_kernels_not_launched():
    with pytest.raises(KernelLaunchError, match=r"device function 'relu' cannot be launched with \[grid, block\]"):
        k.relu[1, 1](np.float32(1))
    with pytest.raises(KernelLaunchError, match=r"device function 'relu' can only be called from inside a kernel"):
        k.relu(np.float32(1))


def test_more_shared_memory_than_a_block_may_have():
    @jit.rawkernel()
    def big_tiles(out):
        a = jit.shared_memory(np.float32, 8192)
        b = jit.shared_memory(np.float32, 8192)
        a[0] = np.float32(0)
        b[0] = np.float32(0)
        out[0] = a[0]

    with pytest.raises(KernelError, match=r"shared memory of 65,536 bytes per block .* exceeds CUDA's 49,152 bytes"):
        big_tiles[1, 1](np.zeros(1, np.float32))


def test_the_traceback_ends_at_the_learners_line_in_a_device_function():
    import traceback

    @jit.rawkernel(device=True)
    def next_element(x, i):
        return x[i + 1]

    @jit.rawkernel()
    def shift(x, out):
        out[jit.threadIdx.x] = next_element(x, jit.threadIdx.x)

    with pytest.raises(OutOfBoundsError) as caught:
        shift[1, 4](np.zeros(4, np.float32), np.zeros(4, np.float32))
    last = traceback.extract_tb(caught.value.__traceback__)[-1]
    assert (last.filename, last.name, last.line) == (__file__, "next_element", "return x[i + 1]")
    assert f"out-of-bounds read x[4] (line {last.lineno})" in str(caught.value)
