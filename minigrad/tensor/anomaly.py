"""Anomaly detection: find the op, or the parameter, where NaN or Inf first appears.

Inside ``with detect_anomaly():`` every op checks its output and every
backward step checks the gradients it produces; the first non-finite value
raises :class:`AnomalyError` naming the op (or the parameter) and the shapes.
It costs a full scan of every array, so use it to debug, not to train.
Pass ``names=dict(model.named_parameters())`` to have parameters named.
"""

from __future__ import annotations

import contextlib

from minigrad.tensor.backend import array_module
from minigrad.tensor.dtypes import bfloat16
from minigrad.tensor.tensor import Tensor

enabled = False
_names: dict[int, str] = {}


class AnomalyError(FloatingPointError):
    """A NaN or Inf appeared; the message says where."""


class detect_anomaly(contextlib.ContextDecorator):
    """Check every op's output and every gradient for NaN/Inf while active (like PyTorch's)."""

    def __init__(self, names=None) -> None:
        self.names = {id(t): name for name, t in dict(names or {}).items()}

    def __enter__(self):
        global enabled
        self._previous = (enabled, dict(_names))
        enabled = True
        _names.update(self.names)
        return self

    def __exit__(self, *exc) -> None:
        global enabled
        enabled, previous_names = self._previous
        _names.clear()
        _names.update(previous_names)


def _non_finite(array) -> bool:
    return (array.dtype.kind in "fc" or array.dtype is bfloat16) and not bool(array_module(array).isfinite(array).all())


def _what(array) -> str:
    xp = array_module(array)
    nan, inf = int(xp.isnan(array).sum()), int(xp.isinf(array).sum())
    where = tuple(int(i) for i in xp.argwhere(~xp.isfinite(array))[0]) if array.ndim else ()
    parts = [f"{nan} NaN" if nan else "", f"{inf} Inf" if inf else ""]
    return f"{' and '.join(p for p in parts if p)} (first at index {where}, shape {tuple(array.shape)})"


def _name(tensor) -> str:
    name = _names.get(id(tensor))
    return f"parameter {name!r}" if name else f"a leaf tensor of shape {tuple(tensor.shape)}"


def check_forward(op: str, args, out) -> None:
    """Raise if ``op`` produced a non-finite output; say whether an input was already bad."""
    if not _non_finite(out):
        return
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and _non_finite(a._data):
            whose = _name(a) if a.grad_fn is None else f"input {i} of {op} (made by {a.grad_fn.name})"
            raise AnomalyError(f"detect_anomaly: {whose} already contains {_what(a._data)}; it became non-finite before {op} ran")
    shapes = ", ".join(str(tuple(a.shape)) for a in args if isinstance(a, Tensor))
    raise AnomalyError(
        f"detect_anomaly: {op} turned finite inputs ({shapes}) into {_what(out)}. Typical causes: log or division "
        f"of 0, exp of a large number, sqrt of a negative; clamp the input or use a stable formulation"
    )


def check_backward(node, grad, input_grads) -> None:
    """Raise if the backward of ``node`` produced a non-finite gradient from a finite one."""
    for i, g in enumerate(input_grads):
        if g is not None and hasattr(g, "dtype") and _non_finite(g):
            incoming = "a non-finite" if _non_finite(grad) else "a finite"
            raise AnomalyError(
                f"detect_anomaly: backward of {node.name} produced {_what(g)} in the gradient of its input {i} "
                f"from {incoming} incoming gradient; look at {node.name}'s inputs (0 in a log/division/sqrt?)"
            )


def check_leaf_gradient(leaf, grad) -> None:
    if _non_finite(grad):
        raise AnomalyError(f"detect_anomaly: the gradient of {_name(leaf)} contains {_what(grad)}")
