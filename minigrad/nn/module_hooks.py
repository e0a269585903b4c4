"""PyTorch's module hooks: code that runs before and after a module's forward, and in its backward.

- ``module.register_forward_pre_hook(hook)``: ``hook(module, args)`` before
  ``forward``; it may return new positional arguments (a value that is not a
  tuple is wrapped in one).
- ``module.register_forward_hook(hook, always_call=False)``:
  ``hook(module, args, output)`` after ``forward``; it may return a new
  output. With ``always_call=True`` it also runs when ``forward`` (or a hook)
  raised (``output`` is then None), before the error propagates.
- ``module.register_full_backward_hook(hook)``:
  ``hook(module, grad_input, grad_output)`` once the gradients of the
  module's inputs are known; ``grad_output`` holds one tensor (or None) per
  tensor output, ``grad_input`` one per positional argument (None where it is
  not a tensor or gets no gradient). It may return a new ``grad_input``.
- the same for every module at once: :func:`register_module_forward_pre_hook`,
  :func:`register_module_forward_hook`; global hooks run before a module's
  own. :func:`register_module_parameter_registration_hook` and
  :func:`register_module_buffer_registration_hook` hear of each parameter
  and buffer a module registers (``hook(module, name, value)``, which may
  return a replacement).

Each registration returns a handle; ``handle.remove()`` removes the hook.
With no hook registered, a module call costs two truthiness tests.

Deviation from PyTorch: where a module has several tensor inputs that need
gradients, a backward hook sees them all but may not replace them (their
gradients leave the module at different moments here); PyTorch allows it.
"""

from __future__ import annotations

from typing import Callable

from minigrad.tensor.events import RemovableHandle
from minigrad.tensor.function import Function
from minigrad.tensor.tensor import Tensor, make_tensor

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_parameter_registration_hook", "register_module_buffer_registration_hook",
           "ModuleHooks", "call_with_hooks", "registered", "RemovableHandle"]

_forward_pre: dict[int, Callable] = {}
_forward: dict[int, Callable] = {}
_always: set[int] = set()  # ids of the global forward hooks that run also when forward raised
parameter_registration: dict[int, Callable] = {}
buffer_registration: dict[int, Callable] = {}
active = False  # any global forward hook registered (read by Module.__call__)
_pre_now: tuple = ()  # the global hooks as a call iterates them, remade when they change
_post_now: tuple = ()  # ... (id, hook, always_call)


def _changed() -> None:
    global active, _pre_now, _post_now
    active = bool(_forward_pre or _forward)
    _pre_now = tuple(_forward_pre.values())
    _post_now = tuple((i, h, i in _always) for i, h in _forward.items())


def _check(hook, what: str) -> None:
    if not callable(hook):
        raise TypeError(f"{what}: expected a callable, got {hook!r}")


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, args)`` before every module's forward (before the module's own pre-hooks)."""
    _check(hook, "register_module_forward_pre_hook")
    handle = RemovableHandle(_forward_pre, _changed)
    _forward_pre[handle.id] = hook
    _changed()
    return handle


def register_module_forward_hook(hook: Callable, *, always_call: bool = False) -> RemovableHandle:
    """Run ``hook(module, args, output)`` after every module's forward (before the module's own hooks)."""
    _check(hook, "register_module_forward_hook")
    handle = RemovableHandle(_forward, lambda: (_always.discard(handle.id), _changed()))
    _forward[handle.id] = hook
    if always_call:
        _always.add(handle.id)
    _changed()
    return handle


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, name, param)`` whenever a module registers a parameter; it may return a replacement."""
    _check(hook, "register_module_parameter_registration_hook")
    handle = RemovableHandle(parameter_registration)
    parameter_registration[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, name, buffer)`` whenever a module registers a buffer; it may return a replacement."""
    _check(hook, "register_module_buffer_registration_hook")
    handle = RemovableHandle(buffer_registration)
    buffer_registration[handle.id] = hook
    return handle


def registered(hooks: dict, module, name: str, value):
    """``value`` after each registration hook in ``hooks`` has seen it (and possibly replaced it)."""
    for hook in tuple(hooks.values()):
        result = hook(module, name, value)
        if result is not None:
            value = result
    return value


class ModuleHooks:
    """One module's own hooks (``module._hooks``, None until one is registered)."""

    __slots__ = ("forward_pre", "forward", "always", "backward")

    def __init__(self) -> None:
        self.forward_pre: dict[int, Callable] = {}
        self.forward: dict[int, Callable] = {}
        self.always: set[int] = set()
        self.backward: dict[int, Callable] = {}

    def __bool__(self) -> bool:
        return bool(self.forward_pre or self.forward or self.backward)


def call_with_hooks(module, args: tuple, kwargs: dict):
    """``module(*args, **kwargs)`` with the global hooks and the module's own, in PyTorch's order."""
    own = module._hooks or None
    if own is None:
        pre, post = _pre_now, _post_now
    else:
        pre = (*_pre_now, *own.forward_pre.values())
        post = (*_post_now, *((i, h, i in own.always) for i, h in own.forward.items()))
    done = 0  # how many post hooks were started: on an error, the always-called ones after them still run
    output = None
    try:
        for hook in pre:
            result = hook(module, args)
            if result is not None:
                args = result if type(result) is tuple else (result,)
        backward = _BackwardHooks(module, own.backward, args) if own is not None and own.backward else None
        if backward is not None:
            args = backward.wrap_inputs(args)
        output = module.forward(*args, **kwargs)
        for hook_id, hook, always in post:
            done += 1
            result = hook(module, args, output)
            if result is not None:
                output = result
        if backward is not None:
            output = backward.wrap_outputs(output)
        return output
    except BaseException:
        for hook_id, hook, always in post[done:]:
            if always:
                hook(module, args, output)
        raise


# ------------------------------------------------------------------------------------- backward hooks


class BackwardHookOutput(Function):
    """Identity on one output of a hooked module: its backward notes the output's gradient."""

    is_view = True
    skip_dtype_policy = True

    def forward(ctx, a, hooks, index):
        ctx.hooks, ctx.index = hooks, index
        return a

    def backward(ctx, grad):
        ctx.hooks.output_gradient(ctx.index, grad)
        return grad, None, None


class BackwardHookInput(Function):
    """Identity on one tensor input of a hooked module: its backward runs the hooks (with the last input's)."""

    is_view = True
    skip_dtype_policy = True

    def forward(ctx, a, hooks, index):
        ctx.hooks, ctx.index = hooks, index
        return a

    def backward(ctx, grad):
        return ctx.hooks.input_gradient(ctx.index, grad), None, None


class _BackwardHooks:
    """The state of one hooked module call between its forward and its backward."""

    def __init__(self, module, hooks: dict, args: tuple) -> None:
        self.module, self.hooks = module, tuple(hooks.values())
        self.n_inputs = len(args)
        self.device = next((a._device for a in args if isinstance(a, Tensor)), None)
        self.waiting = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        self.grad_input: list = [None] * len(args)
        self.grad_output: list = []
        self.sent: set[int] = set()

    def wrap_inputs(self, args: tuple) -> tuple:
        args = list(args)
        for i in self.waiting:
            args[i] = BackwardHookInput.apply(args[i], self, i)
        return tuple(args)

    def wrap_outputs(self, output):
        single = isinstance(output, Tensor)
        outputs = [output] if single else list(output) if isinstance(output, (tuple, list)) else None
        if outputs is None:
            return output
        self.grad_output = [None] * sum(isinstance(o, Tensor) for o in outputs)
        k = 0
        for j, o in enumerate(outputs):
            if isinstance(o, Tensor):
                if self.device is None:
                    self.device = o._device
                if o.requires_grad:
                    outputs[j] = BackwardHookOutput.apply(o, self, k)
                k += 1
        if single:
            return outputs[0]
        return type(output)(outputs)

    def _tensor(self, array):
        return None if array is None else make_tensor(array, self.device)

    def output_gradient(self, index: int, grad) -> None:
        self.grad_output[index] = grad
        if not self.waiting:  # no input needs a gradient: the hooks run now, with grad_input all None
            self._run(final=True)

    def input_gradient(self, index: int, grad):
        self.grad_input[index] = grad
        self.sent.add(index)
        if len(self.sent) == len(self.waiting):
            self._run(final=False)
        return self.grad_input[index]

    def _run(self, final: bool) -> None:
        grad_output = tuple(self._tensor(g) for g in self.grad_output)
        grad_input = tuple(self._tensor(g) for g in self.grad_input)
        for hook in self.hooks:
            result = hook(self.module, grad_input, grad_output)
            if result is None:
                continue
            name = type(self.module).__name__
            result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            if final and any(r is not None for r in result):
                raise RuntimeError(f"{name}: a backward hook of a module whose inputs need no gradient must return "
                                   f"None (or None for every gradient)")
            if len(result) != len(grad_input):
                raise RuntimeError(f"{name}: a backward hook returned {len(result)} gradients for "
                                   f"{len(grad_input)} inputs; return one (or None) per input")
            grad_input = result
        if final:
            return
        replaced = [None if g is None else g._data if isinstance(g, Tensor) else g for g in grad_input]
        if len(self.waiting) > 1 and any(replaced[i] is not self.grad_input[i] for i in self.waiting):
            raise RuntimeError(f"{type(self.module).__name__}: a backward hook may replace grad_input only for a "
                               f"module with one tensor input that needs a gradient")
        self.grad_input = replaced
