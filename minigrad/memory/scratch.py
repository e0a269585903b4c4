"""Scratch memory: what an optimizer's update rule allocates while it runs, declared as blocks.

An update rule does whole-array arithmetic on raw arrays (``lr * d``,
``(1 - beta2) * grad * grad``): NumPy allocates a parameter-sized temporary
for each, out of sight of any tensor. The memory stage counts them from the
rule's name and hyperparameters (:func:`scratch_arrays`, checked against
tracemalloc by the tests) and reports one *block* of that many bytes.

A step updates its parameters in turns, each needing its own scratch and
freeing it before the next: one block of the largest size asked so far
stands for them all (:func:`hold`), so the peak is the same as with a block
per turn. The block is released when the step ends, and before an
optimizer's new state is allocated for another parameter (the earlier
update's scratch is gone by then).

Invariants
- A block is a record of :mod:`.buffers` under a negative key (never an
  ``id()``): observers and guards see it as any buffer, tagged ``"temporary"``.
- At most one block is held; nothing is reported while nobody observes.
"""

from __future__ import annotations

from minigrad.memory import buffers
from minigrad.optim.update_kernels import update_kernel

__all__ = ["scratch", "scratch_begin", "scratch_end", "hold", "release", "scratch_arrays", "update_ran",
           "state_made", "step_began", "step_ended"]

_held: list | None = None  # [key, nbytes, device, parameter, released before the next update]
_fresh: set[int] = set()  # ids of the parameters whose first update this step is


def scratch_begin(nbytes: int, device="cpu") -> int | None:
    """Report ``nbytes`` of scratch memory as allocated; returns the key for :func:`scratch_end` (None unobserved)."""
    if not buffers.notify:
        return None
    name = buffers.device_name(device)
    buffer = buffers.new_buffer_id()
    tag = buffers.tag_override[-1] if buffers.tag_override else buffers.TEMPORARY
    record = [buffer, int(nbytes), tag, name, None]
    if buffers.guards:
        buffers.reserve(record)
    buffers.reported[-buffer] = record
    buffers.emit("alloc", record)
    return -buffer


def scratch_end(key: int | None) -> None:
    """Report the scratch memory of :func:`scratch_begin` freed (nothing for a None key)."""
    record = buffers.reported.pop(key, None) if key is not None else None
    if record is not None:
        buffers.emit("free", record, None, None)


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


def hold(nbytes: int, device, param=None) -> None:
    """Report at least ``nbytes`` of scratch as allocated until :func:`release` (one block for a step's turns)."""
    global _held
    if not buffers.notify:
        return
    if _held is not None:
        if _held[1] >= nbytes and _held[2] is device:
            _held[3] = param
            return
        scratch_end(_held[0])
    _held = [scratch_begin(nbytes, device), nbytes, device, param, False]


def release() -> None:
    """Report the held block freed (nothing if none is held)."""
    global _held
    if _held is not None:
        key, _held = _held[0], None
        scratch_end(key)


def scratch_arrays(name: str, hyper: dict, kernel=None) -> int:
    """How many parameter-sized scratch arrays update rule ``name`` holds at once, at most.

    For the default rules (``kernel`` None), counted from their code (each
    ``a * b`` on whole arrays makes one); a registered kernel declares its own
    with a ``scratch_arrays(**hyperparameters)`` attribute, and without one
    (a fused kernel) makes none. A new momentum buffer is not scratch: it
    becomes optimizer state.
    """
    if kernel is not None:
        declared = getattr(kernel, "scratch_arrays", None)
        return 0 if declared is None else declared(**hyper)
    get = hyper.get
    negated_or_decayed = bool(get("maximize") or (get("weight_decay", 0.0) != 0 and not get("decoupled_weight_decay")))
    if name == "adam":  # (1 - beta2) * grad * grad; later sqrt(v) and m / denom
        return 2 + negated_or_decayed
    if name == "sgd":  # lr * d
        return 1 + negated_or_decayed + bool(get("nesterov"))
    if name == "rmsprop":  # (1 - alpha) * grad * grad; sqrt(v) + eps and grad / avg
        return 2 + negated_or_decayed + (get("momentum", 0.0) == 0)
    return 0


def step_began(optimizer) -> None:
    """The optimizer's step pre-hook: note the parameters without state (their first update)."""
    release()
    _fresh.clear()
    state = optimizer.state
    _fresh.update(id(p) for group in optimizer.param_groups for p in group["params"] if not state.get(p))


def step_ended(optimizer) -> None:
    """The optimizer's step post-hook (always called): the block goes with the step."""
    release()
    _fresh.clear()


def update_ran(name: str, param, arrays: tuple, hyper: dict) -> None:
    """The optimizer's update hook: hold the scratch of rule ``name`` on ``param`` before it runs.

    A parameter's first update has a block of its own, released before the
    next update or anything allocated for another parameter.
    """
    first = id(param) in _fresh
    if _held is not None and (_held[4] or first):
        release()
    device = param._device
    count = scratch_arrays(name, hyper, update_kernel(name, device, None))
    if count:
        hold(count * param._data.nbytes, device, param)
        if first:
            _held[4] = True


def state_made(optimizer, param, array) -> None:
    """The optimizer's new-state hook: ``array`` becomes state of ``param``, counted as optimizer state.

    The block of another parameter's update is released first when that was
    a first update, or when ``param`` has its first update now (its state
    comes before it). State made by the update holding the block (SGD's first
    momentum buffer) is alive with it.
    """
    if _held is not None and _held[3] is not param and (_held[4] or id(param) in _fresh):
        release()
    buffers.track(array, param._device, "optimizer_state")
