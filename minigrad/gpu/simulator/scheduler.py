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

A barrier is matched by its source line, the thread's iteration numbers of
the loops around it and how many times the thread has reached it (its
dynamic occurrence), so threads in different iterations of a loop never
pass as one barrier. A shared-memory race in a kernel with barriers is
reported at the end of its round (``races.py``): if some threads of that
round wait at a barrier that others skip, the divergent barrier is
reported instead, since it is the cause.

Limits (``limits.py``, the same for every chapter):

- the **step limit**: a thread may run ``limits.STEP_LIMIT`` = 1,000,000
  loop iterations (of any of its ``while``/``for`` loops, over the whole
  launch, barriers and shuffles included) before
  :class:`StepLimitError` ends the launch: an infinite loop, or a thread
  spinning on a flag that another thread sets (threads run one at a time
  here, and a GPU does not promise that a waiting thread lets another run
  either). No thread of the library's kernels or of chapter 07 loops more
  than a few hundred times, and a runaway loop ends in about a second;
  change it for a block of code with
  ``with minigrad.gpu.simulator.limits.step_limit(n): ...``;
- a launch of more than ``limits.WARN_THREADS`` (4,194,304) threads warns
  (it takes seconds per million threads), and more than
  ``limits.MAX_THREADS`` (67,108,864) is refused with the estimated time:
  shrink the problem or use a grid-stride loop.

One launch runs at a time: a launch from a second Python thread while one
runs is refused with :class:`KernelLaunchError` (the position of the running
thread is global state), never interleaved.

Threads are visited in linear order (x fastest, then y, then z), so a racy
kernel gives one fixed answer here; the race detector still reports the
race, since a GPU gives no such guarantee.

Cost and scaling: time is linear in the number of instrumented element
accesses (every global/shared read or write, a few hundred nanoseconds to
about a microsecond each with its checks) plus a small cost per thread, per
loop iteration (the step counter) and per barrier round; the unsigned
``numpy.uint32`` index arithmetic costs about 1.2-2x what Python ints did.
CPU time measured on this project's 2-core machine (wall time is higher
when the machine is shared):

- 64x64 float32 tiled matmul, 16x16 tiles: 4,096 threads, ~0.6 M accesses,
  0.7 s; it grows as n^3 (128x128: 6 s, 32x32: 0.1 s);
- 4,096-element shared-memory tree reduction (16 blocks of 256): 0.12 s,
  linear in n (16,384: 0.44 s);
- elementwise add of 100,000 elements: 0.3 s (about 3 us per thread).

So keep simulated problems to thousands or tens of thousands of threads.

Not simulated: races in *global* memory (only shared memory is checked),
warps executing in lockstep (warp shuffles are exact meeting points, see
``warps.py``, but "warp-synchronous" shared-memory code that relies on
lockstep without a barrier is reported as a race), and C integer types
beyond what cupyx.jit gives the built-ins (``threadIdx.x`` and friends are
``numpy.uint32``, see ``threads.py``) and the arguments: a Python float argument becomes ``numpy.float32`` as in
cupyx.jit, a Python int stays an int (cupyx.jit makes it an int32 or int64;
one that fits neither is refused at launch), and a ``range`` loop counter
is a Python int. Array elements keep their NumPy dtype. The compile check (:mod:`minigrad.gpu.compile_check`) catches what
cupyx.jit's typing refuses.
"""

from __future__ import annotations

import os
import threading
import time
import traceback

import numpy as np

from minigrad.gpu.errors import DivergentBarrierError, KernelError, KernelLaunchError, where
from minigrad.gpu.simulator import limits, poison, races
from minigrad.gpu.simulator.counters import LaunchStats
from minigrad.gpu.simulator.arrays import BlockMemory, GlobalArray
from minigrad.gpu.simulator.threads import CURRENT
from minigrad.gpu.simulator.warps import exchange

_HERE = os.path.dirname(os.path.abspath(__file__))
_INTERNALS = {  # the simulator's own files, whose frames a learner's traceback does not need
    os.path.join(_HERE, name) for name in os.listdir(_HERE) if name.endswith(".py")
}
_last_stats: LaunchStats | None = None
_RUNNING = threading.Lock()  # held while a launch runs: the position in threads.CURRENT is global
_OWNER: list = [None]  # the Python thread that holds it
def last_launch_stats() -> LaunchStats | None:
    """The counters of the most recent simulated launch (None before any, or after a launch on a GPU)."""
    return _last_stats


def forget_last_stats() -> None:
    """A GPU launch has no counters: clear them so they are not mistaken for its own."""
    global _last_stats
    _last_stats = None


def refuse_nested_launch(name: str) -> None:
    """A kernel cannot launch another (no dynamic parallelism here); the simulator runs one launch at a time."""
    owner = _OWNER[0]
    if CURRENT.kernel is not None and owner is not None and owner != threading.get_ident():
        raise KernelLaunchError(
            f"kernel '{name}' was launched from a second Python thread while kernel '{CURRENT.kernel}' runs on "
            f"the simulator; the simulator runs one launch at a time: launch from one thread, or wait for "
            f"the other launch to return"
        )
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
    limits.check_size(name, grid, block)
    if not _RUNNING.acquire(blocking=False):
        refuse_nested_launch(name)
        raise KernelLaunchError(
            f"kernel '{name}' was launched from a second Python thread while another launch runs on the "
            f"simulator; the simulator runs one launch at a time: launch from one thread"
        )
    _OWNER[0] = threading.get_ident()
    try:
        with np.errstate(over="ignore"):  # uint32 indices wrap as on a GPU, silently
            stats = _simulate(name, program, barriers, parameters, grid, block, args, shared_mem)
    finally:
        _OWNER[0] = None
        _RUNNING.release()
    _last_stats = stats
    return stats


def _simulate(name, program, barriers, parameters, grid, block, args, shared_mem) -> LaunchStats:
    stats = LaunchStats(kernel=name, grid=grid, block=block)
    args = tuple(
        GlobalArray(value, parameter, stats) if isinstance(value, np.ndarray)
        else np.float32(value) if type(value) is float else np.complex64(value) if type(value) is complex
        else value  # cupyx.jit types a Python float as float32 (and complex as complex64)
        for parameter, value in zip(parameters, args)
    )
    threads = [(x, y, z) for z in range(block[2]) for y in range(block[1]) for x in range(block[0])]
    threads = (threads, [tuple(np.uint32(v) for v in t) for t in threads])
    run_block = _run_block_with_barriers if barriers else _run_block
    started = time.perf_counter()
    CURRENT.begin_launch(name, grid, block, stats)
    poison.forget()
    try:
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    memory = BlockMemory(stats, shared_mem)
                    CURRENT.enter_block((bx, by, bz), memory)
                    run_block(program, args, threads, stats, memory)
                    poison.report()  # garbage from unwritten shared memory reached global memory
                    memory.finish()  # the block's sectors and bank conflicts (sectors.py)
                    stats.blocks += 1
                    stats.threads_launched += len(threads[0])
    except KernelError as error:
        raise error.with_traceback(_ending_in_kernel(error.__traceback__, program)) from None
    except Exception as error:
        error = error.with_traceback(_ending_in_kernel(error.__traceback__, program))
        raise _located(error, program) from error
    finally:
        CURRENT.end_launch()
        poison.forget()
    stats.seconds = time.perf_counter() - started
    return stats


def _run_block(program, args, threads, stats, memory) -> None:
    enter = CURRENT.enter_thread
    for linear, (thread, registers) in enumerate(zip(*threads)):
        enter(thread, linear, registers)
        program(*args)


def _run_block_with_barriers(program, args, threads, stats, memory) -> None:
    enter = CURRENT.enter_thread
    threads, registers = threads
    paused = []
    for linear, thread in enumerate(threads):
        enter(thread, linear, registers[linear])
        paused.append(program(*args))
    races.defer(True)  # a race is reported at the round's end, unless the round's barrier is divergent
    try:
        _rounds(program, args, threads, registers, paused, stats, memory)
    except Exception:
        race = races.take()
        if race is not None:  # a racy value led to this error: the race is the cause
            raise race from None
        raise
    finally:
        races.defer(False)


def _rounds(program, args, threads, registers, paused, stats, memory) -> None:
    enter = CURRENT.enter_thread
    waiting = range(len(threads))
    visits = [{} for _ in threads]  # per thread: (barrier line, loop iterations) -> times reached
    steps = [0] * len(threads)  # per thread: loop iterations so far (the step limit counts the whole launch)
    while True:
        arrived: dict[int, tuple] = {}  # thread -> (line of its syncthreads(), loop iterations, occurrence)
        finished: list[int] = []
        # Run every waiting thread to its next barrier or its end. A thread that stops at a warp
        # shuffle instead gets its value once all threads have stopped, and runs on.
        running, results = waiting, {}
        while running:
            shuffles = {}
            for linear in running:
                enter(threads[linear], linear, registers[linear])
                CURRENT.steps = steps[linear]
                try:
                    stop = paused[linear].send(results.get(linear))
                except StopIteration:
                    finished.append(linear)
                    continue
                finally:
                    steps[linear] = CURRENT.steps
                if len(stop) == 2:  # a barrier: (line, iteration numbers of the loops around it)
                    seen = visits[linear]
                    seen[stop] = seen.get(stop, 0) + 1
                    arrived[linear] = (*stop, seen[stop])
                else:
                    shuffles[linear] = stop
            if not shuffles:
                break
            results = exchange(shuffles, _whereabouts(arrived, finished), threads, stats)
            running = list(shuffles)
        race = races.take()
        divergent = arrived and (finished or len(set(arrived.values())) > 1)
        if divergent:
            note = f" A shared-memory race followed from it: {race}" if race is not None else ""
            raise DivergentBarrierError(_divergence_message(arrived, finished, threads) + note)
        if race is not None:
            raise race
        if not arrived:
            return
        stats.barriers += 1
        memory.barrier()
        waiting = list(arrived)


def _whereabouts(arrived: dict, finished: list):
    """For warp errors: where a thread that did not come to a shuffle is instead."""
    done = set(finished)

    def describe(linear: int) -> str:
        if linear in arrived:
            return f"waits at syncthreads() on line {arrived[linear][0]}"
        return "finished the kernel" if linear in done else "is at another shuffle"

    return describe


def _some(threads: list) -> str:
    shown = ", ".join(str(t) for t in threads[:4])
    more = f" and {len(threads) - 4} more" if len(threads) > 4 else ""
    return f"{len(threads)} thread{'s' if len(threads) != 1 else ''} ({shown}{more})"


def _divergence_message(arrived: dict, finished: list, threads: list) -> str:
    groups: dict[tuple, list] = {}
    for linear, place in arrived.items():
        groups.setdefault(place, []).append(threads[linear])
    lines = {line for line, _, _ in groups}
    parts = [
        f"{_some(members)} wait at syncthreads() on line {line}" + (_when(iterations, times) if len(lines) < len(groups) else "")
        for (line, iterations, times), members in sorted(groups.items())
    ]
    if finished:
        parts.append(f"{_some([threads[i] for i in finished])} finished the kernel without reaching it")
    return (
        f"{where(CURRENT.kernel, CURRENT.block_idx)}: divergent barrier: " + "; ".join(parts) + ". "
        "Every thread of a block must reach the same syncthreads() (on a GPU the block hangs or "
        "computes garbage). Move the barrier out of the if-block or loop that only some threads enter, "
        "and let threads skip work instead of returning early."
    )


def _when(iterations: tuple, times: int) -> str:
    if iterations:
        shown = ", ".join(_ordinal(i) for i in iterations)
        return f" in the {shown} iteration of {'its loop' if len(iterations) == 1 else 'its loops'}"
    return f" (reached for the {_ordinal(times)} time)"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


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
