"""``minigrad.memory.track()``: every byte of a training step, by category, over time, per module.

::

    with minigrad.memory.track() as mem:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    mem.peak, mem.peak_by_category, mem.by_module(), print(mem.report())

The tracker is an allocation observer of the buffer registry
(:mod:`minigrad.memory.buffers`) and a phase observer (:mod:`.phases`): it counts *buffers*, the memory behind
tensors, so a view is never counted twice, and a buffer is counted as freed
when its last user (tensor, view, array saved for backward) goes. The
counting itself (bytes by category, the peak and its split) is
:func:`minigrad.memory.counting.count_events`, called through its module, so
``use_exercise("8.5")`` makes the tracker count with a learner's version;
what is here is the bookkeeping around it: phases, modules, the timeline,
the tensors that existed before the block.

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
- With no tracker active, nothing runs: the core's events are one empty-tuple
  test each (:mod:`.listeners` listens only while something observes).

Why it stays cheap while active: the registry appends each allocation event to
the tracker's list (a C call, no Python code of the tracker runs per event);
the events are counted in order when a model's forward ends, before anything
is registered, or when a figure is read. Each event names the module running (its ``scope``), so module calls
inside a model cost no call to the tracker either. ``benchmarks/memory_tracker_overhead.py``
measures what remains on the MNIST MLP epoch.
"""

from __future__ import annotations

from itertools import repeat

from minigrad.memory import buffers, counting, listeners
from minigrad.memory.categories import ACTIVATION, CATEGORIES, category_of
from minigrad.memory.ground_truth import CupyPoolProbe, TracemallocProbe
from minigrad.memory.owned import module_tensors, optimizer_tensors
from minigrad.memory.timeline import TimelineEvent, format_timeline, timeline_rows

__all__ = ["Tracker", "track"]


_CATEGORY_OF_TAG = counting._CATEGORY_OF_TAG


def track(model=None, optimizer=None, *, ground_truth: bool = False, timeline: bool = True,
          tracemalloc: bool | None = None) -> "Tracker":
    """A :class:`Tracker` to use as ``with track() as mem:``; single use (a finished one refuses a second ``with``).

    ``model`` / ``optimizer`` (optional) have their existing parameters,
    gradients and state counted from the start and name the modules in the
    timeline. ``ground_truth=True`` also runs tracemalloc, the CPU allocators'
    own count, beside the tracker's (``tracemalloc_peak``, a line of
    ``report()``; on a GPU CuPy's pool is sampled either way). It is off by
    default because tracemalloc is expensive: it hooks
    every allocation Python and NumPy make, which costs about +45 % per step
    of the chapter-05 MLP, against about +8 % for the tracker alone
    (``benchmarks/memory_tracker_overhead.py``). ``tracemalloc=`` is the
    older name of ``ground_truth=``. ``timeline=False`` keeps only the
    counters (the cheapest tracking).
    """
    if tracemalloc is not None:
        ground_truth = tracemalloc
    return Tracker(model, optimizer, tracemalloc=ground_truth, timeline=timeline)


_RELABEL = ("relabel", None, None, ())  # what _update_phase gives _on_phase: no phase starts or ends


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

    def __init__(self, model=None, optimizer=None, *, tracemalloc: bool = False, timeline: bool = True) -> None:
        self.model, self.optimizer = model, optimizer
        self.use_tracemalloc, self.record_timeline = bool(tracemalloc), timeline
        self.baseline = self._preexisting = 0
        self._counts = counting.Counts()  # the live bytes, the peak and its split: counted by counting.count_events
        self.baseline_by_category = dict(self._counts.by_category)
        self._old: dict[int, int] = {}  # buffer_id -> bytes, for the buffers alive before the block, while alive
        self._old_live = self._old_at_peak = 0  # their bytes alive now, and at the peak
        self._registering = False  # True while a tensor that existed before the block is reported
        self.finished = False
        self.step = 0
        # The timeline, kept raw: the core appends its events to _raw (a C call, the cheapest observer there is) and
        # they are counted in order at the next phase event or read (_drain); _contexts marks where each
        # (step, phase, context op, module) starts. Rows are built only when asked (:attr:`timeline`).
        self._raw: list[tuple] = []
        self._counted = 0  # how many events of _raw are counted
        self._contexts: list[tuple[int, tuple]] = []
        self._module_of: dict[int, str] = {}  # buffer_id -> the module whose forward saved it, for activations
        self._called: dict[str, None] = {}  # the modules of the model whose forward runs, and any other called
        self._module_names: dict[int, list[str]] = {}  # id(model) -> the names of its modules, in order
        self._sample_pool = False
        self._names: dict[int, str] = {}
        self._named: list = []  # keeps named modules alive so their ids stay theirs
        self._auto: list[str] = []  # automatic phases in progress
        self._manual: str | None = None
        self._context_op: str | None = None  # names the allocations of a backward or optimizer step that no op made
        self._context: tuple | None = None  # (step, phase, context op) for the events that follow
        self._activation_by_module: dict[str, int] = {}
        self._saved_by_module: dict[str, int] = {}
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
        if self.finished:
            raise RuntimeError("memory.track: this tracker has finished (a tracker counts one with-block: entering it "
                               "again would count its buffers twice); make a new one with track()")
        self.active = True
        known = buffers.live_buffers()
        self._pool = CupyPoolProbe()
        self._sample_pool = self._pool.active
        if self.use_tracemalloc:
            self._tracemalloc = TracemallocProbe()
        # counted as they come where the timeline is off (nothing to keep) or the CuPy pool is sampled (at once)
        deferred = self.record_timeline and not self._sample_pool
        observer = self._raw.append if deferred else self._count_now
        self._handles = [listeners.add_allocation_observer(observer), listeners.add_phase_observer(self._on_phase)]
        self._counts = counting.Counts({buffer: (nbytes, category_of(tag)) for buffer, (nbytes, tag, _) in known.items()})
        self._old = {buffer: nbytes for buffer, (nbytes, _tag, _device) in known.items()}
        self.baseline = self._old_live = self._old_at_peak = self._counts.current
        self.baseline_by_category = dict(self._counts.by_category)
        self._update_phase()
        try:
            if self.model is not None:
                self._seen.add(id(self.model))
                self._name_modules(self.model)
                self._register_module(self.model)
            if self.optimizer is not None:
                self._seen.add(id(self.optimizer))
                self._register_optimizer(self.optimizer)
        except BaseException:  # the with-block never starts, so __exit__ never runs: stop observing here
            self._stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        try:
            self._drain()  # may raise: a learner's count_events plugged in with use_exercise("8.5")
        finally:
            self._stop()

    def _stop(self) -> None:
        """Stop observing and let the model go (also when counting raised); the tracker is finished."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._tracemalloc is not None:
            self._tracemalloc.stop()
            self.tracemalloc_peak = self._tracemalloc.peak
        if self._pool.active:
            self.device_pool_peak = self._pool.peak
        self._named, self._names, self._auto, self._seen = [], {}, [], set()  # let the model go
        self._module_names, self._called = {}, {}
        self._update_phase()
        self.active = False
        self.finished = True

    # ------------------------------------------------------------------ counting (the hot path while tracking)

    def _drain(self) -> None:
        """Count the events the core appended to ``_raw`` since the last call, in order (the hot path).

        :func:`minigrad.memory.counting.count_events` counts the bytes (by
        category, the peak and its split, the events it could not count);
        then one pass here names the module of each event (its ``scope``;
        with the timeline on, that name replaces the module in the kept
        event), keeps the bytes each module's forward saved, and follows the
        buffers that existed before the block. Where the timeline is off the
        events are dropped once counted.
        """
        raw = self._raw
        start, end = self._counted, len(raw)
        if start == end:
            return
        counts = self._counts
        peak_before = counts.peak
        counting.count_events(counts, raw, start)  # looked up at call time: use_exercise("8.5") swaps it
        peak_moved = counts.peak > peak_before
        peak_at = counts.peak_at if peak_moved else -1
        category_of_tag, module_of = _CATEGORY_OF_TAG, self._module_of
        by_module, names, seen = self._activation_by_module, self._names, self._called
        uncounted, old, registering = counts.uncounted, self._old, self._registering
        keep = self.record_timeline
        old_live = self._old_live
        last_scope = last_module = None  # events come in runs from one module: its name is looked up once a run
        for index in range(start, end):
            kind, nbytes, buffer, tag, device, op, scope = raw[index]
            module = None
            if scope is not None:  # the module running: its name
                if scope is not last_scope:
                    last_scope = scope
                    last_module = names.get(id(scope)) or type(scope).__name__
                    seen[last_module] = None
                module = last_module
                if keep:
                    raw[index] = (kind, nbytes, buffer, tag, device, op, module)
            if kind == "alloc":
                if registering:  # a tensor made before the block, reported late
                    old[buffer] = nbytes
                    old_live += nbytes
                if module is not None and category_of_tag[tag] == ACTIVATION:
                    module_of[buffer] = module
                    by_module[module] = by_module.get(module, 0) + nbytes
            elif kind == "free":
                if buffer in module_of:
                    by_module[module_of.pop(buffer)] -= nbytes
                if buffer in old:
                    old_live -= old.pop(buffer)
            elif index not in uncounted:  # a relabelling that moved the bytes
                if buffer in module_of:
                    by_module[module_of.pop(buffer)] -= nbytes
                if module is not None and category_of_tag[tag] == ACTIVATION:  # the module whose forward saved it
                    module_of[buffer] = module
                    by_module[module] = by_module.get(module, 0) + nbytes
            if index == peak_at:
                self._old_at_peak = old_live
        self._old_live = old_live
        if keep:
            self._counted = end
        else:
            del raw[:end]
            self._counted = 0
            counts.uncounted.clear()
            counts.previous.clear()

    def _count_now(self, event) -> None:
        """The observer where events are counted as they come (timeline off, or the CuPy pool sampled)."""
        self._raw.append(event)
        self._drain()
        if self._sample_pool and event[0] == "alloc" and event[4] != "cpu":
            self._pool.sample()

    def _on_phase(self, event) -> None:
        # the events so far keep the phase and step they were made in (_contexts marks where the next start);
        # they are counted when a forward ends (by_module needs them) or when something is registered or read
        kind, name, owner = event[0], event[1], event[2]
        auto = self._auto
        if kind == "enter":
            if name == "forward":  # a model's forward starts
                self._start_forward(event)
            elif name == "optimizer":
                if id(owner) not in self._seen:
                    self._seen.add(id(owner))
                    self._register_optimizer(owner)
                self._context_op = f"{type(owner).__name__}.step"
            else:
                self._context_op = name
            auto.append(name)
        elif kind == "exit":
            if name == "forward":
                self._drain()
                called = self._called  # what each module's forward left saved, now that they all returned
                self._saved_by_module.update(zip(called, map(self._activation_by_module.get, called, repeat(0))))
            else:
                self._context_op = None
                if name == "optimizer":
                    self.step += 1
            if auto and auto[-1] == name:
                auto.pop()
        # the phase label (automatic phases and the hand-set one) and the context; a change is marked for the timeline
        top = auto[-1] if auto else None
        label = top if self._manual is None else (f"{self._manual}:{top}" if top else self._manual)
        context = (self.step, label, self._context_op)
        if context != self._context:
            self._context = context
            if self.record_timeline:
                self._contexts.append((len(self._raw), context))

    def _start_forward(self, event) -> None:
        """Report what the model and its inputs held before the tracker saw them; list the model's modules as called."""
        owner = event.owner
        if id(owner) not in self._seen:
            self._seen.add(id(owner))
            self._name_modules(owner)
            self._register_module(owner)
        for value in event.inputs:
            data = getattr(value, "_data", None)  # a tensor's array; known already unless the block got it from outside
            if data is not None and id(data) not in buffers.reported and buffers.buffer_id(value) is None:
                self._register(value, "input")
        self._called = dict.fromkeys(self._module_names.get(id(owner), ()))  # in order; more join as they run

    # ------------------------------------------------------------------ phases

    def phase(self, name: str | None) -> _Mark:
        """Label what follows with ``name`` (e.g. ``"eval"``) until the next ``phase()`` call; also a ``with`` block.

        Automatic phases inside it show as ``"eval:forward"``. ``phase(None)`` clears the label.
        """
        previous = self._manual
        self._set_manual(None if name is None else str(name))
        return _Mark(self, previous)

    def _set_manual(self, name: str | None) -> None:
        self._drain()
        self._manual = name
        self._update_phase()

    def _update_phase(self) -> None:
        """Recompute the phase label and the context after a change that is not a phase event."""
        self._on_phase(_RELABEL)

    # ------------------------------------------------------------------ what existed before the block

    def _name_modules(self, root) -> None:
        if id(root) in self._module_names or not hasattr(root, "named_modules"):
            return
        root_name = type(root).__name__
        names = []
        for name, module in root.named_modules():
            if id(module) not in self._names:
                self._names[id(module)] = name or root_name
                self._named.append(module)
            names.append(self._names[id(module)])
        self._module_names[id(root)] = names

    def _register(self, tensor, tag: str) -> None:
        if tensor is not None and buffers.buffer_id(tensor) is None:
            self._drain()
            before = self._counts.current
            self._registering = True
            try:
                buffers.set_buffer_tag(tensor, tag)
            finally:  # what it reported (its buffer, the one new one) is what the tracker found there
                self._drain()
                self._registering = False
                self._preexisting += self._counts.current - before

    def _register_module(self, module) -> None:
        for tensor, tag in module_tensors(module):
            self._register(tensor, tag)

    def _register_optimizer(self, optimizer) -> None:
        for tensor, tag in optimizer_tensors(optimizer):
            self._register(tensor, tag)

    # ------------------------------------------------------------------ results

    @property
    def current(self) -> int:
        """Bytes alive now (the sum of the buffers counted and not freed)."""
        self._drain()
        return self._counts.current

    @property
    def peak(self) -> int:
        """The largest ``current`` seen."""
        self._drain()
        return self._counts.peak

    @property
    def peak_by_category(self) -> dict[str, int]:
        """``by_category()`` at the moment of the peak."""
        self._drain()
        return self._counts.peak_by_category

    @property
    def peak_in_block(self) -> int:
        """Bytes at the peak that the block itself allocated: ``peak`` less the buffers from before it still alive then.

        A gradient from an earlier step that ``zero_grad()`` freed before the
        peak is not part of the peak, so it is not subtracted; a tensor from
        before the block that was reported only after the peak is not either.
        """
        self._drain()
        return self._counts.peak - self._old_at_peak

    @property
    def preexisting(self) -> int:
        """Bytes of a model's and optimizer's existing tensors, counted when the tracker first saw them."""
        self._drain()
        return self._preexisting

    @property
    def peak_index(self) -> int | None:
        """The index in :attr:`timeline` of the event that reached the peak (None if nothing was allocated)."""
        self._drain()
        peak_at = self._counts.peak_at
        if peak_at is None or not self.record_timeline:
            return None
        return peak_at - sum(1 for i in self._counts.uncounted if i < peak_at)

    @property
    def events(self) -> list:
        """The core's events that the timeline shows (:class:`minigrad.memory.buffers.AllocationEvent`), in order."""
        self._drain()
        skip = self._counts.uncounted
        return [e for i, e in enumerate(self._raw) if i not in skip]

    def by_category(self) -> dict[str, int]:
        """Bytes alive now in each category (all seven, zeros included); they sum to ``current``."""
        self._drain()
        return dict(self._counts.by_category)

    def by_module(self) -> dict[str, int]:
        """Bytes each module's forward left saved for backward, measured when the model's latest forward returned.

        A buffer belongs to the module whose forward saved it (the innermost
        module running then): a ``Linear`` output saved by the ``ReLU`` after
        it counts for the ``ReLU``. Every module of the model is listed (0 for
        those that saved nothing), named as in ``model.named_modules()`` (the
        model itself by its class name), then any other module that ran.
        """
        self._drain()
        return dict(self._saved_by_module)

    @property
    def timeline(self) -> list[TimelineEvent]:
        """Every allocation, free and relabelling while active, in order (see :mod:`minigrad.memory.timeline`)."""
        self._drain()
        return timeline_rows(self._raw, self._contexts, self._counts.uncounted, self._counts.previous, self.baseline)

    def report(self) -> str:
        """A text table: bytes per category now and at the peak, the totals, and the ground truth beside them."""
        mib = 1024 * 1024
        self._drain()
        lines = [f"{'category':<16} {'now MiB':>10} {'at peak MiB':>12}"]
        for category in CATEGORIES:
            lines.append(f"{category:<16} {self._counts.by_category[category] / mib:>10.3f} "
                         f"{self.peak_by_category[category] / mib:>12.3f}")
        lines.append(f"{'total':<16} {self.current / mib:>10.3f} {self.peak / mib:>12.3f}")
        lines.append(f"tracked peak of what the block allocated: {self.peak_in_block / mib:.3f} MiB"
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
