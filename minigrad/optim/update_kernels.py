"""Update kernels per device type: the optimizers' device extension point.

Each optimizer runs its arithmetic on one parameter through
``run_update(name, param, default, arrays, hyper)`` (``"sgd"``, ``"adam"``,
``"rmsprop"``): the kernel registered for the parameter's device type, else
the plain NumPy rule it passes as ``default``
(:mod:`minigrad.optim.functional`, ``rmsprop.rmsprop_update``). A later stage
(fused CUDA kernels in ``minigrad.gpu``) or a learner's own rule plugs in
with ``register_update_kernel`` without patching the optimizers;
``update_kernel`` says which function would run.

Before each update, the update hooks (:func:`register_update_hook`) hear
which rule runs on which parameter: ``hook(name, param, arrays, hyper)``.

Invariants
- A registered kernel takes the same arguments as the default it replaces.
- With no update hook registered, running an update adds one dict lookup
  and one truthiness test to it.
"""

from __future__ import annotations

from typing import Callable

from minigrad.tensor.events import RemovableHandle

__all__ = ["register_update_kernel", "update_kernel", "run_update", "register_update_hook"]

_KERNELS: dict[tuple[str, str], Callable] = {}
_update_hooks: dict[int, Callable] = {}


def register_update_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(name, param, arrays, hyper)`` before each update rule runs; returns a removable handle."""
    if not callable(hook):
        raise TypeError(f"register_update_hook: expected a callable, got {hook!r}")
    handle = RemovableHandle(_update_hooks)
    _update_hooks[handle.id] = hook
    return handle


def register_update_kernel(name: str, device_type: str, fn: Callable | None) -> Callable | None:
    """Use ``fn`` for update rule ``name`` ("sgd", "adam", "rmsprop") on ``device_type``; returns the previous one.

    ``fn`` takes the same arguments as the default rule of that name.
    ``None`` restores the default.
    """
    key = (str(name), str(device_type))
    previous = _KERNELS.pop(key, None)
    if fn is not None:
        if not callable(fn):
            raise TypeError(f"register_update_kernel: expected a callable, got {fn!r}")
        _KERNELS[key] = fn
    return previous


def update_kernel(name: str, device, default: Callable) -> Callable:
    """The update rule ``name`` for tensors on ``device``: a registered one, else ``default``."""
    fn = _KERNELS.get((name, device.type))
    return default if fn is None else fn


def run_update(name: str, param, default: Callable, arrays: tuple, hyper: dict):
    """``kernel(*arrays, **hyper)`` with the update rule ``name`` for ``param`` (a tensor); returns its result."""
    fn = _KERNELS.get((name, param._device.type))
    if _update_hooks:
        for hook in tuple(_update_hooks.values()):
            hook(name, param, arrays, hyper)
    return (default if fn is None else fn)(*arrays, **hyper)
