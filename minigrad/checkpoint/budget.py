"""``budget(nbytes)``: train under a memory budget with no plan; what does not fit is evicted and made again.

::

    with minigrad.checkpoint.budget(2_000_000) as b:   # at most 2 MB of saved activations held at once
        loss = loss_fn(model(x), y)
        loss.backward()                                 # evicted activations come back when a node needs them
    print(b.stats.report())                             # high-water mark, evictions, recompute overhead

``checkpoint`` and ``checkpoint_sequential`` need a plan: which blocks to
recompute. Dynamic Tensor Rematerialization (Kirisame et al., "Dynamic
Tensor Rematerialization", ICLR 2021) needs none: it treats memory as a
cache. Whenever a saved tensor would push the bytes held for backward over
the budget, it evicts the resident one with the lowest
``h = cost / (bytes x staleness)`` - cheap to make again, big, and unused for
long (:mod:`.eviction`) - where the cost counts the evicted tensors that
making it again would need too, cascading. When backward needs an evicted
tensor, it is made again on demand, and what it needs first.

Granularity: a module, not an op. The saved-tensor hooks tell ``pack`` what
is saved, not which op made it from which inputs, so the unit this mode can
run again is a *leaf module* (one with no children): module forward hooks
record each call's inputs, its random state (as ``checkpoint`` does, so a
dropout mask comes back the same), the buffers made during it and its cost
in FLOPs counted from shapes (:mod:`.budget_cost`; the paper measures time,
counting keeps the choices the same on every run). A buffer is managed if a
leaf module's call made it; its call's inputs are then kept (managed too, so
they may be evicted in turn) so that it can run again. Bookkeeping:
:mod:`.budget_pool`, on the records of :mod:`.budget_records`.

Invariants
- The bytes held (``stats.live``: each managed buffer once, however many
  nodes keep views of it) never exceed the budget: room is made before a
  buffer is held, else :class:`BudgetError` says which module needs how many
  bytes at once and the smallest budget that lets it run.
- Gradients are bitwise those of a run without a budget: a module runs again
  on the same inputs and random state, under the same autocast mode, and
  what it saves must match its first run (:class:`CheckpointError`); its
  buffers are put back after it (BatchNorm counts each batch once, as in
  ``checkpoint``).
- Never evicted: what the node running backward saved (it is brought back
  and pinned before the node runs), what a call being run again reads, what
  other code still refers to (evicting it would free nothing), buffers
  changed in place since they were made, and buffers of calls whose inputs
  changed in place.
- Nodes keep the budget's unpack for their whole life (as any saved-tensor
  hooks): backward after the block, a second backward with
  ``retain_graph=True``, all still work under the budget.
- Budgets nest: the innermost one governs its block alone. Entering the same
  budget again after it ended continues with the same buffers and figures
  (one budget across training steps); entering it while active raises.
- What is outside the budget: parameters and data, tensors saved by ops
  that run outside any leaf module (e.g. a loss computed with functions, not
  a module), which are kept as usual, and what a module's run makes and
  drops at once (its temporaries; during a rerun, the copies of its buffers
  that are still held). A call's input that no node saved is not held
  either: once the forward lets go of it, a rerun of its own call remakes it.
  Leaf modules are run again with their positional arguments (keyword
  arguments are not seen by module hooks).
"""

from __future__ import annotations

import numbers
import weakref

from minigrad.checkpoint.budget_cost import call_flops, output_tensors
from minigrad.checkpoint.budget_pool import Pool, too_small_message
from minigrad.checkpoint.budget_records import HELD, BufferInput, Call, SavedHandle
from minigrad.checkpoint.budget_stats import BudgetError, BudgetStats
from minigrad.checkpoint.budget_views import geometry_of
from minigrad.checkpoint import rng_states
from minigrad.nn.module_hooks import register_module_forward_hook, register_module_forward_pre_hook
from minigrad.tensor import Tensor, saved_tensors_hooks
from minigrad.tensor.backend import root_array

__all__ = ["budget"]

_active: list["budget"] = []  # the budgets whose block is running, innermost last: only that one listens


class budget:
    """Within the ``with`` block, keep at most ``nbytes`` of saved activations; see the module docstring.

    ``log=True`` keeps a :class:`~minigrad.checkpoint.budget_stats.BudgetEvent` per save, eviction,
    rematerialization and release in ``stats.events`` (for a timeline figure).
    """

    def __init__(self, nbytes: int, *, log: bool = False) -> None:
        if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral):
            raise TypeError(f"budget: nbytes must be an int number of bytes, got {type(nbytes).__name__} {nbytes!r}; "
                            "e.g. budget(int(0.35 * peak))")
        if nbytes <= 0:
            raise ValueError(f"budget: nbytes must be a positive number of bytes, got {nbytes}; a budget of 0 "
                             "could hold no saved tensor at all")
        self.nbytes = int(nbytes)
        self.pool = Pool(self.nbytes, log)
        self._names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module -> its dotted name
        self._nested = 0  # module calls running inside the current leaf call
        self._handles: list = []
        self._hooks: saved_tensors_hooks | None = None

    @property
    def stats(self) -> BudgetStats:
        """The live figures: ``budget``, ``live``, ``high_water``, ``evictions``, ``rematerializations``, ..."""
        return self.pool.stats

    @property
    def active(self) -> bool:
        return self.pool.active

    def __enter__(self) -> "budget":
        if self.pool.active:
            raise RuntimeError("budget: this budget is already active; nest another budget(...) to limit a part")
        self._handles = [register_module_forward_pre_hook(self._module_entered),
                         register_module_forward_hook(self._module_left, always_call=True)]
        self._hooks = saved_tensors_hooks(self._pack, self.pool.unpack)
        self._hooks.__enter__()
        self.pool.active = True
        self.pool.listen()
        _active.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _active.remove(self)
        self._hooks.__exit__(*exc)
        for handle in self._handles:
            handle.remove()
        self._handles, self._nested = [], 0
        self.pool.current_call = None
        self.pool.active = False
        self.pool.block_ended()
        self.pool.stop_listening_if_idle()

    def __repr__(self) -> str:
        s = self.stats
        return (f"<budget {s.budget:,} bytes ({'active' if self.active else 'inactive'}): {s.live:,} held, "
                f"high-water {s.high_water:,}, {s.evictions} evictions, {s.rematerializations} rematerializations>")

    # ------------------------------------------------------------------ module calls

    def _listening(self) -> bool:
        return bool(_active) and _active[-1] is self and not Pool.rerunning

    def _module_entered(self, module, args) -> None:
        if not self._listening():
            return
        pool = self.pool
        if pool.current_call is not None:  # a module called inside a leaf module's forward is part of that call
            self._nested += 1
            return
        if next(module.children(), None) is not None:  # a container: only its leaves run again
            if module not in self._names:
                self._name_modules(module)
            return
        with pool.operation:
            pool.tick()
            call = Call(module, self._name(module), [], [], rng_states.capture_rng(args), self._external(module))
            pool.current_call = call
            for arg in args:
                call.inputs.append(self._input(call, arg))

    def _input(self, call: Call, arg):
        """What the call keeps of one argument: a managed buffer it reads (or a view of one), or the argument."""
        if not isinstance(arg, Tensor):
            return arg
        call.versions.append((arg._version_counter, arg._version_counter.value))
        root = root_array(arg._data)
        buffer = self.pool.lookup(root)
        geometry = None if arg._data is root else geometry_of(arg._data, root)
        if buffer is None or (geometry is None and arg._data is not root):
            call.external.add(id(root))
            return arg
        buffer.consumers += 1  # loose inputs stay loose: once the forward lets go, a rerun of their call remakes them
        buffer.last_access = self.pool.clock
        return BufferInput(buffer, geometry, arg.requires_grad, arg._device)

    def _module_left(self, module, args, output) -> None:
        pool = self.pool
        call = pool.current_call
        if not self._listening() or call is None:
            return
        if self._nested:
            self._nested -= 1
            return
        pool.current_call = None
        with pool.operation:
            call.finished = True
            if output is None:  # forward raised: this call will not run again
                call.broken = True
            else:
                self._outputs(call, output)
                call.broken = not call.replayable()  # it changed an input in place
                call.cost = call_flops(module, args, output)
                call.input_bytes = sum({id(e.buffer): e.buffer.nbytes for e in call.inputs
                                        if type(e) is BufferInput}.values())
                pool.stats.forward_calls += 1
                pool.stats.forward_flops += call.cost
            if not call.live_made:
                pool.end_call(call)
        if call.shortfall and output is not None:
            raise BudgetError(too_small_message(call.name, call.shortfall, pool.budget))

    def _outputs(self, call: Call, output) -> None:
        for index, t in enumerate(output_tensors(output)):
            call.output_meta.append((t.shape, t.dtype))
            root = root_array(t._data)
            if self.pool.lookup(root) is None and id(root) not in call.external and \
                    (t._data is root or geometry_of(t._data, root) is not None):
                self.pool.new_buffer(call, ("output", index), root, t._device, t._version_counter)

    @staticmethod
    def _external(module) -> set:
        """The arrays of the module's parameters and buffers: read by the call, never managed."""
        tensors = [*module.parameters(recurse=False), *module.buffers(recurse=False)]
        return {id(root_array(t._data)) for t in tensors if t is not None}

    # ------------------------------------------------------------------ saving

    def _pack(self, t: Tensor):
        """The saved-tensor pack hook: a handle on a managed buffer, or ``t`` itself if it is outside the budget."""
        pool = self.pool
        call = pool.current_call
        data = t._data
        root = root_array(data)
        with pool.operation:
            pool.tick()
            if call is not None:
                index = len(call.saved_meta)
                call.saved_meta.append((t.shape, t.dtype))
            geometry = None if data is root else geometry_of(data, root)
            if data is not root and geometry is None:
                return t
            buffer = pool.lookup(root)
            if buffer is None:
                if call is None or id(root) in call.external:
                    return t
                buffer = pool.new_buffer(call, ("saved", index), root, t._device, t._version_counter)
            handle = SavedHandle(pool, buffer, geometry)
            buffer.last_access = pool.clock
            if buffer.state != HELD:
                pool.hold(buffer, call.name if call is not None else "an op outside any module")
            return handle

    # ------------------------------------------------------------------ names

    def _name_modules(self, root) -> None:
        for name, module in root.named_modules():
            if module not in self._names:
                self._names[module] = name

    def _name(self, module) -> str:
        name = self._names.get(module)
        return f"module '{name}' ({type(module).__name__})" if name else f"module {type(module).__name__}"
