"""Op dispatch per device type: where a backend plugs in its own kernel for an op.

Every op is written once, against the array API that NumPy and CuPy share
(see :mod:`~minigrad.tensor.backend`). That default serves every device. A
backend that has something better for some op (a fused GPU kernel for
``softmax``, say) registers it for its device type::

    def fused_softmax(ctx, x, dim):        # the same signature as Softmax.forward
        out = my_kernel(x, dim)
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    register_op_impl("softmax", "cuda", fused_softmax)

``Function.apply`` consults the table: when the op's tensors live on a device
of that type, ``forward`` (and ``backward``, if one was given) replaces the
op's own method for that call; every other op and every other device keeps
the default path. The replacement receives the node ``ctx`` exactly as the
op's own method would, so it can save tensors and set attributes for backward;
a replacement forward without a replacement backward must leave ``ctx`` as the
op's own ``backward`` expects it.

Invariants
- With nothing registered, ``Function.apply`` pays one test of an empty dict.
- An op is keyed by its Function class; a name (``"softmax"``) is looked up
  once, at registration, among the Function subclasses (``cls.op``), which
  each subclass enters here as it is defined (this module imports no op and
  not ``function.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MethodType
from typing import Callable

__all__ = ["OpImpl", "register_op_impl", "unregister_op_impl", "get_op_impl", "registered_op_impls"]


@dataclass(frozen=True)
class OpImpl:
    """A device type's implementation of one op.

    ``forward(ctx, *arrays, **kwargs)`` and optionally ``backward(ctx, grad)``,
    with the signatures of the op's own methods.
    """

    forward: Callable
    backward: Callable | None = None


#: (Function subclass, device type) -> OpImpl; read by Function.apply on every call.
OP_IMPLS: dict[tuple[type, str], OpImpl] = {}


#: op name (``Function.op``) -> the Function subclasses of that name; filled by :func:`note_function`.
FUNCTIONS_BY_NAME: dict[str, list[type]] = {}


def note_function(cls: type) -> None:
    """Make the Function subclass ``cls`` findable by its name (``Function.__init_subclass__`` calls this)."""
    FUNCTIONS_BY_NAME.setdefault(cls.op, []).append(cls)


def _function_class(op) -> type:
    """The Function subclass named by ``op``: the class itself, or its short name (``"mul"``)."""
    if isinstance(op, type):
        if op not in FUNCTIONS_BY_NAME.get(getattr(op, "op", None), ()):
            raise TypeError(f"register_op_impl: {op.__name__} is not a subclass of minigrad.tensor.Function")
        return op
    if not isinstance(op, str):
        raise TypeError(f"register_op_impl: op must be an op name like 'softmax' or a Function subclass, got {op!r}")
    matches = set(FUNCTIONS_BY_NAME.get(op, ()))
    if not matches:
        raise KeyError(
            f"register_op_impl: no op named {op!r}; names are Function.op values such as 'mul', 'matmul', "
            f"'softmax' (import the module that defines the op first, or pass the Function class)"
        )
    if len(matches) > 1:
        names = ", ".join(sorted(f"{c.__module__}.{c.__qualname__}" for c in matches))
        raise KeyError(f"register_op_impl: the name {op!r} is shared by {names}; pass the Function class instead")
    return matches.pop()


def register_op_impl(op, device_type: str, forward: Callable, backward: Callable | None = None) -> type:
    """Use ``forward`` (and ``backward``) for ``op`` when its tensors are on a ``device_type`` device.

    ``op`` is a Function subclass or its name; returns the class. Registering
    again for the same op and device type replaces the previous implementation.
    """
    cls = _function_class(op)
    if not isinstance(device_type, str) or ":" in device_type:
        raise ValueError(
            f"register_op_impl: device_type must be a device type like 'cuda' (no index), got {device_type!r}"
        )
    if not callable(forward) or (backward is not None and not callable(backward)):
        raise TypeError("register_op_impl: forward (and backward, when given) must be callables taking ctx first")
    OP_IMPLS[(cls, device_type)] = OpImpl(forward, backward)
    return cls


def unregister_op_impl(op, device_type: str) -> None:
    """Go back to the default implementation of ``op`` on ``device_type`` (no error if none was registered)."""
    OP_IMPLS.pop((_function_class(op), device_type), None)


def get_op_impl(op, device_type: str) -> OpImpl | None:
    """The implementation registered for ``op`` on ``device_type``, or None (the default path)."""
    return OP_IMPLS.get((_function_class(op), device_type))


def registered_op_impls() -> list[tuple[str, str]]:
    """``(op name, device type)`` of every registered implementation."""
    return sorted((cls.op, device_type) for cls, device_type in OP_IMPLS)


def bind_forward(ctx, device_type: str):
    """The forward to run for node ``ctx`` on ``device_type``; installs the matching backward on ``ctx``."""
    impl = OP_IMPLS.get((type(ctx), device_type))
    if impl is None:
        return ctx.forward
    if impl.backward is not None:
        ctx.backward = MethodType(impl.backward, ctx)
    return MethodType(impl.forward, ctx)
