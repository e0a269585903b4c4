"""``minigrad.memory.track()``: every byte of a training step, by category, over time, per module.

::

    with minigrad.memory.track() as mem:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    mem.peak, mem.peak_by_category, mem.by_module(), print(mem.report())

The tracker is an allocation observer and a phase observer of the core
(:mod:`minigrad.tensor.hooks`): it counts *buffers*, the memory behind
tensors, so a view is never counted twice, and a buffer is counted as freed
when its last user (tensor, view, array saved for backward) goes.

Invariants
- ``current`` is the sum of the live buffers it knows, exactly (bytes), and
  ``sum(by_category().values()) == current``; ``peak`` is the largest
  ``current`` seen and ``peak_by_category`` the split at that moment.
- Buffers alive before the block and already reported (another observer)
  are counted from the start (``baseline``); the parameters, gradients and
  optimizer state of a model and optimizer that existed before the block are
  reported when the model is first called / the optimizer first steps (or at
  once, if passed to ``track(model, optimizer)``): ``preexisting`` bytes.
- Phases are marked automatically: ``"forward"`` around the outermost module
  call, ``"backward"`` around ``backward()``, ``"optimizer"`` around
  ``Optimizer.step``; ``step`` counts the optimizer steps finished.
- With no tracker active, nothing runs: the core's hooks are one truthiness
  test each.
"""

from __future__ import annotations

from minigrad.memory.categories import ACTIVATION, CATEGORIES, CATEGORY_OF_TAG, OTHER, category_of
from minigrad.memory.ground_truth import CupyPoolProbe, TracemallocProbe
from minigrad.memory.owned import module_tensors, optimizer_tensors
from minigrad.memory.timeline import TimelineEvent, format_timeline
from minigrad.tensor import hooks

__all__ = ["Tracker", "track"]


def track(model=None, optimizer=None, *, tracemalloc: bool = True, timeline: bool = True) -> "Tracker":
    """A :class:`Tracker` to use as ``with track() as mem:``.

    ``model`` / ``optimizer`` (optional) have their existing parameters,
    gradients and state counted from the start and name the modules in the
    timeline. ``tracemalloc=True`` measures tracemalloc's peak beside the
    tracker's (CPU ground truth; it slows NumPy-heavy code a little);
    ``timeline=False`` keeps only the counters (the cheapest tracking).
    """
    return Tracker(model, optimizer, tracemalloc=tracemalloc, timeline=timeline)


class _Mark:
    """What ``Tracker.phase(name)`` returns: the label holds until the next ``phase()``, or until the ``with`` ends."""

    def __init__(self, tracker: "Tracker", previous: str | None) -> None:
        self.tracker, self.previous = tracker, previous

    def __enter__(self) -> "_Mark":
        return self

    def __exit__(self, *exc) -> None:
        self.tracker._set_manual(self.previous)


class Tracker:
    """Counts the bytes of every tensor buffer while active; see the module docstring. Made by :func:`track`."""

    def __init__(self, model=None, optimizer=None, *, tracemalloc: bool = True, timeline: bool = True) -> None:
        self.model, self.optimizer = model, optimizer
        self.use_tracemalloc, self.record_timeline = tracemalloc, timeline
        self.current = self.peak = self.baseline = self.preexisting = 0
        self._by_category = dict.fromkeys(CATEGORIES, 0)
        self.peak_by_category = dict(self._by_category)
        self.baseline_by_category = dict(self._by_category)
        self.peak_index: int | None = None  # the timeline index at which the peak was reached
        self.step = 0
        self.events: list[tuple] = []
        self._buffers: dict[int, list] = {}  # buffer_id -> [nbytes, category, module name]
        self._modules: list[str] = []  # names of the module calls in progress, innermost last
        self._module: str | None = None  # the innermost of them
        self._sample_pool = False
        self._names: dict[int, str] = {}
        self._named: list = []  # keeps named modules alive so their ids stay theirs
        self._auto: list[str] = []  # automatic phases in progress
        self._manual: str | None = None
        self._phase: str | None = None
        self._context_op: str | None = None  # names the allocations of a backward or optimizer step that no op made
        self._activation_by_module: dict[str, int] = {}
        self._saved_by_module: dict[str, int] = {}
        self._registering = False
        self._seen: set[int] = set()  # ids of the modules and optimizers whose existing tensors were reported
        self.tracemalloc_peak: int | None = None
        self.device_pool_peak: int | None = None
        self._tracemalloc = self._pool = None
        self._handles: list = []
        self.active = False

    # ------------------------------------------------------------------ context

    def __enter__(self) -> "Tracker":
        if self.active:
            raise RuntimeError("memory.track: this tracker is already active; make a new one with track()")
        self.active = True
        known = hooks.live_buffers()
        self._pool = CupyPoolProbe()
        self._sample_pool = self._pool.active
        if self.use_tracemalloc:
            self._tracemalloc = TracemallocProbe()
        self._handles = [hooks.add_allocation_observer(self._on_allocation), hooks.add_phase_observer(self._on_phase)]
        for buffer, (nbytes, tag, _device) in known.items():
            category = category_of(tag)
            self._buffers[buffer] = [nbytes, category, None]
            self._by_category[category] += nbytes
            self.current += nbytes
        self.baseline = self.peak = self.current
        self.baseline_by_category = dict(self._by_category)
        self.peak_by_category = dict(self._by_category)
        if self.model is not None:
            self._name_modules(self.model)
            self._register_module(self.model)
        if self.optimizer is not None:
            self._register_optimizer(self.optimizer)
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._tracemalloc is not None:
            self._tracemalloc.stop()
            self.tracemalloc_peak = self._tracemalloc.peak
        if self._pool.active:
            self.device_pool_peak = self._pool.peak
        self._named, self._names, self._modules, self._auto, self._seen = [], {}, [], [], set()  # let the model go
        self._module = None
        self._update_phase()
        self.active = False

    # ------------------------------------------------------------------ observers (the hot path while tracking)

    def _on_allocation(self, event) -> None:
        kind, nbytes, buffer_id, tag, device, op = event
        if kind == "free":  # the most frequent event with "alloc"; both touch as few attributes as they can
            record = self._buffers.pop(buffer_id, None)
            if record is None:  # a buffer this tracker never counted
                return
            _, category, module = record
            if module is not None and category == ACTIVATION:
                self._activation_by_module[module] -= nbytes
            self._by_category[category] -= nbytes
            current = self.current = self.current - nbytes
            if self.record_timeline:
                self.events.append((self.step, self._phase, kind, category, -nbytes, current, op or self._context_op,
                                    module, buffer_id, None))
            return
        if kind == "alloc":
            category = CATEGORY_OF_TAG.get(tag, OTHER)
            module = self._module
            self._buffers[buffer_id] = [nbytes, category, module]
            if module is not None and category == ACTIVATION:
                saved = self._activation_by_module
                saved[module] = saved.get(module, 0) + nbytes
            if self._registering:
                self.preexisting += nbytes
            by_category = self._by_category
            by_category[category] += nbytes
            current = self.current = self.current + nbytes
            if current > self.peak:
                self.peak = current
                self.peak_by_category = by_category.copy()
                self.peak_index = len(self.events)
            if self._sample_pool and device != "cpu":
                self._pool.sample()
            previous = None
        else:  # "retag": the bytes move to another category
            record = self._buffers.get(buffer_id)
            category = CATEGORY_OF_TAG.get(tag, OTHER)
            if record is None or record[1] == category:
                return
            _, previous, module = record
            saved = self._activation_by_module
            if module is not None and previous == ACTIVATION:
                saved[module] -= nbytes
            if category == ACTIVATION:  # the module whose forward saved it owns it now
                module = self._module
                if module is not None:
                    saved[module] = saved.get(module, 0) + nbytes
            record[1], record[2] = category, module
            self._by_category[previous] -= nbytes
            self._by_category[category] += nbytes
            current = self.current
        if self.record_timeline:
            self.events.append((self.step, self._phase, kind, category, nbytes, current, op or self._context_op,
                                module, buffer_id, previous))

    def _on_phase(self, event) -> None:
        kind, name, owner, _inputs = event
        if name == "forward":
            if kind == "enter":
                if not self._modules:  # the outermost module call: the forward phase starts
                    self._start_forward(event)
                self._module = self._names.get(id(owner)) or type(owner).__name__
                self._modules.append(self._module)
            else:
                module = self._modules.pop()
                self._module = self._modules[-1] if self._modules else None
                self._saved_by_module[module] = self._activation_by_module.get(module, 0)
                if not self._modules:
                    self._pop(name)
        elif kind == "enter":
            if name == "optimizer" and id(owner) not in self._seen:
                self._seen.add(id(owner))
                self._register_optimizer(owner)
            self._push(name)
            self._context_op = f"{type(owner).__name__}.step" if name == "optimizer" else name
        else:
            self._pop(name)
            self._context_op = None
            if name == "optimizer":
                self.step += 1

    def _start_forward(self, event) -> None:
        """Report what the model and its inputs held before the tracker saw them, then mark the phase."""
        owner = event.owner
        if id(owner) not in self._seen:
            self._seen.add(id(owner))
            self._name_modules(owner)
            self._register_module(owner)
        for value in event.inputs:
            if hasattr(value, "_data"):
                self._register(value, "input")
        self._push("forward")

    # ------------------------------------------------------------------ phases

    def phase(self, name: str | None) -> _Mark:
        """Label what follows with ``name`` (e.g. ``"eval"``) until the next ``phase()`` call; also a ``with`` block.

        Automatic phases inside it show as ``"eval:forward"``. ``phase(None)`` clears the label.
        """
        previous = self._manual
        self._set_manual(None if name is None else str(name))
        return _Mark(self, previous)

    def _set_manual(self, name: str | None) -> None:
        self._manual = name
        self._update_phase()

    def _push(self, name: str) -> None:
        self._auto.append(name)
        self._update_phase()

    def _pop(self, name: str) -> None:
        if self._auto and self._auto[-1] == name:
            self._auto.pop()
        self._update_phase()

    def _update_phase(self) -> None:
        auto = self._auto[-1] if self._auto else None
        self._phase = auto if self._manual is None else (f"{self._manual}:{auto}" if auto else self._manual)

    # ------------------------------------------------------------------ what existed before the block

    def _name_modules(self, root) -> None:
        if id(root) in self._names or not hasattr(root, "named_modules"):
            return
        root_name = type(root).__name__
        for name, module in root.named_modules():
            if id(module) not in self._names:
                self._names[id(module)] = name or root_name
                self._named.append(module)

    def _register(self, tensor, tag: str) -> None:
        if tensor is not None and hooks.buffer_id(tensor) is None:
            self._registering = True
            try:
                hooks.set_buffer_tag(tensor, tag)
            finally:
                self._registering = False

    def _register_module(self, module) -> None:
        for tensor, tag in module_tensors(module):
            self._register(tensor, tag)

    def _register_optimizer(self, optimizer) -> None:
        for tensor, tag in optimizer_tensors(optimizer):
            self._register(tensor, tag)

    # ------------------------------------------------------------------ results

    def by_category(self) -> dict[str, int]:
        """Bytes alive now in each category (all seven, zeros included); they sum to ``current``."""
        return dict(self._by_category)

    def by_module(self) -> dict[str, int]:
        """Bytes each module's forward left saved for backward, measured when its latest forward returned.

        A buffer belongs to the module whose forward saved it (the innermost
        module running then): a ``Linear`` output saved by the ``ReLU`` after
        it counts for the ``ReLU``. Modules are named as in
        ``model.named_modules()`` (the model itself by its class name).
        """
        return dict(self._saved_by_module)

    @property
    def timeline(self) -> list[TimelineEvent]:
        """Every allocation, free and relabelling while active, in order (see :mod:`minigrad.memory.timeline`)."""
        return [TimelineEvent(i, *row) for i, row in enumerate(self.events)]

    def report(self) -> str:
        """A text table: bytes per category now and at the peak, the totals, and the ground truth beside them."""
        mib = 1024 * 1024
        lines = [f"{'category':<16} {'now MiB':>10} {'at peak MiB':>12}"]
        for category in CATEGORIES:
            lines.append(f"{category:<16} {self._by_category[category] / mib:>10.3f} "
                         f"{self.peak_by_category[category] / mib:>12.3f}")
        lines.append(f"{'total':<16} {self.current / mib:>10.3f} {self.peak / mib:>12.3f}")
        lines.append(f"tracked peak of what the block allocated: {(self.peak - self.baseline - self.preexisting) / mib:.3f} MiB"
                     f" (baseline {self.baseline / mib:.3f} MiB, reported late {self.preexisting / mib:.3f} MiB)")
        if self.tracemalloc_peak is not None:
            lines.append(f"tracemalloc peak (Python + NumPy):        {self.tracemalloc_peak / mib:.3f} MiB")
        if self.device_pool_peak is not None:
            lines.append(f"CuPy pool used_bytes peak (sampled):      {self.device_pool_peak / mib:.3f} MiB")
        modules = self.by_module()
        if modules:
            lines.append("saved for backward by module (KiB): " +
                         ", ".join(f"{name} {nbytes / 1024:.1f}" for name, nbytes in modules.items()))
        return "\n".join(lines)

    def format_timeline(self, limit: int = 40) -> str:
        return format_timeline(self.timeline, limit)

    def __repr__(self) -> str:
        state = "active" if self.active else "finished"
        return f"<memory Tracker {state}: current {self.current} bytes, peak {self.peak} bytes, {len(self.events)} events>"
