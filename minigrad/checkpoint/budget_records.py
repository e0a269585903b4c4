"""The records of the budget mode: a managed buffer, a leaf module's call, and the handle a node keeps.

A *buffer* is the memory behind saved tensors (views of one buffer count
once); a *call* is one call of a leaf module, with what it takes to run it
again; a :class:`SavedHandle` is what a node keeps instead of a managed
saved tensor. :mod:`.budget_pool` moves buffers between their states:

- ``held``: the budget keeps it, its bytes count;
- ``loose``: alive because other code keeps it, not counted;
- ``evicted``: freed while something still needs it: a rerun of its call brings it back;
- ``released``: nothing needs it any more.
"""

from __future__ import annotations

from typing import NamedTuple

from minigrad.checkpoint.recompute import autocast_modes
from minigrad.checkpoint.budget_views import Geometry

__all__ = ["Buffer", "BufferInput", "Call", "SavedHandle", "HELD", "LOOSE", "EVICTED", "RELEASED"]

HELD, LOOSE, EVICTED, RELEASED = "held", "loose", "evicted", "released"


class Buffer:
    """One buffer the pool manages (see the module docstring for its states)."""

    __slots__ = ("call", "locator", "nbytes", "device", "key", "array", "ref", "state", "handles", "consumers",
                 "pins", "last_access", "counter", "version", "was_held")

    def __init__(self, call: "Call", locator: tuple[str, int], nbytes: int, device, counter) -> None:
        self.call, self.locator = call, locator  # ("saved", i) or ("output", i): where a rerun of call gives it
        self.nbytes, self.device = nbytes, device
        self.key = None  # id() of the array while alive
        self.array = None  # the array, while held
        self.ref = None  # a weak reference to it, while held or loose
        self.state = LOOSE
        self.handles = self.consumers = self.pins = 0
        self.last_access = 0
        self.was_held = False
        self.counter, self.version = counter, counter.value  # an in-place change since it was made shows here

    @property
    def needed(self) -> bool:
        return self.handles > 0 or self.consumers > 0

    @property
    def name(self) -> str:
        return f"{self.call.name} {self.locator[0]} {self.locator[1]}"


class BufferInput(NamedTuple):
    """A call's input that is a managed buffer (or a view of one)."""

    buffer: Buffer
    geometry: Geometry | None
    requires_grad: bool
    device: object


class Call:
    """One call of a leaf module: how to run it again, what its first run saved, the buffers it made."""

    def __init__(self, module, name: str, inputs: list, versions: list, rng: dict, external: set) -> None:
        self.module, self.name = module, name
        self.inputs = inputs  # a BufferInput, or the argument itself, per positional argument
        self.versions = versions  # (version counter, value) of each tensor argument when called
        self.rng = rng
        self.autocast = autocast_modes()
        self.external = external  # ids of the arrays it read that the pool does not manage (parameters, data)
        self.saved_meta: list[tuple] = []  # (shape, dtype) of each tensor its ops saved, in order
        self.output_meta: list[tuple] = []
        self.made: list[Buffer] = []
        self.live_made = 0  # how many of `made` are held, loose or evicted
        self.cost = 1
        self.input_bytes = 0  # of the managed buffers it reads: what running it again holds besides what it makes
        self.shortfall = 0  # the bytes it needed at once, when more than the budget
        self.finished = self.broken = self.ended = False

    def replayable(self) -> bool:
        return self.finished and not self.broken and all(c.value == v for c, v in self.versions)


class SavedHandle:
    """What a node keeps instead of a managed saved tensor: its buffer, and where the tensor sits in it."""

    __slots__ = ("pool", "buffer", "geometry")

    def __init__(self, pool, buffer: Buffer, geometry: Geometry | None) -> None:  # pool: a budget_pool.Pool
        self.pool, self.buffer, self.geometry = pool, buffer, geometry
        buffer.handles += 1
        pool.handles += 1

    def __del__(self) -> None:  # the node let go of it (backward freed it, or the graph went)
        self.pool.handle_dropped(self.buffer)
