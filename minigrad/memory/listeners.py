"""Which tag each event of the core gives a buffer, and listening only while something observes.

The core, ``nn`` and ``optim`` say what happened in their own words
(:mod:`minigrad.tensor.events`, module and optimizer hooks); these listeners
turn it into buffers of :mod:`.buffers` with a tag:

- a tensor made by a constructor, a factory or ``.to()``: ``"tensor"``;
- an op's output under ``no_grad()``: ``"temporary"``; a recorded op's
  output: ``"output"``, or ``"activation"`` if its node saved it; what a node
  saves for backward: ``"activation"`` (an ``"output"`` or ``"temporary"``
  buffer a later node saves becomes one), also when a saved-tensor pack hook
  kept it as a tensor (or in a holder with a ``tensor`` attribute), or when
  something else keeps it for backward and says
  so (:func:`kept_for_backward`: a checkpoint's inputs);
- gradients in flight during ``backward()`` and library working arrays:
  ``"temporary"``; a gradient that becomes a ``.grad``: ``"gradient"``;
- a tensor registered as a module's parameter or buffer: ``"parameter"``,
  ``"buffer"``; an optimizer's new state: ``"optimizer_state"``; an update
  rule's scratch: a block of :mod:`.scratch`.

Phases and module scopes come from :mod:`.phases`. Invariant: the listeners
are installed while an allocation observer (for buffers) or a phase
observer (for phases and scopes) is registered, and removed with the last
one, so a run nobody observes pays the core's empty-tuple tests only.
"""

from __future__ import annotations

from typing import Callable

from numpy import ndarray as _ndarray

from minigrad.memory import buffers, phases, scratch
from minigrad.memory.buffers import ACTIVATION, GRADIENT, OUTPUT, TEMPORARY, TENSOR, reported, track
from minigrad.nn.modules import module as nn_module
from minigrad.optim import optimizer as optim_optimizer
from minigrad.optim import update_kernels
from minigrad.tensor import events
from minigrad.tensor.backend import root_array
from minigrad.tensor import Tensor
from minigrad.tensor.function import AccumulateGrad

__all__ = ["add_allocation_observer", "remove_allocation_observer", "add_allocation_guard",
           "remove_allocation_guard", "add_phase_observer", "remove_phase_observer", "report_temporary",
           "kept_for_backward"]


def op_ran(cls, node, out, device) -> None:
    """An op's output, and what its node keeps alive for backward (after pack hooks)."""
    if node is None:
        track(out, device, TEMPORARY, cls.op)
        return
    op = cls.op
    out_root = out if out.base is None else root_array(out)
    out_key = id(out_root)
    out_saved = False
    # pack hooks wrapped each saved array in a tensor, which reported the new ones as "tensor": the op made those
    packed = getattr(node, "_unpack", None) is not None
    of_a_tensor = None  # indices of the saved arrays that use an input's (or the output's) buffer
    for index, array in enumerate(node._saved or ()):
        if not isinstance(array, Tensor):  # a pack hook's holder of the tensor (selective checkpointing's)
            array = getattr(array, "tensor", array)
        if isinstance(array, Tensor):  # a pack hook kept the tensor itself
            array = array._data
        if type(array) is not _ndarray and not (hasattr(array, "nbytes") and hasattr(array, "base")):
            continue  # not a buffer (a number, None, what a pack hook returned)
        root = array if array.base is None else root_array(array)
        key = id(root)
        if key == out_key:
            out_saved = True
        record = reported.get(key)
        if record is None or (packed and record[2] == TENSOR):
            if of_a_tensor is None:
                of_a_tensor = {check[0] for check in getattr(node, "_checks", ())}
            # an input tensor's buffer nobody reported was made before anyone observed (a target made before
            # track()): it is data, not something this op made; what the op made itself is an activation
            ours = key == out_key or index not in of_a_tensor
            if record is None:
                if key != out_key:  # the output is reported below
                    track(root, device, ACTIVATION if ours else TENSOR, op)
            elif ours:
                buffers.retag(record, ACTIVATION, op)
        elif record[2] == OUTPUT or record[2] == TEMPORARY:
            buffers.retag(record, ACTIVATION, op)
    track(out_root, device, ACTIVATION if out_saved else OUTPUT, op)
    if packed and not out_saved:
        record = reported.get(out_key)
        if record is not None and record[2] == TENSOR:  # reported by a pack hook's tensor, kept by no node
            buffers.retag(record, OUTPUT, op)


def kept_for_backward(tensor, op: str | None = None) -> None:
    """``tensor`` is kept alive for a backward pass outside the nodes (a checkpointed block keeps its inputs):
    an ``"output"`` or ``"temporary"`` buffer becomes an ``"activation"``; data and parameters keep their tags."""
    if not buffers.notify:
        return
    data = tensor._data
    record = reported.get(id(data if data.base is None else root_array(data)))
    if record is None:
        track(data, tensor._device, ACTIVATION, op)
    elif record[2] == OUTPUT or record[2] == TEMPORARY:
        buffers.retag(record, ACTIVATION, op)


def node_backward(node, grad, device) -> None:
    """A sum of gradients made by the driver is reported when a node uses it (most were reported already)."""
    if grad.base is not None or id(grad) not in reported:
        track(grad, device, TEMPORARY, node.backward_op)


def node_returned(node, grad, grads, device) -> None:
    """Gradients a backward returned are in flight; a leaf's usually becomes its ``.grad`` as is."""
    op = node.backward_op
    for parent, g in zip(node._parents, grads):
        if parent and g is not None:
            track(g, device, GRADIENT if type(parent) is AccumulateGrad else TEMPORARY, op)


def grad_stored(tensor, array) -> None:
    """A ``.grad`` is a gradient; one that was in flight becomes one."""
    record = reported.get(id(array)) if array.base is None else None
    if record is not None and record[2] == GRADIENT:
        return
    if record is None:
        record = reported.get(id(root_array(array)))
    if record is None:
        track(array, tensor._device, GRADIENT)
    elif record[2] == TEMPORARY:
        buffers.retag(record, GRADIENT)


def array_made(array, device) -> None:
    track(array, device if device is not None else _device_of(array), TEMPORARY)


def report_temporary(array, device=None):
    """Show a working array to observers (tagged ``"temporary"``, freed when it goes); returns it."""
    if buffers.notify:
        array_made(array, device)
    return array


def _device_of(array) -> str:
    module = type(array).__module__.split(".")[0]
    return "cpu" if module == "numpy" else module


def parameter_registered(module, name, param):
    if param is not None:
        buffers.set_buffer_tag(param, "parameter")


def buffer_registered(module, name, tensor):
    if tensor is not None:
        buffers.set_buffer_tag(tensor, "buffer")


def step_began(optimizer, args, kwargs) -> None:
    if phases.notify:
        phases.step_began(optimizer)
    if buffers.notify:
        scratch.step_began(optimizer)


def step_ended(optimizer, args, kwargs) -> None:
    scratch.step_ended(optimizer)  # before the phase ends: the block is part of the step
    phases.step_ended(optimizer)


# ---------------------------------------------------------------------------------------- installing

_buffer_handles: list = []
_phase_handles: list = []
_step_handles: list = []

_BUFFER_EVENTS = (("tensor_made", track), ("op_ran", op_ran), ("node_backward", node_backward),
                  ("node_returned", node_returned), ("grad_stored", grad_stored), ("array_made", array_made))


def _install() -> None:
    """Listen to what the observers registered now need, and to nothing else."""
    if buffers.observers and not _buffer_handles:
        _buffer_handles.extend(events.listen(name, fn) for name, fn in _BUFFER_EVENTS)
        _buffer_handles.append(nn_module.register_module_parameter_registration_hook(parameter_registered))
        _buffer_handles.append(nn_module.register_module_buffer_registration_hook(buffer_registered))
        _buffer_handles.append(update_kernels.register_update_hook(scratch.update_ran))
        _buffer_handles.append(optim_optimizer.register_state_init_hook(scratch.state_made))
    elif not buffers.observers and _buffer_handles:
        scratch.release()
        _remove(_buffer_handles)
    if phases.observers and not _phase_handles:
        _phase_handles.extend((
            nn_module.register_module_forward_pre_hook(phases.module_entered),
            nn_module.register_module_forward_hook(phases.module_left, always_call=True),
            events.listen("backward_began", phases.backward_began),
            events.listen("backward_ended", phases.backward_ended),
        ))
    elif not phases.observers and _phase_handles:
        _remove(_phase_handles)
        phases.close_open_step()
        phases.scopes.clear()
    observed = bool(buffers.observers or phases.observers)
    if observed and not _step_handles:
        _step_handles.append(optim_optimizer.register_optimizer_step_pre_hook(step_began))
        _step_handles.append(optim_optimizer.register_optimizer_step_post_hook(step_ended, always_call=True))
    elif not observed and _step_handles:
        _remove(_step_handles)


def _remove(handles: list) -> None:
    for handle in handles:
        handle.remove()
    handles.clear()


class RemovableHandle:
    """Returned by the ``add_*`` functions; ``handle.remove()`` unregisters (also a context manager)."""

    def __init__(self, fn, registry: list):
        self.fn, self.registry = fn, registry

    def remove(self) -> None:
        _unregister(self.registry, self.fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _register(registry: list, fn, what: str) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"{what}: expected a callable taking an event, got {fn!r}")
    registry.append(fn)
    buffers.sync()
    phases.sync()
    _install()
    return RemovableHandle(fn, registry)


def _unregister(registry: list, fn) -> None:
    if fn in registry:
        registry.remove(fn)
        buffers.sync()
        phases.sync()
        _install()


def add_allocation_observer(fn: Callable) -> RemovableHandle:
    """Call ``fn(event)`` for every tensor buffer allocated, freed or retagged from now on (an AllocationEvent)."""
    return _register(buffers.observers, fn, "add_allocation_observer")


def remove_allocation_observer(fn) -> None:
    _unregister(buffers.observers, fn)


def add_allocation_guard(fn: Callable) -> RemovableHandle:
    """Ask ``fn(event)`` to admit every new buffer before it is registered; it refuses by raising.

    Guards run only while an allocation observer is registered (register one beside the guard).
    """
    return _register(buffers.guards, fn, "add_allocation_guard")


def remove_allocation_guard(fn) -> None:
    _unregister(buffers.guards, fn)


def add_phase_observer(fn: Callable) -> RemovableHandle:
    """Call ``fn(event)`` whenever a forward (module call), backward or optimizer step starts or ends (a PhaseEvent)."""
    return _register(phases.observers, fn, "add_phase_observer")


def remove_phase_observer(fn) -> None:
    _unregister(phases.observers, fn)
