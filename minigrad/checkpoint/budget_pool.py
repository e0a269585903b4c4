"""The buffers a memory budget keeps for backward: held under its byte limit, evicted, and made again.

Every buffer the pool manages was made by one leaf module's call, and
running that call again makes it again (the records, and the four states a
buffer goes through, are in :mod:`.budget_records`). The pool holds buffers
when nodes save them, evicts by :mod:`.eviction`'s heuristic to make room,
brings evicted ones back when backward needs them, cascading through the
evicted inputs of their calls, and releases what nothing needs.

Invariants
- ``live`` is the exact bytes of the held buffers; a buffer is held only
  after :meth:`Pool.make_room` made room for it, so ``live <= budget``
  (else :class:`BudgetError`, or, during a module's forward, a shortfall
  that the module's end raises with the module's whole need).
- A buffer is *needed* while a handle refers to it or a live call reads it;
  a call is live while one of its buffers is held, loose or evicted: it keeps
  its inputs so that it can run again, and lets them go with its last buffer.
  Unneeded buffers are released at once (backward frees as it goes).
- Only a buffer whose eviction frees its memory is evicted (nothing else
  refers to it), one that nothing is using (not pinned by the node running
  backward or by a call being run again, not touched at this tick), whose
  call can run again (it finished, its inputs were not changed in place),
  whose rerun fits the budget (its call's inputs and itself), and that was
  not itself changed in place since it was made.
"""

from __future__ import annotations

import time
import weakref

from minigrad.checkpoint.budget_cost import output_tensors
from minigrad.checkpoint.budget_records import EVICTED, HELD, LOOSE, RELEASED, Buffer, BufferInput, Call, SavedHandle
from minigrad.checkpoint.budget_stats import BudgetError, BudgetStats
from minigrad.checkpoint.budget_views import cut
from minigrad.checkpoint.errors import CheckpointError
from minigrad.checkpoint.eviction import Candidate, choose_victim, remat_cost
from minigrad.checkpoint.recompute import autocast_as, detached, unchanged
from minigrad.checkpoint import rng_states
from minigrad.checkpoint.batchnorm_stats import buffers_put_back
from minigrad.memory import buffers as memory_buffers
from minigrad.tensor import enable_grad, events, saved_tensors_hooks
from minigrad.tensor.backend import root_array
from minigrad.tensor.tensor import make_tensor

__all__ = ["Pool", "too_small_message"]

class _Operation:
    """Marks the pool busy; releases that were asked for meanwhile happen when the outermost operation ends."""

    __slots__ = ("pool",)

    def __init__(self, pool: "Pool") -> None:
        self.pool = pool

    def __enter__(self) -> None:
        self.pool._busy += 1

    def __exit__(self, *exc) -> None:
        pool = self.pool
        pool._busy -= 1
        if not pool._busy:
            pool._settle_waiting()


class Pool:
    """The buffers of one budget; see the module docstring."""

    rerunning = 0  # > 0 while a call of any budget runs again (its module calls are no new calls)

    def __init__(self, budget: int, log: bool) -> None:
        self.budget = budget
        self.stats = BudgetStats(budget, events=[] if log else None)
        self.clock = 0  # logical time: one tick per pack, unpack, module call, node run and rerun
        self.by_root: dict[int, Buffer] = {}  # id(array) -> the held or loose buffer on it
        self.held: dict[Buffer, None] = {}  # in the order they were held: ties between victims go to the oldest
        self.current_call: Call | None = None  # the call whose forward is running (set by the budget)
        self.node_pins: list[Buffer] = []
        self.active = False
        self.handles = 0  # live SavedHandles
        self.operation = _Operation(self)
        self._busy = 0
        self._waiting: list[Buffer] = []  # buffers to look at again once the pool is not busy
        self._listeners: list = []

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    # ------------------------------------------------------------------ finding and making buffers

    def lookup(self, root) -> Buffer | None:
        """The held or loose buffer on the array ``root``, if the pool manages it."""
        buffer = self.by_root.get(id(root))
        return buffer if buffer is not None and buffer.ref() is root else None

    def new_buffer(self, call: Call, locator: tuple, root, device, counter) -> Buffer:
        """A loose buffer on ``root``, made by ``call``."""
        buffer = Buffer(call, locator, int(root.nbytes), device, counter)
        self._attach(buffer, root)
        buffer.state = LOOSE
        call.made.append(buffer)
        call.live_made += 1
        return buffer

    def _attach(self, buffer: Buffer, root) -> None:
        def died(ref, buffer=buffer):  # a loose buffer's array went: nothing can use it any more
            if buffer.ref is ref and buffer.state == LOOSE:
                self._settle(buffer)

        buffer.ref = weakref.ref(root, died)
        buffer.key = id(root)
        self.by_root[buffer.key] = buffer

    def hold(self, buffer: Buffer, what: str) -> None:
        """Keep a loose buffer (its array is alive), counted in ``live``: room is made for it first."""
        self._check_fits(self.make_room(buffer.nbytes), what)
        if not buffer.was_held:
            buffer.was_held = True
            self.stats.saved_buffers += 1
        self._keep(buffer, buffer.ref())
        self._log("save", buffer.name, buffer.nbytes)

    def _keep(self, buffer: Buffer, root) -> None:
        buffer.array = root
        buffer.state = HELD
        buffer.last_access = self.clock
        self.held[buffer] = None
        stats = self.stats
        stats.live += buffer.nbytes
        if stats.live > stats.high_water:
            stats.high_water = stats.live
        self._retag(buffer, memory_buffers.ACTIVATION)  # what trackers and simulated cards count it as

    @staticmethod
    def _retag(buffer: Buffer, tag: str) -> None:
        if memory_buffers.notify:
            record = memory_buffers.reported.get(buffer.key)
            if record is not None:
                memory_buffers.retag(record, tag)

    # ------------------------------------------------------------------ making room

    def make_room(self, nbytes: int) -> int | None:
        """Evict until ``nbytes`` more fit under the budget: None if they do, else the smallest budget they fit."""
        if self.stats.live + nbytes <= self.budget:
            return None
        candidates = [b for b in self.held if self._evictable(b)]
        if self.stats.live - sum(b.nbytes for b in candidates) + nbytes > self.budget:  # hopeless: evict nothing
            return self._smallest_budget(nbytes)
        refused: set[Buffer] = set()
        while self.stats.live + nbytes > self.budget:
            victim = choose_victim(
                Candidate(b, self._remat_cost(b), b.nbytes, self.clock - b.last_access)
                for b in candidates if b.state == HELD and b not in refused
            )
            if victim is None:
                return max(self.stats.live + nbytes, self._smallest_budget(nbytes))
            if not self._evict(victim.key):
                refused.add(victim.key)
        return None

    def _evictable(self, buffer: Buffer) -> bool:
        return self._free_to_go(buffer) and self._rerun_bytes(buffer) <= self.budget

    def _free_to_go(self, buffer: Buffer) -> bool:
        """Unused now, unchanged since it was made, and its call can run again."""
        return (buffer.pins == 0 and buffer.last_access < self.clock and buffer.counter.value == buffer.version
                and buffer.call.replayable())

    @staticmethod
    def _rerun_bytes(buffer: Buffer) -> int:
        """What bringing it back holds at once: its call's managed inputs and itself (a budget below cannot)."""
        return buffer.call.input_bytes + buffer.nbytes

    def _smallest_budget(self, nbytes: int) -> int:
        """The smallest budget under which ``nbytes`` more would fit now.

        A buffer that is not free to go stays under any budget; one that is free to go but whose rerun would
        not fit the budget goes only under a budget of at least its ``_rerun_bytes``. With these thresholds
        sorted, the bytes that must stay fall step by step as the budget grows: the first level they fit is it.
        """
        fixed = nbytes + sum(b.nbytes for b in self.held if not self._free_to_go(b))
        gated = sorted((self._rerun_bytes(b), b.nbytes) for b in self.held if self._free_to_go(b))
        staying = sum(n for _, n in gated)  # the gated bytes that stay under budgets below the next threshold
        for position in range(len(gated) + 1):
            if position:
                staying -= gated[position - 1][1]
            level = max(gated[position - 1][0] if position else 0, fixed + staying)
            if position == len(gated) or level < gated[position][0]:
                return level
        raise AssertionError("unreachable: the last level always fits")

    def _remat_cost(self, buffer: Buffer) -> float:
        """c(t) plus the cost of its evicted neighbourhood: the calls that would run again to bring it back."""
        def evicted_parents(call: Call):
            return [e.buffer.call for e in call.inputs if type(e) is BufferInput and e.buffer.state == EVICTED]

        return remat_cost(buffer.call, lambda call: call.cost, evicted_parents)

    def _evict(self, buffer: Buffer) -> bool:
        """Free a held buffer; False (and nothing changes) if something else refers to it, so nothing would be freed."""
        ref = buffer.ref
        buffer.array = None
        if ref() is not None:
            buffer.array = ref()
            return False
        self._unhold(buffer)
        self._detach(buffer)
        buffer.state = EVICTED
        self.stats.evictions += 1
        self.stats.evicted_bytes += buffer.nbytes
        self._log("evict", buffer.name, buffer.nbytes)
        return True

    def _unhold(self, buffer: Buffer) -> None:
        del self.held[buffer]
        self.stats.live -= buffer.nbytes

    def _detach(self, buffer: Buffer) -> None:
        if self.by_root.get(buffer.key) is buffer:
            del self.by_root[buffer.key]
        buffer.ref = buffer.key = None

    def _check_fits(self, need: int | None, what: str) -> None:
        """Raise :class:`BudgetError` if room could not be made; during a module's forward, note the shortfall instead
        (the module's end raises it with everything the module needed)."""
        if need is None:
            return
        call = self.current_call
        if call is not None and not Pool.rerunning:
            call.shortfall = max(call.shortfall, need)
            return
        raise BudgetError(too_small_message(what, need, self.budget))

    # ------------------------------------------------------------------ bringing buffers back

    def materialize(self, buffer: Buffer) -> None:
        """Make sure ``buffer`` is held, running its call again (and the calls of its evicted inputs first)."""
        if buffer.state == HELD:
            return
        if buffer.state == LOOSE and buffer.ref() is not None:  # alive elsewhere: hold it, nothing to recompute
            self.hold(buffer, buffer.call.name)
            return
        if buffer.state == LOOSE:  # its array went a moment ago; the pool has not looked at it yet
            self._detach(buffer)
            buffer.state = EVICTED
        if buffer.state != EVICTED:
            raise RuntimeError(f"budget: {buffer.name} was released while a node still needs it; this is a bug")
        self._rerun(buffer.call, buffer)

    def _rerun(self, call: Call, target: Buffer) -> None:
        """Run ``call`` again to bring back ``target``, and its other evicted buffers that fit without evicting."""
        pinned = []
        try:
            for entry in call.inputs:
                if type(entry) is BufferInput:
                    self.materialize(entry.buffer)
                    entry.buffer.pins += 1
                    entry.buffer.last_access = self.clock
                    pinned.append(entry.buffer)
            self.tick()  # a rerun is an event: what the cascade brought back so far is older than what it makes now
            self._check_fits(self.make_room(target.nbytes), f"running {call.name} again")
            wanted, nbytes = [target], target.nbytes
            for other in call.made:
                fits = self.stats.live + nbytes + other.nbytes <= self.budget
                if other is not target and other.state == EVICTED and fits:
                    wanted.append(other)
                    nbytes += other.nbytes
            self._check_inputs_unchanged(call)
            start = time.perf_counter()
            saved, outputs, read = self._run_again(call)
            for buffer in wanted:
                kind, index = buffer.locator
                root = root_array((saved if kind == "saved" else outputs)[index]._data)
                if id(root) in read:
                    raise CheckpointError(
                        f"budget: running {call.name} again gave one of its inputs where its first run made "
                        f"{kind} tensor {index}: the module must compute the same thing each time it runs")
                last_access = buffer.last_access
                self._attach(buffer, root)
                self._keep(buffer, root)
                if buffer is not target:  # brought back because it fitted, not because it is used now
                    buffer.last_access = last_access
            stats = self.stats
            stats.recompute_seconds += time.perf_counter() - start
            stats.rematerializations += 1
            stats.recomputed_flops += call.cost
            self._log("remat", call.name, nbytes)
        finally:
            for buffer in pinned:
                buffer.pins -= 1

    def _run_again(self, call: Call) -> tuple[list, list, set]:
        """The tensors a second run of ``call`` saves, its outputs (same inputs and random state), and the ids of
        the arrays it read."""
        args = []
        for entry in call.inputs:
            if type(entry) is BufferInput:
                t = make_tensor(cut(entry.buffer.array, entry.geometry), entry.device)
                args.append(t.requires_grad_(True) if entry.requires_grad else t)
            else:
                args.append(detached(entry))
        saved: list = []

        def keep(t):
            saved.append(t)
            return t

        Pool.rerunning += 1
        try:
            with rng_states.restored_rng(call.rng), autocast_as(call.autocast), enable_grad(), buffers_put_back(), \
                    saved_tensors_hooks(keep, unchanged):
                outputs = output_tensors(call.module(*args))
        finally:
            Pool.rerunning -= 1
        got = [(t.shape, t.dtype) for t in saved], [(t.shape, t.dtype) for t in outputs]
        if got != (call.saved_meta, call.output_meta):
            raise CheckpointError(
                f"budget: running {call.name} again saved {len(saved)} tensors and returned {len(outputs)} "
                f"(shapes {got[0]}, {got[1]}); its first run saved {len(call.saved_meta)} and returned "
                f"{len(call.output_meta)} ({call.saved_meta}, {call.output_meta}). A module under a budget must "
                "compute the same thing each time it runs, from positional arguments only"
            )
        return saved, outputs, {id(root_array(a._data)) for a in args if hasattr(a, "_data")} | call.external

    def _check_inputs_unchanged(self, call: Call) -> None:
        for position, (counter, version) in enumerate(call.versions):
            if counter.value != version:
                raise RuntimeError(
                    f"budget: input {position} of {call.name} was modified in place after the forward (version "
                    f"{version} -> {counter.value}); running it again to bring back its saved tensors would see "
                    "other values: clone the tensor before changing it"
                )

    # ------------------------------------------------------------------ backward

    def unpack(self, packed):
        """The saved-tensor unpack hook: the array a handle stands for, brought back if it was evicted."""
        if type(packed) is not SavedHandle:
            return packed
        with self.operation:
            self.tick()
            buffer = packed.buffer
            self.materialize(buffer)
            buffer.last_access = self.clock
            return cut(buffer.array, packed.geometry)

    def node_starting(self, node, grad, device) -> None:
        """A node's backward is about to run: bring back everything it saved, and pin it until the next node runs."""
        self.unpin_node()
        group = [h.buffer for h in node._saved or () if type(h) is SavedHandle and h.pool is self]
        if not group:
            return
        with self.operation:
            self.tick()
            for buffer in group:
                self.materialize(buffer)
                buffer.pins += 1
                buffer.last_access = self.clock
                self.node_pins.append(buffer)

    def unpin_node(self, *_) -> None:
        for buffer in self.node_pins:
            buffer.pins -= 1
        self.node_pins = []

    def listen(self) -> None:
        if not self._listeners:
            self._listeners = [events.listen("node_backward", self.node_starting),
                               events.listen("backward_ended", self.unpin_node)]

    def stop_listening_if_idle(self) -> None:
        """Backward may run after the ``with`` block, so the pool listens until no node keeps a handle."""
        if not self.active and not self.handles:
            for handle in self._listeners:
                handle.remove()
            self._listeners = []

    # ------------------------------------------------------------------ letting go

    def handle_dropped(self, buffer: Buffer) -> None:
        buffer.handles -= 1
        self.handles -= 1
        self._settle(buffer)
        if not self.handles:
            self.stop_listening_if_idle()

    def end_call(self, call: Call) -> None:
        """The call can never run again: let go of its inputs (and of its arguments' memory)."""
        if call.ended:
            return
        call.ended = True
        for entry in call.inputs:
            if type(entry) is BufferInput:
                entry.buffer.consumers -= 1
                self._settle(entry.buffer)
        call.inputs, call.rng = [], None

    def block_ended(self) -> None:
        """Nothing can save a loose buffer that nothing needs any more (a model's output): let it and its call go."""
        with self.operation:
            for buffer in [b for b in self.by_root.values() if b.state == LOOSE and not b.needed]:
                self._release(buffer)

    def _settle(self, buffer: Buffer) -> None:
        """Look at ``buffer`` again (now, or when the pool's current operation ends): release it if unneeded."""
        self._waiting.append(buffer)
        if not self._busy:
            self._settle_waiting()

    def _settle_waiting(self) -> None:
        while self._waiting:
            self._busy += 1
            try:
                waiting, self._waiting = self._waiting, []
                for buffer in waiting:
                    self._release_if_unneeded(buffer)
            finally:
                self._busy -= 1

    def _release_if_unneeded(self, buffer: Buffer) -> None:
        """Let go of what nothing needs; a needed loose buffer whose array went is evicted (made again if asked)."""
        state = buffer.state
        if state == HELD:
            if buffer.needed:
                return
            ref = buffer.ref
            buffer.array = None
            self._unhold(buffer)
            self._log("release", buffer.name, buffer.nbytes)
            if ref() is not None:  # other code still uses it (a model's output): it may be saved again
                buffer.state = LOOSE
                self._retag(buffer, memory_buffers.OUTPUT)
                return
        elif state == LOOSE:
            if buffer.ref() is not None:
                return
            if buffer.needed:  # a call's input that no node saved: the forward let go of it, a rerun remakes it
                self._detach(buffer)
                buffer.state = EVICTED
                return
        elif state != EVICTED or buffer.needed:
            return
        self._release(buffer)

    def _release(self, buffer: Buffer) -> None:
        self._detach(buffer)
        buffer.state = RELEASED
        call = buffer.call
        call.live_made -= 1
        if not call.live_made and call.finished:
            self.end_call(call)

    # ------------------------------------------------------------------ the log

    def _log(self, kind: str, name: str, nbytes: int) -> None:
        if self.stats.events is not None:
            self.stats._record(kind, name, nbytes, self.clock)


def too_small_message(what: str, need: int, budget: int) -> str:
    return (
        f"budget: {what} needs {need:,} bytes of saved activations held at once (what it reads, makes and "
        f"saves, with what cannot be evicted at that moment), more than the budget of {budget:,} bytes. The "
        f"smallest budget that lets it run is {need:,} bytes (budget({need})); or use a smaller batch"
    )
