"""The race report says which fix is needed: two phases without a barrier, or two partners within one step."""

import numpy as np
import pytest

from minigrad.gpu import SharedMemoryRaceError, jit

B = 64


@jit.rawkernel()
def tree_without_barriers_between_steps(x, out):
    partial = jit.shared_memory(np.float32, B)
    tid = jit.threadIdx.x
    partial[tid] = x[tid]
    jit.syncthreads()
    step = np.uint32(B // 2)
    while step > 0:
        if tid < step:
            partial[tid] += partial[tid + step]
        step = step // 2
    if tid == 0:
        out[0] = partial[0]


@jit.rawkernel()
def tree_with_every_thread_active(x, out):
    partial = jit.shared_memory(np.float32, 2 * B)
    tid = jit.threadIdx.x
    partial[tid] = x[tid]
    partial[tid + B] = np.float32(0)
    jit.syncthreads()
    step = np.uint32(B // 2)
    while step > 0:
        partial[tid] += partial[tid + step]
        jit.syncthreads()
        step = step // 2
    if tid == 0:
        out[0] = partial[0]


@jit.rawkernel()
def tree_without_the_barrier_after_the_store(x, out):
    partial = jit.shared_memory(np.float32, B)
    tid = jit.threadIdx.x
    partial[tid] = x[tid]
    step = np.uint32(B // 2)
    while step > 0:
        if tid < step:
            partial[tid] += partial[tid + step]
        jit.syncthreads()
        step = step // 2
    if tid == 0:
        out[0] = partial[0]


def _report(kernel) -> str:
    with pytest.raises(SharedMemoryRaceError) as caught:
        kernel[1, B](np.ones(B, np.float32), np.zeros(1, np.float32))
    return str(caught.value)


def test_a_missing_barrier_between_two_steps_of_a_loop_is_between_phases():
    message = _report(tree_without_barriers_between_steps)
    assert "no barrier between the phases" in message and "partner" not in message


def test_a_slot_read_and_written_by_partners_in_one_step_is_within_the_phase():
    message = _report(tree_with_every_thread_active)
    assert "your partner index read this slot in the same phase" in message
    assert "no barrier between the phases" not in message


def test_a_missing_barrier_between_two_lines_is_between_phases():
    message = _report(tree_without_the_barrier_after_the_store)
    assert "no barrier between the phases" in message and "jit.syncthreads()" in message


@jit.rawkernel()
def every_lane_writes_the_warp_slot(x, out):
    totals = jit.shared_memory(np.float32, 2)
    warp = jit.threadIdx.x // 32
    totals[warp] = x[jit.threadIdx.x]
    jit.syncthreads()
    if jit.threadIdx.x == 0:
        out[0] = totals[0] + totals[1]


def test_two_writers_of_one_slot_in_one_step_are_told_only_one_may_write():
    message = _report(every_lane_writes_the_warp_slot)
    assert "your partner index wrote this slot in the same phase" in message
    assert "only one thread may write a slot in a step" in message
