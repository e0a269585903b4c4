"""``simulated_gpu("gtx1050")``: run CPU code under a consumer card's memory budget, byte for byte.

::

    with minigrad.memory.simulated_gpu("gtx1050") as gpu:
        loss = loss_fn(model(x), y)      # raises minigrad.memory.OutOfMemoryError if it would not fit
        loss.backward()
        optimizer.step()
    gpu.stats()["allocated_bytes.all.peak"], gpu.allocator.fragmentation()

Every buffer the library makes on a simulated device (the CPU and the
strict device) inside the block is served by a :class:`CachingAllocator`
whose capacity is the card's usable memory (its memory minus the CUDA
context), so PyTorch's rules apply: sizes rounded up to 512 bytes, blocks
carved from segments, free blocks cached and fragmented, all counting
against the budget. When a buffer does not fit, the core's allocation guard
(:func:`minigrad.tensor.listeners.add_allocation_guard`) refuses it before it is
registered and :class:`OutOfMemoryError` is raised with a report of where
the memory went (:mod:`minigrad.memory.oom_report`).

The model "is on the card": the buffers alive and known when the block
starts are counted at once; the parameters, gradients and buffers of a
model, and an optimizer's state, made before the block, are counted when the
model is first called / the optimizer first steps (or at once, if passed as
``simulated_gpu(..., model=, optimizer=)``), as :func:`track` does. Pass the
optimizer when its state exists already: an error before its first step in
the block would otherwise not count (nor suggest saving) that state.
A buffer that no op made is named by the backward pass or optimizer step
that asked for it.

Nothing is lost on an out-of-memory error: the refused buffer was never
registered, so the model, the optimizer, any active tracker and the
allocator agree on what is alive; what the failed step had made is freed as
soon as the exception lets go of it (when the ``with`` block ends with the
error, its traceback's frames are cleared so that this happens at once, as
it must in a notebook kernel that keeps the last traceback). Retry with a
smaller batch in the same process. An error inside ``optimizer.step`` may
leave some parameters updated, as on a real GPU: step again with a smaller
batch from a fresh ``zero_grad``.
"""

from __future__ import annotations

import gc
import traceback

from minigrad.memory import buffers, listeners
from minigrad.memory.allocator import AllocatorOutOfMemoryError, CachingAllocator, sizes
from minigrad.memory.categories import CATEGORIES, category_of
from minigrad.memory.oom_report import OOMReport, OutOfMemoryError
from minigrad.memory.owned import module_tensors, optimizer_tensors
from minigrad.memory.profiles import get_profile

__all__ = ["SimulatedGPU", "simulated_gpu"]

SIMULATED_DEVICES = ("cpu", "strict")


def simulated_gpu(profile="gtx1050", *, model=None, optimizer=None, policy: str = "best_fit",
                  devices=SIMULATED_DEVICES) -> "SimulatedGPU":
    """A :class:`SimulatedGPU` for ``with simulated_gpu("gtx1050") as gpu:``.

    ``profile``: a short name (see ``minigrad.memory.profiles_table()``) or a
    :class:`~minigrad.memory.profiles.GPUProfile` (e.g. a scaled-down card).
    ``policy``: the allocator's fit policy (``"best_fit"`` or ``"first_fit"``).
    ``devices``: the device types whose allocations the card serves (a name
    such as ``"cpu"`` or a tuple of names). A card is single use: a second
    ``with`` on a finished one raises (make a new card with ``simulated_gpu()``).
    """
    return SimulatedGPU(profile, model=model, optimizer=optimizer, policy=policy, devices=devices)


def _device_types(devices) -> tuple[str, ...]:
    """``devices`` as a tuple of device-type names: one name (``"cpu"``) is one device, not its letters."""
    if isinstance(devices, str):
        devices = (devices,)
    try:
        names = tuple(devices)
    except TypeError:
        raise TypeError(f"simulated_gpu: devices must be a device name such as 'cpu' or a tuple of names, "
                        f"got {type(devices).__name__} {devices!r}") from None
    bad = [d for d in names if not isinstance(d, str) or not d]
    if bad or not names:
        raise TypeError(f"simulated_gpu: devices must be device names such as 'cpu' or 'strict', got {devices!r}")
    return names


class SimulatedGPU:
    """A card's memory budget over the block; see the module docstring. Made by :func:`simulated_gpu`.

    Invariants while active: every live buffer of a simulated device that the
    core knows has exactly one allocated block (``live`` maps its buffer id
    to ``[address, nbytes, category, op]``); ``sum(by_category().values())``
    is the exact bytes of those buffers; the allocator's reserved bytes never
    exceed the card's usable bytes.
    """

    def __init__(self, profile="gtx1050", *, model=None, optimizer=None, policy: str = "best_fit",
                 devices=SIMULATED_DEVICES) -> None:
        self.profile = get_profile(profile)
        if self.profile.usable_bytes <= 0:
            raise ValueError(f"simulated_gpu: {self.profile.short_name} has no memory left for tensors "
                             f"({self.profile.memory_bytes} bytes, CUDA context {self.profile.context_bytes} bytes)")
        self.allocator = CachingAllocator(capacity=self.profile.usable_bytes, policy=policy)
        self.devices = _device_types(devices)
        self.model, self.optimizer = model, optimizer
        self.live: dict[int, list] = {}
        self._by_category = dict.fromkeys(CATEGORIES, 0)
        self._seen: set[int] = set()
        self._phases: list[str] = []  # the backward passes and optimizer steps in progress
        self._handles: list = []
        self.num_ooms = 0
        self.active = False
        self.finished = False

    # ------------------------------------------------------------------ context

    def __enter__(self) -> "SimulatedGPU":
        if self.active:
            raise RuntimeError("simulated_gpu: this card is already active; make a new one with simulated_gpu()")
        if self.finished:
            raise RuntimeError(
                f"simulated_gpu: this {self.profile.short_name} has finished (its allocator still holds the blocks of "
                "the last block's buffers, so a second with-block would count them again); make a new card with "
                "simulated_gpu(...)")
        for buffer, (nbytes, tag, device) in buffers.live_buffers().items():
            if self._simulates(device):
                self._admit(buffer, nbytes, tag, None)  # an OOM here leaves nothing registered: see _admit
        self._handles = [listeners.add_allocation_guard(self._guard), listeners.add_allocation_observer(self._observe),
                         listeners.add_phase_observer(self._on_phase)]
        self.active = True
        try:
            if self.model is not None:
                self._register_module(self.model)
            if self.optimizer is not None:
                self._register_optimizer(self.optimizer)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind, error, tb) -> None:
        if isinstance(error, OutOfMemoryError) and tb is not None:
            traceback.clear_frames(tb)  # the failed step's arrays go now, while the card still sees them go
            gc.collect()
        for handle in self._handles:
            handle.remove()
        self._handles, self._seen, self._phases = [], set(), []
        self.model = self.optimizer = None
        self.active = False
        self.finished = True

    # ------------------------------------------------------------------ the core's guard and observers

    def _simulates(self, device: str) -> bool:
        return device.split(":", 1)[0] in self.devices

    def _admit(self, buffer: int, nbytes: int, tag: str, op: str | None) -> None:
        """Allocate a block for the buffer, or raise OutOfMemoryError (then nothing has changed but the cache)."""
        category = category_of(tag)
        try:
            address = self.allocator.malloc(nbytes, tag=category)
        except AllocatorOutOfMemoryError:
            self.num_ooms += 1
            if op is None and self._phases:
                op = "optimizer.step" if self._phases[-1] == "optimizer" else self._phases[-1]
            raise OutOfMemoryError(self._report(nbytes, category, op)) from None
        self.live[buffer] = [address, nbytes, category, op]
        self._by_category[category] += nbytes

    def _release(self, buffer: int) -> None:
        record = self.live.pop(buffer, None)
        if record is not None:
            address, nbytes, category, _ = record
            self.allocator.free(address)
            self._by_category[category] -= nbytes

    def _guard(self, event) -> None:
        kind, nbytes, buffer, tag, device, op, _scope = event
        if not self._simulates(device):
            return
        if kind == "reserve":
            self._admit(buffer, nbytes, tag, op)
        elif kind == "cancel":
            self._release(buffer)

    def _observe(self, event) -> None:
        kind, _nbytes, buffer, tag, _device, _op, _scope = event
        if kind == "free":
            self._release(buffer)
        elif kind == "retag":
            record = self.live.get(buffer)
            category = category_of(tag)
            if record is not None and record[2] != category:
                self._by_category[record[2]] -= record[1]
                self._by_category[category] += record[1]
                record[2] = category
                self.allocator.allocated[record[0]].tag = category

    def _on_phase(self, event) -> None:
        kind, name, owner, inputs = event
        if name != "forward":  # names the buffers no op made (gradients in flight, an optimizer's scratch)
            if kind == "enter":
                self._phases.append(name)
            elif self._phases and self._phases[-1] == name:
                self._phases.pop()
        if kind != "enter" or id(owner) in self._seen:
            return
        if name == "forward":
            self._seen.add(id(owner))
            self._register_module(owner)
            for value in inputs:
                if hasattr(value, "_data"):
                    self._register(value, "input")
        elif name == "optimizer":
            self._seen.add(id(owner))
            self._register_optimizer(owner)

    # ------------------------------------------------------------------ what existed before the block

    @staticmethod
    def _register(tensor, tag: str) -> None:
        if tensor is not None and buffers.buffer_id(tensor) is None:
            buffers.set_buffer_tag(tensor, tag)  # reported now: the guard admits it (or refuses: OutOfMemoryError)

    def _register_module(self, module) -> None:
        for tensor, tag in module_tensors(module):
            self._register(tensor, tag)

    def _register_optimizer(self, optimizer) -> None:
        for tensor, tag in optimizer_tensors(optimizer):
            self._register(tensor, tag)

    # ------------------------------------------------------------------ figures

    def _report(self, nbytes: int, category: str, op: str | None) -> OOMReport:
        largest = sorted(((r[1], r[2], r[3]) for r in self.live.values()), key=lambda row: -row[0])[:3]
        size = sizes.round_size(nbytes)  # no cached block fitted (else no new segment was asked for): this one was
        return OOMReport(
            segment=sizes.segment_size(size), pool=sizes.pool_for(size),
            card=self.profile.name, requested=nbytes, request_category=category, request_op=op,
            capacity=self.profile.memory_bytes, context=self.profile.context_bytes, usable=self.profile.usable_bytes,
            reserved=self.allocator.reserved_bytes, allocated=self.current,
            allocated_rounded=self.allocator.allocated_bytes, by_category=self.by_category(),
            largest_free_block=self.allocator.largest_free_block(), fragmentation=self.allocator.fragmentation(),
            largest_tensors=largest,
        )

    @property
    def current(self) -> int:
        """Exact bytes of the live buffers on the card."""
        return sum(self._by_category.values())

    def by_category(self) -> dict[str, int]:
        """Exact bytes alive on the card by category (all seven); they sum to ``current``."""
        return dict(self._by_category)

    def stats(self) -> dict[str, int]:
        """The allocator's statistics, named as ``torch.cuda.memory_stats()`` names them."""
        return self.allocator.memory_stats()

    def __repr__(self) -> str:
        state = "active" if self.active else "finished"
        return (f"<simulated {self.profile.short_name} ({state}): {self.current:,} bytes live, "
                f"{self.allocator.reserved_bytes:,} of {self.profile.usable_bytes:,} usable bytes reserved>")
