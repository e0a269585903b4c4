"""The heart of memory accounting: a buffer is seen once, and known freed.

A *buffer* is the block of memory behind a tensor. Views (``x.T``, ``x[1:]``,
``x.reshape(...)`` when it does not copy) share their base's buffer, so the
registry keys a buffer by its *root array* (the array that owns the memory,
:func:`minigrad.tensor.backend.root_array`) and reports it once. It holds a
weak reference to that root array: when the last tensor, view or saved array
using the buffer goes, Python drops the root and the registry reports the
buffer freed. Nothing has to call "free".

Each record is ``[buffer_id, nbytes, tag, device name, op, weak reference]``
under ``id(root array)`` in :data:`reported` (scratch blocks, which have no
array, under negative keys). The *tag* is the buffer's memory label
(``"activation"``, ``"gradient"``, ...; :mod:`.listeners` says which event
gives which tag, :mod:`.categories` which category each tag falls into).

Observers receive an :class:`AllocationEvent` for every buffer reported
(``"alloc"``), freed (``"free"``) and relabelled (``"retag"``). Guards (the
simulated card) are asked to admit each new buffer first (``"reserve"``);
one that raises refuses it: nothing is recorded, and the guards that had
admitted it get a ``"cancel"``.

Invariants
- A buffer is reported at most once while alive, and freed exactly once.
- ``live_bytes()`` is the sum of the records alive; views add nothing.
- ``reported`` is read-only outside this package; ``id(array) in reported``
  says, for an array that owns its memory, that its buffer is known and alive.
"""

from __future__ import annotations

import itertools
import weakref
from collections import namedtuple
from contextlib import contextmanager
from typing import Callable

from minigrad.memory.phases import scopes
from minigrad.tensor.backend import root_array

__all__ = [
    "AllocationEvent", "ACTIVATION", "OUTPUT", "TEMPORARY", "GRADIENT", "TENSOR", "reported", "observers", "guards",
    "track", "retag", "emit", "reserve", "new_buffer_id", "device_name", "allocation_tag", "set_buffer_tag",
    "buffer_id", "live_buffers", "live_bytes",
]

ACTIVATION, OUTPUT, TEMPORARY, GRADIENT, TENSOR = "activation", "output", "temporary", "gradient", "tensor"

AllocationEvent = namedtuple("AllocationEvent", "event nbytes buffer_id tag device op scope", defaults=(None, None))
AllocationEvent.__doc__ = """One allocation event: ``event`` is "alloc", "free" or "retag" (for guards: "reserve",
"cancel"); ``nbytes`` the buffer's exact size; ``buffer_id`` a number unique to the buffer; ``tag`` its label;
``device`` e.g. "cpu"; ``op`` the op that made (or, for "retag", saved) it, None if none; ``scope`` the module
whose forward ran when it happened (innermost), None outside any."""

_event = tuple.__new__  # builds an AllocationEvent without the namedtuple's Python-level __new__

observers: list[Callable] = []  # what the events go to, in order (see minigrad.memory.listeners)
guards: list[Callable] = []
tag_override: list[str] = []
reported: dict[int, list] = {}  # id(root array) -> [buffer_id, nbytes, tag, device, op, weak reference]
notify: tuple = ()  # the observers as the hot path iterates them (remade when they change)

_ids = itertools.count(1)
_device_names: dict = {}  # device -> str(device), so reporting a buffer skips Device.__str__
_last_device = _last_device_name = None  # most reports repeat the latest device


def sync() -> None:
    """Remake :data:`notify` from :data:`observers` (an observer may remove itself while it is called)."""
    global notify
    notify = tuple(observers)


def new_buffer_id() -> int:
    return next(_ids)


def device_name(device) -> str:
    global _last_device, _last_device_name
    if device is _last_device:
        return _last_device_name
    name = _device_names.get(device)
    if name is None:
        name = _device_names[device] = str(device)
    _last_device, _last_device_name = device, name
    return name


class _BufferRef(weakref.ref):
    """A weak reference to a root array that reports its buffer freed when the array goes."""

    __slots__ = ("key",)


def _dead(ref: _BufferRef) -> None:
    record = reported.pop(ref.key, None)
    if record is not None:  # emit("free", ...) written out: this runs for every buffer that goes
        event = _event(AllocationEvent, ("free", record[1], record[0], record[2], record[3], record[4], None))
        for fn in notify:
            fn(event)


def emit(kind: str, record: list, op=None, scope=()) -> None:
    """Send the observers an event about ``record`` (``scope=()``: the module running now)."""
    if scope == ():
        scope = scopes[-1] if scopes else None
    event = _event(AllocationEvent, (kind, record[1], record[0], record[2], record[3], op or record[4], scope))
    for fn in notify:
        fn(event)


def reserve(record: list) -> None:
    """Ask every guard to admit ``record``'s buffer; if one refuses, cancel the earlier admissions and re-raise."""
    fields = (record[1], record[0], record[2], record[3], record[4], scopes[-1] if scopes else None)
    admitted = []
    try:
        for fn in tuple(guards):
            fn(_event(AllocationEvent, ("reserve",) + fields))
            admitted.append(fn)
    except BaseException:
        cancel = _event(AllocationEvent, ("cancel",) + fields)
        for fn in admitted:
            fn(cancel)
        raise


def track(array, device, tag: str = TENSOR, op: str | None = None) -> None:
    """Report ``array``'s buffer as allocated (with ``tag``, by ``op``) unless it is known already.

    With its default tag this is what a tensor made on ``array`` reports.
    """
    root = array if array.base is None else root_array(array)
    key = id(root)
    if key in reported:
        return
    try:
        ref = _BufferRef(root, _dead)  # cheaper than weakref.finalize; the record keeps it alive
    except TypeError:  # a NumPy scalar (what arithmetic on 0-d arrays returns) holds its value inline: no buffer
        return
    ref.key = key
    name = _last_device_name if device is _last_device else device_name(device)
    if tag_override:
        tag = tag_override[-1]
    nbytes = root.nbytes
    buffer = next(_ids)
    record = [buffer, nbytes, tag, name, op, ref]
    if guards:
        reserve(record)  # may refuse the buffer: then nothing is recorded
    reported[key] = record
    event = _event(AllocationEvent, ("alloc", nbytes, buffer, tag, name, op, scopes[-1] if scopes else None))
    for fn in notify:
        fn(event)


def retag(record: list, tag: str, op: str | None = None) -> None:
    """Relabel a known buffer ``tag`` (observers get a "retag" naming ``op``); nothing if it has that tag."""
    if record[2] != tag:
        record[2] = tag
        emit("retag", record, op)


@contextmanager
def allocation_tag(tag: str):
    """Label every buffer reported inside the block with ``tag`` (e.g. ``"input"`` for data)."""
    tag_override.append(str(tag))
    try:
        yield
    finally:
        tag_override.pop()


def set_buffer_tag(tensor, tag: str) -> None:
    """Relabel the buffer behind ``tensor`` (and its views), reporting it first if it is not known yet."""
    if notify:
        track(tensor._data, tensor._device, tag)
    record = reported.get(id(root_array(tensor._data)))
    if record is not None:
        retag(record, tag)


def buffer_id(tensor) -> int | None:
    """The id observers saw for ``tensor``'s buffer (None if it was never reported or is freed)."""
    record = reported.get(id(root_array(tensor._data)))
    return record[0] if record else None


def live_buffers() -> dict[int, tuple[int, str, str]]:
    """``{buffer_id: (nbytes, tag, device)}`` for every reported buffer that is still alive."""
    return {r[0]: (r[1], r[2], r[3]) for r in reported.values()}


def live_bytes() -> int:
    """Total size of the reported buffers that are still alive."""
    return sum(r[1] for r in reported.values())
