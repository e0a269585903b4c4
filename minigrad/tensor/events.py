"""Events: what the core tells anyone listening, in its own words.

Each event is a module-level tuple of listeners that the core calls in one
line where the event happens (``for listener in events.op_ran: listener(...)``),
so with nobody listening an event costs one pass over an empty tuple.
Listen with :func:`listen`, which returns a handle; ``handle.remove()`` stops
listening (a listener may remove itself while it is called: the core
iterates the tuple it read, and :func:`listen` builds a new one).

The events and their arguments:

- ``tensor_made(data, device)``: a tensor was made on the array ``data``
  (``Tensor(...)``, the factories, ``make_tensor``, ``.to()``, unpickling);
  ``data`` may be a view of an array made before.
- ``op_ran(cls, node, out, device)``: the op ``cls`` (a :class:`Function`
  subclass) produced the array ``out`` on ``device``; ``node`` is the graph
  node it recorded, after saved-tensor pack hooks ran (``node._saved`` holds
  what it keeps for backward), or None when nothing was recorded.
- ``node_backward(node, grad, device)``: ``node``'s backward is about to run
  with the incoming gradient ``grad``.
- ``node_returned(node, grad, grads, device)``: it returned ``grads``, one
  gradient (or None) per entry of ``node._parents``, checked.
- ``grad_stored(tensor, array)``: ``array`` became ``tensor.grad`` (the
  ``.grad`` tensor sends no ``tensor_made``).
- ``backward_began(tensor)`` / ``backward_ended(tensor)``: a ``backward()``
  call started from ``tensor`` / returned or raised.
- ``array_made(array, device)``: library code made a working array outside
  any tensor (a backward's large intermediates, the seed gradient);
  ``device`` is None for a NumPy array. :func:`working_array` sends it.
"""

from __future__ import annotations

import itertools
from typing import Callable

__all__ = ["listen", "working_array", "EVENTS", "RemovableHandle"]

EVENTS = ("tensor_made", "op_ran", "node_backward", "node_returned", "grad_stored", "backward_began",
          "backward_ended", "array_made")

tensor_made: tuple = ()
op_ran: tuple = ()
node_backward: tuple = ()
node_returned: tuple = ()
grad_stored: tuple = ()
backward_began: tuple = ()
backward_ended: tuple = ()
array_made: tuple = ()

_listeners: dict[str, dict] = {name: {} for name in EVENTS}  # event -> {handle id: listener}, in order


class RemovableHandle:
    """What registering a hook or listener returns: ``remove()`` takes it out again (idempotent).

    ``registry`` is the dict (id -> hook) it was added to; ``changed`` is
    called after a removal (to rebuild what the hot path reads). Also a
    context manager that removes on exit.
    """

    __slots__ = ("registry", "id", "changed")
    _ids = itertools.count()

    def __init__(self, registry: dict, changed: Callable | None = None) -> None:
        self.registry, self.id, self.changed = registry, next(RemovableHandle._ids), changed

    def remove(self) -> None:
        if self.registry.pop(self.id, None) is not None and self.changed is not None:
            self.changed()

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def listen(event: str, fn: Callable) -> RemovableHandle:
    """Call ``fn`` with the event's arguments each time ``event`` (one of :data:`EVENTS`) happens."""
    if event not in _listeners:
        raise ValueError(f"events.listen: unknown event {event!r}; the events are {', '.join(EVENTS)}")
    if not callable(fn):
        raise TypeError(f"events.listen: expected a callable for {event!r}, got {fn!r}")
    registered = _listeners[event]

    def changed() -> None:
        globals()[event] = tuple(registered.values())

    handle = RemovableHandle(registered, changed)
    registered[handle.id] = fn
    changed()
    return handle


def working_array(array, device=None):
    """Send ``array_made(array, device)`` for a working array of library code; returns ``array``."""
    for listener in array_made:
        listener(array, device)
    return array
