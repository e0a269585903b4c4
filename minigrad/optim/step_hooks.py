"""PyTorch's optimizer hooks, and what an optimizer tells about its new state.

- ``optimizer.register_step_pre_hook(hook)`` / ``register_step_post_hook(hook)``
  run ``hook(optimizer, args, kwargs)`` before / after that optimizer's
  ``step`` (``args`` is ``(optimizer,)`` or ``(optimizer, closure)``, as
  PyTorch passes them); a pre-hook may return ``(new_args, new_kwargs)``.
- :func:`register_optimizer_step_pre_hook` / :func:`register_optimizer_step_post_hook`:
  the same for every optimizer; global pre-hooks run before an optimizer's
  own, global post-hooks after.
- A post-hook registered with ``always_call=True`` also runs when the step
  raised (a minigrad extension, as ``Module.register_forward_hook`` has it).
- :func:`register_state_init_hook`: ``hook(optimizer, param, array)`` when an
  optimizer makes a new state array for ``param``, before it becomes the
  state tensor (nothing is allocated in between).

Each registration returns a handle; ``handle.remove()`` removes the hook.
With none registered, a step costs three truthiness tests.
"""

from __future__ import annotations

from typing import Callable

from minigrad.tensor import enable_grad
from minigrad.tensor.events import RemovableHandle
from minigrad.tensor.tensor import make_tensor

__all__ = ["register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "register_state_init_hook",
           "RemovableHandle", "new_state", "step_with_hooks", "register"]

pre: dict[int, Callable] = {}
post: dict[int, Callable] = {}
_always: set[int] = set()  # ids of the post-hooks that run also when a step raised
_state_init: dict[int, Callable] = {}


def register(registry: dict, hook, what: str, always_call: bool = False) -> RemovableHandle:
    """Add ``hook`` to ``registry`` (a dict id -> hook); returns its handle."""
    if not callable(hook):
        raise TypeError(f"{what}: expected a callable, got {hook!r}")
    handle = RemovableHandle(registry, lambda: _always.discard(handle.id))
    registry[handle.id] = hook
    if always_call:
        _always.add(handle.id)
    return handle


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's ``step`` (before its own pre-hooks)."""
    return register(pre, hook, "register_optimizer_step_pre_hook")


def register_optimizer_step_post_hook(hook: Callable, *, always_call: bool = False) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's ``step`` (after its own post-hooks)."""
    return register(post, hook, "register_optimizer_step_post_hook", always_call)


def register_state_init_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, param, array)`` whenever an optimizer makes a new state array for ``param``."""
    return register(_state_init, hook, "register_state_init_hook")


def new_state(optimizer, param, array):
    """``array`` as a state tensor of ``optimizer`` for ``param``, shown to the state-init hooks first."""
    for hook in tuple(_state_init.values()):
        hook(optimizer, param, array)
    return make_tensor(array, param._device)


def step_with_hooks(optimizer, closure):
    """``optimizer.step(closure)`` between the pre-hooks (global, then own) and the post-hooks (own, then global)."""
    own_pre, own_post = optimizer._step_hooks or ({}, {})
    args, kwargs = ((optimizer,), {}) if closure is None else ((optimizer, closure), {})
    after = [*own_post.items(), *post.items()]
    called: set[int] = set()
    try:
        for hook in (*pre.values(), *own_pre.values()):
            result = hook(optimizer, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{type(optimizer).__name__}.step: a step pre-hook must return None or "
                                       f"(new_args, new_kwargs), got {result!r}")
                args, kwargs = result
        loss = None
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if closure is not None:
            with enable_grad():
                loss = closure()
        optimizer._update_all()
        for hook_id, hook in after:
            called.add(hook_id)
            hook(optimizer, args, kwargs)
        return loss
    except BaseException:
        for hook_id, hook in after:
            if hook_id in _always and hook_id not in called:
                hook(optimizer, args, kwargs)
        raise
