"""The shared-memory race detector.

Between two barriers the threads of a block run in no fixed order (on a GPU
different warps truly interleave), so if two different threads touch the
same shared address and at least one of them writes, the result depends on
timing: a data race. ``syncthreads()`` orders everything before it against
everything after it, so the detector only needs to remember, per address,
who touched it since the last barrier (an *epoch*):

- the thread that wrote it (plain write),
- the thread that read it, or ``MANY`` once two different threads have,
- the thread that updated it atomically, or ``MANY``.

Atomics never race with each other; an atomic and a plain access by another
thread do. Each access checks the epoch's record in O(1), and a barrier
clears the record, so the cost is one dict lookup per shared access.

The simulator runs the threads of a block one after another between
barriers; the detector does not depend on that order: it reports a race on
the second conflicting access whichever thread makes it. In a kernel with
barriers the scheduler defers the report to the end of the round
(:func:`defer`, :func:`take`): if some threads of the round wait at a
barrier that others skip, the divergent barrier is the cause to report.

Two kinds of race, told apart so the report can say which fix is needed.
Every record also keeps the *step* of the access: how many times the thread
had come back around a loop since the barrier (:class:`Steps`). When the two
accesses are on the same line in the same step, the other thread is this
thread's partner in that step - a slot both read by one thread and written
by another within one step, which no barrier can fix (the step's index
pattern must change: only some threads may write). Otherwise the accesses
belong to two phases of the kernel (two lines, or two steps of one loop)
with no ``syncthreads()`` between them.
"""

from __future__ import annotations

from minigrad.gpu.errors import SharedMemoryRaceError
from minigrad.gpu.simulator.sectors import instruction_start

MANY = -1
_DEFERRING = [False]
_DEFERRED: list = []  # the round's first race, while deferring


def defer(on: bool) -> None:
    """Record races instead of raising them (the scheduler reports them, see :func:`take`)."""
    _DEFERRING[0] = on
    _DEFERRED.clear()


def take():
    """The first race recorded since the last call (or None), forgotten."""
    race = _DEFERRED[0] if _DEFERRED else None
    _DEFERRED.clear()
    return race

_WRITER, _READER, _ATOMIC, _WRITE_LINE, _READ_LINE, _ATOMIC_LINE, _WRITE_STEP, _READ_STEP, _ATOMIC_STEP = range(9)


class Steps:
    """Per thread of a block: how many times it has come back around a loop since the last barrier.

    A thread's accesses within one pass of a loop body run at increasing
    (line, instruction offset); an access at or before the previous one (in
    the same function) starts the next pass. Cleared at every barrier. (The
    sector counts of ``sectors.py`` find passes the same way.)
    """

    __slots__ = ("_last",)

    def __init__(self):
        self._last: dict[int, list] = {}  # thread -> [code, line, offset, step]

    def step(self, thread: int, frame) -> int:
        last = self._last.get(thread)
        code, line, offset = frame.f_code, frame.f_lineno, instruction_start(frame.f_code, frame.f_lasti)
        if last is None:
            self._last[thread] = [code, line, offset, 0]
            return 0
        if last[0] is code and (line, offset) <= (last[1], last[2]):
            last[3] += 1
        last[0], last[1], last[2] = code, line, offset
        return last[3]

    def clear(self) -> None:
        self._last.clear()


class RaceDetector:
    """Remembers the accesses of one shared array in the current epoch and raises on a conflict.

    ``accesses`` maps an address to its record ``[writer, reader, atomic,
    write line, read line, atomic line, write step, read step, atomic
    step]``; an owner may skip calling :meth:`read` when the record already
    says "read by MANY, nobody wrote" (nothing can change). ``describe(address,
    thread, line, verb, other, other_line, other_verb, same_step)`` builds the
    error message (``same_step``: the two accesses are one line in one step,
    see the module docstring); it is given by the owner, which knows the names.
    """

    __slots__ = ("accesses", "_describe")

    def __init__(self, describe):
        self.accesses: dict[int, list] = {}
        self._describe = describe

    def new_epoch(self) -> None:
        """A barrier passed: every earlier access is ordered before every later one."""
        self.accesses.clear()

    def read(self, address: int, thread: int, line: int, step: int = 0) -> None:
        record = self.accesses.get(address)
        if record is None:
            self.accesses[address] = [None, thread, None, 0, line, 0, 0, step, 0]
            return
        writer = record[_WRITER]
        if writer is not None and writer != thread:
            self._race(address, thread, line, step, "reads", writer, record[_WRITE_LINE], record[_WRITE_STEP], "wrote")
        atomic = record[_ATOMIC]
        if atomic is not None and atomic != thread:
            self._race(address, thread, line, step, "reads", atomic, record[_ATOMIC_LINE], record[_ATOMIC_STEP],
                       "atomically updated")
        reader = record[_READER]
        if reader is None:
            record[_READER] = thread
            record[_READ_LINE] = line
            record[_READ_STEP] = step
        elif reader != thread:
            record[_READER] = MANY

    def write(self, address: int, thread: int, line: int, step: int = 0) -> None:
        record = self.accesses.get(address)
        if record is None:
            self.accesses[address] = [thread, None, None, line, 0, 0, step, 0, 0]
            return
        writer = record[_WRITER]
        if writer is not None and writer != thread:
            self._race(address, thread, line, step, "writes", writer, record[_WRITE_LINE], record[_WRITE_STEP], "wrote")
        reader = record[_READER]
        if reader is not None and reader != thread:
            self._race(address, thread, line, step, "writes", reader, record[_READ_LINE], record[_READ_STEP], "read")
        atomic = record[_ATOMIC]
        if atomic is not None and atomic != thread:
            self._race(address, thread, line, step, "writes", atomic, record[_ATOMIC_LINE], record[_ATOMIC_STEP],
                       "atomically updated")
        record[_WRITER] = thread
        record[_WRITE_LINE] = line
        record[_WRITE_STEP] = step

    def atomic(self, address: int, thread: int, line: int, step: int = 0) -> None:
        record = self.accesses.get(address)
        if record is None:
            self.accesses[address] = [None, None, thread, 0, 0, line, 0, 0, step]
            return
        writer = record[_WRITER]
        if writer is not None and writer != thread:
            self._race(address, thread, line, step, "atomically updates", writer, record[_WRITE_LINE],
                       record[_WRITE_STEP], "wrote")
        reader = record[_READER]
        if reader is not None and reader != thread:
            self._race(address, thread, line, step, "atomically updates", reader, record[_READ_LINE],
                       record[_READ_STEP], "read")
        atomic = record[_ATOMIC]
        if atomic is None:
            record[_ATOMIC] = thread
            record[_ATOMIC_LINE] = line
            record[_ATOMIC_STEP] = step
        elif atomic != thread:
            record[_ATOMIC] = MANY

    def _race(self, address, thread, line, step, verb, other, other_line, other_step, other_verb):
        same_step = line == other_line and step == other_step  # MANY readers: the first one's line and step
        error = SharedMemoryRaceError(
            self._describe(address, thread, line, verb, other, other_line, other_verb, same_step)
        )
        if not _DEFERRING[0]:
            raise error
        if not _DEFERRED:
            _DEFERRED.append(error)
