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
"""

from __future__ import annotations

from minigrad.gpu.errors import SharedMemoryRaceError

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

_WRITER, _READER, _ATOMIC, _WRITE_LINE, _READ_LINE, _ATOMIC_LINE = range(6)


class RaceDetector:
    """Remembers the accesses of one shared array in the current epoch and raises on a conflict.

    ``accesses`` maps an address to its record ``[writer, reader, atomic,
    write line, read line, atomic line]``; an owner may skip calling
    :meth:`read` when the record already says "read by MANY, nobody wrote"
    (nothing can change). ``describe(address, thread, line, verb, other,
    other_line, other_verb)`` builds the error message; it is given by the
    owner, which knows the names.
    """

    __slots__ = ("accesses", "_describe")

    def __init__(self, describe):
        self.accesses: dict[int, list] = {}
        self._describe = describe

    def new_epoch(self) -> None:
        """A barrier passed: every earlier access is ordered before every later one."""
        self.accesses.clear()

    def read(self, address: int, thread: int, line: int) -> None:
        record = self.accesses.get(address)
        if record is None:
            self.accesses[address] = [None, thread, None, 0, line, 0]
            return
        writer = record[_WRITER]
        if writer is not None and writer != thread:
            self._race(address, thread, line, "reads", writer, record[_WRITE_LINE], "wrote")
        atomic = record[_ATOMIC]
        if atomic is not None and atomic != thread:
            self._race(address, thread, line, "reads", atomic, record[_ATOMIC_LINE], "atomically updated")
        reader = record[_READER]
        if reader is None:
            record[_READER] = thread
            record[_READ_LINE] = line
        elif reader != thread:
            record[_READER] = MANY

    def write(self, address: int, thread: int, line: int) -> None:
        record = self.accesses.get(address)
        if record is None:
            self.accesses[address] = [thread, None, None, line, 0, 0]
            return
        writer = record[_WRITER]
        if writer is not None and writer != thread:
            self._race(address, thread, line, "writes", writer, record[_WRITE_LINE], "wrote")
        reader = record[_READER]
        if reader is not None and reader != thread:
            self._race(address, thread, line, "writes", reader, record[_READ_LINE], "read")
        atomic = record[_ATOMIC]
        if atomic is not None and atomic != thread:
            self._race(address, thread, line, "writes", atomic, record[_ATOMIC_LINE], "atomically updated")
        record[_WRITER] = thread
        record[_WRITE_LINE] = line

    def atomic(self, address: int, thread: int, line: int) -> None:
        record = self.accesses.get(address)
        if record is None:
            self.accesses[address] = [None, None, thread, 0, 0, line]
            return
        writer = record[_WRITER]
        if writer is not None and writer != thread:
            self._race(address, thread, line, "atomically updates", writer, record[_WRITE_LINE], "wrote")
        reader = record[_READER]
        if reader is not None and reader != thread:
            self._race(address, thread, line, "atomically updates", reader, record[_READ_LINE], "read")
        atomic = record[_ATOMIC]
        if atomic is None:
            record[_ATOMIC] = thread
            record[_ATOMIC_LINE] = line
        elif atomic != thread:
            record[_ATOMIC] = MANY

    def _race(self, address, thread, line, verb, other, other_line, other_verb):
        error = SharedMemoryRaceError(self._describe(address, thread, line, verb, other, other_line, other_verb))
        if not _DEFERRING[0]:
            raise error
        if not _DEFERRED:
            _DEFERRED.append(error)
