"""Extension points that later stages plug into, so they never patch the core.

**Allocation observers** (used by ``minigrad.memory``). An observer is a
callable that receives an :class:`AllocationEvent` each time a tensor buffer is
created (``"alloc"``), released (``"free"``) or re-labelled (``"retag"``).
A *buffer* is the block of memory behind a tensor; views (``x.T``, ``x[1:]``,
``x.reshape(...)`` when it does not copy) share their base's buffer and are
not reported again. A buffer is freed when the last tensor, view or saved
array that uses it goes away.

Each buffer carries a *tag* (the memory category): ``"activation"`` for op
outputs while autograd records, ``"temporary"`` for op outputs under
``no_grad()``, ``"gradient"`` for ``.grad`` buffers, ``"tensor"`` for tensors
made by factories (``tensor``, ``zeros``, ``randn``, ...). Wrap code in
``with allocation_tag("optimizer_state"):`` to label everything it allocates,
or relabel a buffer later with :func:`set_buffer_tag` (``nn.Parameter`` does
that with ``"parameter"``).

When no observer is registered the cost is one truthiness test per new tensor.
Buffers that existed before the first observer was registered are reported
the first time a new tensor is made on them.

**The dtype policy** (used by ``minigrad.amp``): a callable
``policy(op_name, input_dtypes) -> dtype | None`` consulted whenever an op runs
(``op_name`` is the op's snake-case name: ``"matmul"``, ``"add"``,
``"log_softmax"``...; ``input_dtypes`` the dtypes of its tensor operands).
If it returns a dtype, floating point operands of another dtype are cast to it
(a recorded, differentiable cast) before the op computes; ``None`` leaves the
op alone.
"""

from __future__ import annotations

import itertools
import weakref
from collections import namedtuple
from contextlib import contextmanager
from typing import Callable

__all__ = [
    "AllocationEvent", "add_allocation_observer", "remove_allocation_observer",
    "allocation_tag", "set_buffer_tag", "buffer_id", "live_buffers",
    "set_dtype_policy", "get_dtype_policy", "dtype_policy",
    "ACTIVATION", "TEMPORARY", "GRADIENT", "TENSOR",
]

ACTIVATION, TEMPORARY, GRADIENT, TENSOR = "activation", "temporary", "gradient", "tensor"

AllocationEvent = namedtuple("AllocationEvent", "event nbytes buffer_id tag device")
AllocationEvent.__doc__ = """One allocation event: ``event`` is "alloc", "free" or "retag"; ``nbytes`` the buffer's
exact size; ``buffer_id`` a number unique to the buffer; ``tag`` its category; ``device`` e.g. "cpu"."""

# The module-level state is read on the hot path by tensor.py and function.py.
observers: list[Callable[[AllocationEvent], None]] = []
tag_override: list[str] = []
policy: Callable | None = None

_ids = itertools.count(1)
_live: dict[int, list] = {}  # id(root array) -> [buffer_id, nbytes, tag, device]


class RemovableHandle:
    """Returned by :func:`add_allocation_observer`; ``handle.remove()`` unregisters (also a context manager)."""

    def __init__(self, fn):
        self.fn = fn

    def remove(self) -> None:
        remove_allocation_observer(self.fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_allocation_observer(fn: Callable[[AllocationEvent], None]) -> RemovableHandle:
    """Call ``fn(event)`` for every tensor buffer allocated, freed or retagged from now on."""
    if not callable(fn):
        raise TypeError(f"add_allocation_observer: expected a callable taking an AllocationEvent, got {fn!r}")
    observers.append(fn)
    return RemovableHandle(fn)


def remove_allocation_observer(fn) -> None:
    try:
        observers.remove(fn)
    except ValueError:
        pass


@contextmanager
def allocation_tag(tag: str):
    """Label every buffer allocated inside the block with ``tag`` (e.g. ``"optimizer_state"``)."""
    tag_override.append(str(tag))
    try:
        yield
    finally:
        tag_override.pop()


def _emit(event: str, record: list) -> None:
    ev = AllocationEvent(event, record[1], record[0], record[2], record[3])
    for fn in tuple(observers):
        fn(ev)


def _root(array):
    """The array that owns the memory ``array`` looks at (itself if it owns it).

    Follows ``.base`` through objects of other types too: NumPy's ``as_strided``
    views hang off a helper object whose ``.base`` is the array they read.
    """
    kind = type(array)
    base = array.base
    while base is not None:
        if type(base) is kind:
            array = base
        base = getattr(base, "base", None)
    return array


def _freed(key: int) -> None:
    record = _live.pop(key, None)
    if record is not None:
        _emit("free", record)


def track(array, tag: str, device) -> None:
    """Report ``array``'s buffer as allocated unless it is already known (called by Tensor creation)."""
    root = _root(array)
    key = id(root)
    if key in _live:
        return
    record = [next(_ids), int(root.nbytes), tag_override[-1] if tag_override else tag, str(device)]
    _live[key] = record
    weakref.finalize(root, _freed, key)
    _emit("alloc", record)


def buffer_id(tensor) -> int | None:
    """The id observers saw for ``tensor``'s buffer (None if it was never reported)."""
    record = _live.get(id(_root(tensor._data)))
    return record[0] if record else None


def set_buffer_tag(tensor, tag: str) -> None:
    """Relabel the buffer behind ``tensor`` (and its views); observers get a "retag" event."""
    if observers:
        track(tensor._data, tag, tensor.device)
    record = _live.get(id(_root(tensor._data)))
    if record is not None and record[2] != tag:
        record[2] = tag
        _emit("retag", record)


def live_buffers() -> dict[int, tuple[int, str, str]]:
    """``{buffer_id: (nbytes, tag, device)}`` for every reported buffer that is still alive."""
    return {r[0]: (r[1], r[2], r[3]) for r in _live.values()}


# ----------------------------------------------------------------------------- dtype policy


def set_dtype_policy(fn: Callable | None) -> Callable | None:
    """Install ``fn(op_name, input_dtypes) -> dtype | None`` (None removes it); returns the previous policy."""
    global policy
    if fn is not None and not callable(fn):
        raise TypeError(f"set_dtype_policy: expected a callable (op_name, input_dtypes) -> dtype or None, got {fn!r}")
    previous, policy = policy, fn
    return previous


def get_dtype_policy() -> Callable | None:
    return policy


@contextmanager
def dtype_policy(fn: Callable | None):
    """Use ``fn`` as the dtype policy inside the block (``minigrad.amp.autocast`` builds on this)."""
    previous = set_dtype_policy(fn)
    try:
        yield
    finally:
        set_dtype_policy(previous)
