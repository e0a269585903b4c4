"""Update kernels per device type: the optimizers' device extension point.

Each optimizer asks ``update_kernel(name, device, default)`` for the function
that does its arithmetic on one parameter (``"sgd"``, ``"adam"``,
``"rmsprop"``). Nothing registered: the plain NumPy rule it passes as
``default`` (:mod:`minigrad.optim.functional`, ``rmsprop.rmsprop_update``).
A later stage (fused CUDA kernels in ``minigrad.gpu``) or a learner's own rule
plugs in with ``register_update_kernel`` without patching the optimizers.

Invariants
- A registered kernel takes the same arguments as the default it replaces.
- With no allocation observer registered the lookup adds nothing to a step
  but one dict lookup; with one, the scratch memory of each call is reported
  (:func:`minigrad.tensor.hooks.scratch_hold`: one block held across a step's updates).
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from minigrad.tensor import hooks

__all__ = ["register_update_kernel", "update_kernel"]

_KERNELS: dict[tuple[str, str], Callable] = {}
_REPORTING: dict[tuple, Callable] = {}  # (name, kernel, device) -> the kernel reporting its scratch memory


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
    """The update rule ``name`` for tensors on ``device``: a registered one, else ``default``.

    While allocation observers are registered, the rule's scratch memory is
    reported (held until the optimizer step releases it): for the defaults, the count of
    :func:`_scratch_arrays`; a registered kernel may declare its own with a
    ``scratch_arrays(**hyperparameters)`` attribute (a fused kernel has none).
    """
    fn = _KERNELS.get((name, device.type))
    kernel = default if fn is None else fn
    if not hooks.observers:
        return kernel
    key = (name, kernel, device)
    reporting = _REPORTING.get(key)
    if reporting is None:
        if fn is None:
            count = partial(_scratch_arrays, name)
        elif hasattr(fn, "scratch_arrays"):
            count = partial(_declared_scratch_arrays, fn.scratch_arrays)
        else:
            count = None
        reporting = _REPORTING[key] = kernel if count is None else _reporting_scratch(kernel, count, device)
    return reporting


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


def _declared_scratch_arrays(declared: Callable, hyper: dict) -> int:
    """The count a registered kernel declares (its ``scratch_arrays(**hyperparameters)``)."""
    return declared(**hyper)


def _reporting_scratch(fn: Callable, count: Callable, device) -> Callable:
    """``fn`` with its scratch memory (``count(hyperparameters)`` arrays the size of ``param``) reported.

    The optimizer step holds one block for the updates that follow each other
    (:func:`minigrad.tensor.hooks.scratch_hold`) and releases it where state is
    allocated between two updates and when the step ends.
    """
    def run(param, *arrays, **hyper):
        hooks.scratch_hold(count(hyper) * param.nbytes, device)
        return fn(param, *arrays, **hyper)

    return run
