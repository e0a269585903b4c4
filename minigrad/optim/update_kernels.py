"""Update kernels per device type: the optimizers' device extension point.

Each optimizer runs its arithmetic on one parameter through
``run_update(name, param, default, arrays, hyper)`` (``"sgd"``, ``"adam"``,
``"rmsprop"``): the kernel registered for the parameter's device type, else
the plain NumPy rule it passes as ``default``
(:mod:`minigrad.optim.functional`, ``rmsprop.rmsprop_update``). A later stage
(fused CUDA kernels in ``minigrad.gpu``) or a learner's own rule plugs in
with ``register_update_kernel`` without patching the optimizers;
``update_kernel`` says which function would run.

Invariants
- A registered kernel takes the same arguments as the default it replaces.
- With no allocation observer registered, choosing the kernel adds one dict
  lookup to an update; with one, the scratch memory of each update is reported
  first (:func:`minigrad.tensor.hooks.scratch_hold`: one block held across a
  step's updates), counted from the keyword dict the kernel gets.
"""

from __future__ import annotations

from typing import Callable

from minigrad.tensor import hooks

__all__ = ["register_update_kernel", "update_kernel", "run_update"]

_KERNELS: dict[tuple[str, str], Callable] = {}


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
    """``kernel(*arrays, **hyper)`` with the update rule ``name`` for ``param`` (a tensor); returns its result.

    While allocation observers are registered, the rule's scratch memory is
    reported first, held until the optimizer step releases it: for the
    defaults, the count of :func:`_scratch_arrays`; a registered kernel may
    declare its own with a ``scratch_arrays(**hyperparameters)`` attribute (a
    fused kernel has none, and reports none).
    """
    device = param._device
    fn = _KERNELS.get((name, device.type))
    if hooks.observers:
        if fn is None:
            count = _scratch_arrays(name, hyper)
        else:
            declared = getattr(fn, "scratch_arrays", None)
            count = 0 if declared is None else declared(**hyper)
        if count:
            hooks.scratch_hold(count * param._data.nbytes, device)
    return (default if fn is None else fn)(*arrays, **hyper)


def _scratch_arrays(name: str, hyper: dict) -> int:
    """How many parameter-sized scratch arrays the default update rule ``name`` holds at once, at most.

    ``hyper``: the rule's keyword arguments. Counted from the code of the
    default rules (each ``a * b`` on whole arrays makes one) and checked
    against tracemalloc by the tests. A new momentum buffer is not scratch: it
    becomes optimizer state.
    """
    get = hyper.get
    negated_or_decayed = bool(get("maximize") or (get("weight_decay", 0.0) != 0 and not get("decoupled_weight_decay")))
    if name == "adam":  # (1 - beta2) * grad * grad; later sqrt(v) and m / denom
        return 2 + negated_or_decayed
    if name == "sgd":  # lr * d
        return 1 + negated_or_decayed + bool(get("nesterov"))
    if name == "rmsprop":  # (1 - alpha) * grad * grad; sqrt(v) + eps and grad / avg
        return 2 + negated_or_decayed + (get("momentum", 0.0) == 0)
    return 0
