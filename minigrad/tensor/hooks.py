"""Extension points that later stages plug into, so they never patch the core.

**Allocation observers** (used by ``minigrad.memory``). An observer is a
callable that receives an :class:`AllocationEvent` each time a tensor buffer is
created (``"alloc"``), released (``"free"``) or re-labelled (``"retag"``).
A *buffer* is the block of memory behind a tensor; views (``x.T``, ``x[1:]``,
``x.reshape(...)`` when it does not copy) share their base's buffer and are
not reported again. A buffer is freed when the last tensor, view or saved
array that uses it goes away.

Every buffer the library makes is reported, not only the arrays wrapped in
a tensor: what a node keeps for backward (``save_for_backward``, e.g. conv's
im2col matrix, and any array it stores on ``ctx``), the gradients passed
between nodes during ``backward()`` and the larger scratch arrays an op's
backward makes (:func:`report_temporary`), an optimizer step's scratch
arrays (see :mod:`minigrad.optim.optimizer`).

Each buffer carries a *tag* (the memory category):

- ``"activation"``: kept alive for backward by a node of the graph (saved
  for backward; an op output becomes one when a later node saves it);
- ``"output"``: an op output made while autograd records that no node has
  saved (it is alive only while something else holds it);
- ``"temporary"``: op outputs under ``no_grad()``, gradients in flight during
  ``backward()``, scratch arrays of a backward or an optimizer step;
- ``"gradient"`` for ``.grad`` buffers, ``"tensor"`` for tensors made by
  factories (``tensor``, ``zeros``, ``randn``, ...).

Wrap code in ``with allocation_tag("optimizer_state"):`` to label everything
it allocates, or relabel a buffer later with :func:`set_buffer_tag`
(``nn.Parameter`` does that with ``"parameter"``). A buffer keeps its tag once
backward has released it (an activation still held by the user stays one).

Each event also names the ``op`` that made the buffer (or, for a "retag",
the op that saved it for backward; ``"<op>_backward"`` for gradients an op's
backward produced); ``None`` where no op did (factories, scratch).

**Allocation guards** (used by ``minigrad.memory.simulated_gpu``): a guard is
a callable that receives an :class:`AllocationEvent` with ``event``
``"reserve"`` for every new buffer *before* it is registered or any observer
hears of it; it refuses the buffer by raising (e.g. ``MemoryError``). Then
nothing is recorded: no observer sees an "alloc" (nor, later, a "free") for
it, the tensor is not made, and the guards that had already admitted it get
a ``"cancel"`` event with the same ``buffer_id``. Guards run only while an
allocation observer is registered (register one beside the guard).

When no observer is registered the cost is one truthiness test per new tensor.
Buffers that existed before the first observer was registered are reported
the first time a new tensor is made on them. ``reported`` is the registry
itself, read-only: for an array that owns its memory, ``id(array) in
reported`` says without a call whether its buffer was reported and lives.

**Phase observers** (also for ``minigrad.memory``): a callable receiving a
:class:`PhaseEvent` when a phase of training starts (``"enter"``) or ends
(``"exit"``): ``"forward"`` around the outermost module call (``owner`` is the
module), ``"backward"`` around ``backward()`` (``owner`` is the tensor) and
``"optimizer"`` around ``Optimizer.step`` (``owner`` is the optimizer). While
any is registered, every module call pushes its module on ``scopes`` for the
length of its forward (the outermost one also sends the "forward" phase), so
each allocation event names the module running (``scope``) without a call per
module to anyone. The callers test ``phase_observers`` first, so the cost with
none registered is one truthiness test per module call, backward or step.
"""

from __future__ import annotations

import itertools
import weakref
from collections import namedtuple
from contextlib import contextmanager
from typing import Callable

from numpy import ndarray as _ndarray

from minigrad.tensor.backend import root_array as _root

__all__ = [
    "AllocationEvent", "add_allocation_observer", "remove_allocation_observer",
    "allocation_tag", "set_buffer_tag", "buffer_id", "live_buffers",
    "ACTIVATION", "OUTPUT", "TEMPORARY", "GRADIENT", "TENSOR", "live_bytes", "report_temporary", "scratch", "scratch_begin", "scratch_end", "scratch_hold", "scratch_release",
    "add_allocation_guard", "remove_allocation_guard",
    "PhaseEvent", "add_phase_observer", "remove_phase_observer", "phase", "enter_phase", "exit_phase",
    "reported",
]

ACTIVATION, OUTPUT, TEMPORARY, GRADIENT, TENSOR = "activation", "output", "temporary", "gradient", "tensor"

AllocationEvent = namedtuple("AllocationEvent", "event nbytes buffer_id tag device op scope", defaults=(None, None))
AllocationEvent.__doc__ = """One allocation event: ``event`` is "alloc", "free" or "retag" (for guards: "reserve",
"cancel"); ``nbytes`` the buffer's
exact size; ``buffer_id`` a number unique to the buffer; ``tag`` its category; ``device`` e.g. "cpu";
``op`` the op that made (or, for "retag", saved) it, None if none; ``scope`` the innermost entry of ``scopes``
when it happened (the module whose forward runs), None outside any."""

PhaseEvent = namedtuple("PhaseEvent", "event phase owner inputs", defaults=((),))
PhaseEvent.__doc__ = """A phase starts (``event`` "enter") or ends ("exit"): ``phase`` is "forward", "backward" or
"optimizer"; ``owner`` the module, the tensor backward started from, or the optimizer; ``inputs`` the
positional arguments of a module call (empty otherwise)."""

_new_tuple = tuple.__new__  # builds an AllocationEvent without the namedtuple's Python-level __new__
_NOT_ARRAYS = frozenset({int, float, bool, str, type(None), type(Ellipsis), slice})
_NODE_FIELDS = frozenset({"_saved", "_parents", "output_shape", "output_dtype", "_checks", "_device"})

# The module-level state is read on the hot path by tensor.py and function.py.
observers: list[Callable[[AllocationEvent], None]] = []
tag_override: list[str] = []
phase_observers: list[Callable[[PhaseEvent], None]] = []
scopes: list = []  # the module calls in progress (the modules whose forward runs), innermost last
guards: list[Callable[[AllocationEvent], None]] = []
# What the hot path iterates: copies of the lists above, remade by the add/remove functions (so an observer may
# remove itself while being called). Register through those functions, never by editing the lists.
_notify: tuple = ()
_phase_notify: tuple = ()

_ids = itertools.count(1)
_device_names: dict = {}  # device -> str(device), so reporting a buffer skips Device.__str__
_last_device = _last_device_name = None  # the device of the latest report and its name (most reports repeat it)
_held: tuple | None = None  # the scratch block of scratch_hold(): (key, nbytes, device)
# The registry of the buffers reported and alive: id(root array) -> [buffer_id, nbytes, tag, device, op, weak
# reference] (scratch blocks under negative keys). Read-only outside this module: the core's hot paths read it, for
# an array that owns its memory (``array.base is None``), as ``reported.get(id(array))`` (tag at index 2).
reported: dict[int, list] = {}


class RemovableHandle:
    """Returned by :func:`add_allocation_observer`; ``handle.remove()`` unregisters (also a context manager)."""

    def __init__(self, fn, registry: list | None = None):
        self.fn = fn
        self.registry = observers if registry is None else registry

    def remove(self) -> None:
        if self.fn in self.registry:
            self.registry.remove(self.fn)
            _sync()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_allocation_observer(fn: Callable[[AllocationEvent], None]) -> RemovableHandle:
    """Call ``fn(event)`` for every tensor buffer allocated, freed or retagged from now on."""
    if not callable(fn):
        raise TypeError(f"add_allocation_observer: expected a callable taking an AllocationEvent, got {fn!r}")
    observers.append(fn)
    _sync()
    return RemovableHandle(fn)


def remove_allocation_observer(fn) -> None:
    if fn in observers:
        observers.remove(fn)
        _sync()


def _sync() -> None:
    global _notify, _phase_notify
    _notify, _phase_notify = tuple(observers), tuple(phase_observers)


def add_allocation_guard(fn: Callable[[AllocationEvent], None]) -> RemovableHandle:
    """Ask ``fn(event)`` to admit every new buffer before it is registered (see the module docstring)."""
    if not callable(fn):
        raise TypeError(f"add_allocation_guard: expected a callable taking an AllocationEvent, got {fn!r}")
    guards.append(fn)
    return RemovableHandle(fn, guards)


def remove_allocation_guard(fn) -> None:
    if fn in guards:
        guards.remove(fn)


def _reserve(record: list) -> None:
    """Ask every guard to admit ``record``'s buffer; if one refuses, cancel the earlier admissions and re-raise."""
    fields = (record[1], record[0], record[2], record[3], record[4], scopes[-1] if scopes else None)
    admitted = []
    try:
        for fn in tuple(guards):
            fn(_new_tuple(AllocationEvent, ("reserve",) + fields))
            admitted.append(fn)
    except BaseException:
        cancel = _new_tuple(AllocationEvent, ("cancel",) + fields)
        for fn in admitted:
            fn(cancel)
        raise


def add_phase_observer(fn: Callable[[PhaseEvent], None]) -> RemovableHandle:
    """Call ``fn(event)`` whenever a forward (module call), backward or optimizer step starts or ends."""
    if not callable(fn):
        raise TypeError(f"add_phase_observer: expected a callable taking a PhaseEvent, got {fn!r}")
    phase_observers.append(fn)
    _sync()
    return RemovableHandle(fn, phase_observers)


def remove_phase_observer(fn) -> None:
    if fn in phase_observers:
        phase_observers.remove(fn)
        _sync()


def enter_phase(name: str, owner=None, inputs: tuple = ()) -> None:
    """Tell the phase observers that phase ``name`` of ``owner`` starts (pair it with :func:`exit_phase`)."""
    event = _new_tuple(PhaseEvent, ("enter", name, owner, inputs))
    for fn in _phase_notify:
        fn(event)


def exit_phase(name: str, owner=None) -> None:
    event = _new_tuple(PhaseEvent, ("exit", name, owner, ()))
    for fn in _phase_notify:
        fn(event)


@contextmanager
def phase(name: str, owner=None, inputs: tuple = ()):
    """Report the block as phase ``name`` of ``owner`` to the phase observers (callers test ``phase_observers``)."""
    enter_phase(name, owner, inputs)
    try:
        yield
    finally:
        exit_phase(name, owner)


@contextmanager
def allocation_tag(tag: str):
    """Label every buffer allocated inside the block with ``tag`` (e.g. ``"optimizer_state"``)."""
    tag_override.append(str(tag))
    try:
        yield
    finally:
        tag_override.pop()


def _emit(event: str, record: list, op: str | None = None) -> None:
    ev = _new_tuple(AllocationEvent, (event, record[1], record[0], record[2], record[3], op or record[4],
                                      scopes[-1] if scopes else None))
    for fn in _notify:
        fn(ev)


class _BufferRef(weakref.ref):
    """A weak reference to a root array that reports the buffer freed when the array goes (kept in its record)."""

    __slots__ = ("key",)


def _dead(ref: _BufferRef) -> None:
    record = reported.pop(ref.key, None)
    if record is not None:
        ev = _new_tuple(AllocationEvent, ("free", record[1], record[0], record[2], record[3], record[4], None))
        for fn in _notify:
            fn(ev)


def track(array, tag: str, device, op: str | None = None, retag_from: tuple[str, ...] = ()) -> None:
    """Report ``array``'s buffer as allocated (by ``op``) unless it is already known (called by Tensor creation).

    A known buffer whose tag is one of ``retag_from`` is relabelled ``tag`` instead.
    """
    root = array if array.base is None else _root(array)
    key = id(root)
    if key in reported:
        if retag_from:
            record = reported[key]
            if record[2] in retag_from and record[2] != tag:
                record[2] = tag
                _emit("retag", record)
        return
    try:
        ref = _BufferRef(root, _dead)  # cheaper than weakref.finalize; the record keeps it alive
    except TypeError:  # a NumPy scalar (what arithmetic on 0-d arrays returns) holds its value inline: no buffer
        return
    ref.key = key
    name = _last_device_name if device is _last_device else _device_name(device)
    if tag_override:
        tag = tag_override[-1]
    nbytes = root.nbytes
    buffer = next(_ids)
    record = [buffer, nbytes, tag, name, op, ref]
    if guards:
        _reserve(record)  # may refuse the buffer: then nothing is recorded
    reported[key] = record
    ev = _new_tuple(AllocationEvent, ("alloc", nbytes, buffer, tag, name, op, scopes[-1] if scopes else None))
    for fn in _notify:
        fn(ev)


def _device_name(device) -> str:
    global _last_device, _last_device_name
    name = _device_names.get(device)
    if name is None:
        name = _device_names[device] = str(device)
    _last_device, _last_device_name = device, name
    return name


def track_node(ctx, out, device) -> None:
    """Report what a node just recorded keeps alive (as activations) and its output (called by ``apply``).

    The node keeps its saved arrays and any array stored on ``ctx`` (directly,
    or in a tuple/list); the output is an activation if the node saved it,
    otherwise an ``"output"``. An ``"output"`` buffer that this node saves
    becomes an activation.
    """
    kept = ctx._saved or ()
    if not ctx.__dict__.keys() <= _NODE_FIELDS:  # what apply() itself stores on a node holds no arrays of the op's
        kept = _with_attributes(ctx, kept)
    op = ctx.op
    out_root = out if out.base is None else _root(out)
    out_key = id(out_root)
    saved_roots = []
    for array in kept:
        if type(array) is not _ndarray and not (hasattr(array, "nbytes") and hasattr(array, "base")):  # not a buffer
            continue
        root = array if array.base is None else _root(array)
        key = id(root)
        saved_roots.append(key)
        record = reported.get(key)
        if record is None:
            if key != out_key:  # the output is reported below
                track(root, ACTIVATION, device, op)
        elif record[2] == OUTPUT or record[2] == TEMPORARY:
            record[2] = ACTIVATION
            _emit("retag", record, op)
    track(out_root, ACTIVATION if out_key in saved_roots else OUTPUT, device, op)


def _with_attributes(ctx, saved) -> list:
    """``saved`` and the values the op stored on ``ctx`` (directly, or in a tuple/list) that may be arrays."""
    kept = list(saved)
    for name, value in ctx.__dict__.items():
        kind = type(value)
        if name in _NODE_FIELDS or kind in _NOT_ARRAYS:
            continue
        if kind is tuple or kind is list:
            kept.extend(v for v in value if type(v) not in _NOT_ARRAYS)
        else:
            kept.append(value)
    return kept


def report_temporary(array, device=None):
    """Show a scratch array the library made (in a backward rule, an optimizer step) to observers; returns it.

    Tagged ``"temporary"``; reported freed when the array goes away. Costs one
    truthiness test when nobody observes. ``device`` defaults to "cpu" for
    NumPy arrays.
    """
    if observers:
        track(array, TEMPORARY, device if device is not None else _device_of(array))
    return array


def _device_of(array) -> str:
    module = type(array).__module__.split(".")[0]
    return "cpu" if module == "numpy" else module


def scratch_begin(nbytes: int, device="cpu") -> int | None:
    """Report ``nbytes`` of scratch memory (tag ``"temporary"``) as allocated; returns the key for :func:`scratch_end`.

    For code whose arrays the library cannot report one by one (an update
    kernel's whole-array arithmetic): it declares its peak instead. Returns
    None, having done nothing, when nobody observes.
    """
    if not observers:
        return None
    name = _last_device_name if device is _last_device else _device_name(device)
    buffer = next(_ids)
    record = [buffer, int(nbytes), tag_override[-1] if tag_override else TEMPORARY, name, None]
    if guards:
        _reserve(record)
    reported[-buffer] = record  # never the id() of an array
    ev = _new_tuple(AllocationEvent, ("alloc", record[1], buffer, record[2], name, None, scopes[-1] if scopes else None))
    for fn in _notify:
        fn(ev)
    return -buffer


def scratch_end(key: int | None) -> None:
    """Report the scratch memory of :func:`scratch_begin` freed (nothing for a None key)."""
    record = reported.pop(key, None) if key is not None else None
    if record is not None:
        ev = _new_tuple(AllocationEvent, ("free", record[1], record[0], record[2], record[3], record[4], None))
        for fn in _notify:
            fn(ev)


def scratch_hold(nbytes: int, device="cpu") -> None:
    """Report at least ``nbytes`` of scratch memory as allocated until :func:`scratch_release`.

    For work done in turns, each needing its own scratch and freeing it
    before the next (an optimizer step's update of each parameter): one block
    of the largest size asked so far stands for them all, so the peak is the
    same as with a block per turn while each turn reports nothing new unless
    it needs more. Release it before anything else is allocated between two
    turns (the peak would otherwise count the block with it).
    """
    global _held
    if not observers:
        return
    if _held is not None:
        if _held[1] >= nbytes and _held[2] is device:
            return
        scratch_end(_held[0])
    _held = (scratch_begin(nbytes, device), nbytes, device)


def scratch_release() -> None:
    """Report the block of :func:`scratch_hold` freed (nothing if none is held)."""
    global _held
    if _held is not None:
        key, _held = _held[0], None
        scratch_end(key)


class scratch:
    """``with scratch(nbytes, device):`` is :func:`scratch_begin` and :func:`scratch_end` around the block."""

    __slots__ = ("nbytes", "device", "key")

    def __init__(self, nbytes: int, device="cpu") -> None:
        self.nbytes, self.device, self.key = nbytes, device, None

    def __enter__(self) -> None:
        self.key = scratch_begin(self.nbytes, self.device)

    def __exit__(self, *exc) -> None:
        scratch_end(self.key)
        self.key = None


def live_bytes() -> int:
    """Total size of the reported buffers that are still alive."""
    return sum(r[1] for r in reported.values())


def buffer_id(tensor) -> int | None:
    """The id observers saw for ``tensor``'s buffer (None if it was never reported)."""
    record = reported.get(id(_root(tensor._data)))
    return record[0] if record else None


def set_buffer_tag(tensor, tag: str) -> None:
    """Relabel the buffer behind ``tensor`` (and its views); observers get a "retag" event."""
    if observers:
        track(tensor._data, tag, tensor.device)
    record = reported.get(id(_root(tensor._data)))
    if record is not None and record[2] != tag:
        record[2] = tag
        _emit("retag", record)


def live_buffers() -> dict[int, tuple[int, str, str]]:
    """``{buffer_id: (nbytes, tag, device)}`` for every reported buffer that is still alive."""
    return {r[0]: (r[1], r[2], r[3]) for r in reported.values()}
