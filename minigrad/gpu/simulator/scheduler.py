"""The kernel simulator's scheduler: every thread of every block, barrier to barrier.

A launch ``kernel[grid, block](*args)`` with NumPy arrays runs here. Blocks
run one after another (on a GPU they run in any order, and a correct kernel
cannot tell). Within a block:

- a kernel without ``syncthreads()`` is called once per thread;
- a kernel with barriers is a generator function (see ``barriers.py``):
  the scheduler creates one generator per thread, then repeatedly advances
  every waiting thread up to its next barrier. When all of them stop at the
  same barrier, the barrier is passed (shared-memory race records are
  cleared) and the next round starts; when all have finished, the block is
  done. If some threads stop at a barrier while others finish or stop at a
  different barrier, that is a divergent barrier - a hang or undefined
  behaviour on a GPU - and the simulator raises
  :class:`DivergentBarrierError`. Warp shuffles pause a thread the same way
  until every thread of the block has stopped; then each warp exchanges its
  values (``warps.py``) and its threads run on.

Threads are visited in linear order (x fastest, then y, then z), so a racy
kernel gives one fixed answer here; the race detector still reports the
race, since a GPU gives no such guarantee.

Cost and scaling: time is linear in the number of instrumented element
accesses (every global/shared read or write, a few hundred nanoseconds to
about a microsecond each with its checks) plus a small cost per thread and
per barrier round. CPU time measured on this project's 2-core machine
(wall time is higher when the machine is shared):

- 64x64 float32 tiled matmul, 16x16 tiles: 4,096 threads, ~0.6 M accesses,
  0.7 s; it grows as n^3 (128x128: 5.4 s, 32x32: 0.1 s);
- 4,096-element shared-memory tree reduction (16 blocks of 256): 0.07 s,
  linear in n (16,384: 0.26 s);
- elementwise add of 100,000 elements: 0.17 s (about 1.7 us per thread).

So keep simulated problems to thousands or tens of thousands of threads.

Not simulated: races in *global* memory (only shared memory is checked),
warps executing in lockstep (warp shuffles are exact meeting points, see
``warps.py``, but "warp-synchronous" shared-memory code that relies on
lockstep without a barrier is reported as a race), and C integer types -
indices are Python ints (``threadIdx.x`` is an unsigned 32-bit int on a GPU,
so ``threadIdx.x - 1`` wraps there and is -1 here; both are out of bounds)
and scalar arguments are passed as given. Array elements keep their NumPy
dtype. The compile check (:mod:`minigrad.gpu.compile_check`) catches what
cupyx.jit's typing refuses.
"""

from __future__ import annotations

import os
import time
import traceback

import numpy as np

from minigrad.gpu.errors import DivergentBarrierError, KernelError, where
from minigrad.gpu.simulator.counters import LaunchStats
from minigrad.gpu.simulator.arrays import BlockMemory, GlobalArray
from minigrad.gpu.simulator.threads import CURRENT
from minigrad.gpu.simulator.warps import exchange

_HERE = os.path.dirname(os.path.abspath(__file__))
_INTERNALS = {  # the simulator's own files, whose frames a learner's traceback does not need
    os.path.join(_HERE, name) for name in os.listdir(_HERE) if name.endswith(".py")
}
_last_stats: LaunchStats | None = None


def last_launch_stats() -> LaunchStats | None:
    """The counters of the most recent simulated launch (None before any, or after a launch on a GPU)."""
    return _last_stats


def forget_last_stats() -> None:
    """A GPU launch has no counters: clear them so they are not mistaken for its own."""
    global _last_stats
    _last_stats = None


def refuse_nested_launch(name: str) -> None:
    """A kernel cannot launch another (no dynamic parallelism here); the simulator runs one launch at a time."""
    if CURRENT.kernel is not None:
        raise KernelError(
            f"kernel '{name}' was launched while kernel '{CURRENT.kernel}' is running on the simulator; "
            f"launch kernels one after another from the host (the simulator runs one launch at a time)"
        )


def simulate(name: str, program, barriers: int, parameters, grid, block, args, shared_mem: int) -> LaunchStats:
    """Run ``program`` for every thread of the launch; return its counters (also kept for ``last_launch_stats``)."""
    global _last_stats
    refuse_nested_launch(name)
    _last_stats = None  # a failed launch leaves no counters behind
    stats = LaunchStats(kernel=name, grid=grid, block=block)
    args = tuple(
        GlobalArray(value, parameter, stats) if isinstance(value, np.ndarray) else value
        for parameter, value in zip(parameters, args)
    )
    threads = [(x, y, z) for z in range(block[2]) for y in range(block[1]) for x in range(block[0])]
    run_block = _run_block_with_barriers if barriers else _run_block
    started = time.perf_counter()
    CURRENT.begin_launch(name, grid, block, stats)
    try:
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    memory = BlockMemory(stats, shared_mem)
                    CURRENT.enter_block((bx, by, bz), memory)
                    run_block(program, args, threads, stats, memory)
                    memory.finish()  # the block's sectors and bank conflicts (sectors.py)
                    stats.blocks += 1
                    stats.threads_launched += len(threads)
    except KernelError as error:
        raise error.with_traceback(_ending_in_kernel(error.__traceback__, program)) from None
    except Exception as error:
        error = error.with_traceback(_ending_in_kernel(error.__traceback__, program))
        raise _located(error, program) from error
    finally:
        CURRENT.end_launch()
    stats.seconds = time.perf_counter() - started
    _last_stats = stats
    return stats


def _run_block(program, args, threads, stats, memory) -> None:
    enter = CURRENT.enter_thread
    for linear, thread in enumerate(threads):
        enter(thread, linear)
        program(*args)


def _run_block_with_barriers(program, args, threads, stats, memory) -> None:
    enter = CURRENT.enter_thread
    paused = []
    for linear, thread in enumerate(threads):
        enter(thread, linear)
        paused.append(program(*args))
    waiting = range(len(threads))
    while True:
        arrived: dict[int, int] = {}  # thread -> line of the syncthreads() it waits at
        finished: list[int] = []
        # Run every waiting thread to its next barrier or its end. A thread that stops at a warp
        # shuffle instead gets its value once all threads have stopped, and runs on.
        running, results = waiting, {}
        while running:
            shuffles = {}
            for linear in running:
                enter(threads[linear], linear)
                try:
                    stop = paused[linear].send(results.get(linear))
                except StopIteration:
                    finished.append(linear)
                    continue
                if type(stop) is int:
                    arrived[linear] = stop
                else:
                    shuffles[linear] = stop
            if not shuffles:
                break
            results = exchange(shuffles, _whereabouts(arrived, finished), threads, stats)
            running = list(shuffles)
        if not arrived:
            return
        if finished or len(set(arrived.values())) > 1:
            raise DivergentBarrierError(_divergence_message(arrived, finished, threads))
        stats.barriers += 1
        memory.barrier()
        waiting = list(arrived)


def _whereabouts(arrived: dict, finished: list):
    """For warp errors: where a thread that did not come to a shuffle is instead."""
    done = set(finished)

    def describe(linear: int) -> str:
        if linear in arrived:
            return f"waits at syncthreads() on line {arrived[linear]}"
        return "finished the kernel" if linear in done else "is at another shuffle"

    return describe


def _some(threads: list) -> str:
    shown = ", ".join(str(t) for t in threads[:4])
    more = f" and {len(threads) - 4} more" if len(threads) > 4 else ""
    return f"{len(threads)} thread{'s' if len(threads) != 1 else ''} ({shown}{more})"


def _divergence_message(arrived: dict, finished: list, threads: list) -> str:
    groups: dict[int, list] = {}
    for linear, line in arrived.items():
        groups.setdefault(line, []).append(threads[linear])
    parts = [f"{_some(members)} wait at syncthreads() on line {line}" for line, members in sorted(groups.items())]
    if finished:
        parts.append(f"{_some([threads[i] for i in finished])} finished the kernel without reaching it")
    return (
        f"{where(CURRENT.kernel, CURRENT.block_idx)}: divergent barrier: " + "; ".join(parts) + ". "
        "Every thread of a block must reach the same syncthreads() (on a GPU the block hangs or "
        "computes garbage). Move the barrier out of the if-block or loop that only some threads enter, "
        "and let threads skip work instead of returning early."
    )


def _ending_in_kernel(traceback_, program):
    """The traceback from the kernel's frame to the last frame of the learner's code (a kernel, a device
    function), without the simulator's frames after it: the learner's line is the last one shown."""
    entry = traceback_
    while entry is not None and entry.tb_frame.f_code is not program.__code__:
        entry = entry.tb_next
    if entry is None:  # raised by the scheduler itself (a divergent barrier): keep it whole
        return traceback_
    last_outside = entry
    step = entry
    while step is not None:
        if step.tb_frame.f_code.co_filename not in _INTERNALS:
            last_outside = step
        step = step.tb_next
    last_outside.tb_next = None
    return entry


def _located(error: Exception, program) -> KernelError:
    """A Python error raised inside the kernel, re-raised naming kernel, block, thread and line."""
    line = 0
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code is program.__code__:
            line = lineno
    thread = CURRENT.thread_idx if CURRENT.kernel is not None else None
    return KernelError(
        f"{where(CURRENT.kernel, CURRENT.block_idx, thread)}: {type(error).__name__} on line {line}: {error}"
    )
