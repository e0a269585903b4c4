"""Anomaly detection: find the op, or the parameter, where NaN or Inf first appears.

Inside ``with detect_anomaly():`` every op checks its output and every
backward step checks the gradients it produces; the first non-finite value
raises :class:`AnomalyError` naming the op (or the parameter), the shapes,
and the forward site: the line that called the op (the innermost frame
outside the tensor core) and the line of your own code it came from (the
innermost frame outside minigrad). A backward error names the forward site
of the op whose backward it was, recorded when that op ran (as PyTorch
prints the forward traceback). It costs a full scan of every array and a
look at the stack per op, so use it to debug, not to train.
Pass ``names=dict(model.named_parameters())`` to have parameters named.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys

from minigrad.tensor.backend import array_module
from minigrad.tensor.dtypes import bfloat16
from minigrad.tensor.tensor import Tensor

enabled = False
_names: dict[int, str] = {}
_TENSOR_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PACKAGE_DIR = os.path.dirname(_TENSOR_DIR.rstrip(os.sep)) + os.sep


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


def _line(frame) -> str:
    path = os.path.abspath(frame.f_code.co_filename)
    shown = "minigrad" + os.sep + path[len(_PACKAGE_DIR):] if path.startswith(_PACKAGE_DIR) else path
    code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f"{shown}:{frame.f_lineno} in {frame.f_code.co_name}" + (f": {code}" if code else "")


def forward_site() -> str:
    """Where the running op was called: the innermost frame outside the tensor core, and the innermost outside
    minigrad (the learner's line) when that is another one."""
    frame, caller = sys._getframe(1), None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if caller is None and not path.startswith(_TENSOR_DIR):
            caller = frame
        if not path.startswith(_PACKAGE_DIR):
            break
        frame = frame.f_back
    if caller is None:
        return "called from the tensor core"
    if frame is None or frame is caller:
        return f"called at {_line(caller)}"
    return f"called at {_line(caller)}, from {_line(frame)}"


def check_forward(op: str, args, out) -> None:
    """Raise if ``op`` produced a non-finite output; say whether an input was already bad, and where the op ran."""
    if not _non_finite(out):
        return
    site = forward_site()
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and _non_finite(a._data):
            whose = _name(a) if a.grad_fn is None else f"input {i} of {op} (made by {a.grad_fn.name})"
            raise AnomalyError(f"detect_anomaly: {whose} already contains {_what(a._data)}; it became non-finite "
                               f"before {op} ran ({site})")
    tensors = [a for a in args if isinstance(a, Tensor)]
    shapes = ", ".join(str(tuple(a.shape)) for a in tensors)
    xp = array_module(out)
    if not bool(xp.isnan(out).any()) and tensors:  # only Inf: the values outgrew the dtype
        largest = max(float(xp.abs(a._data).max()) if a._data.size else 0.0 for a in tensors)
        cause = (f"finite inputs whose result outgrew {out.dtype} (largest input magnitude {largest:.3g}): values "
                 f"that grow step after step (a learning rate too high?), or exp of a large number")
    else:
        cause = "log or division of 0, exp of a large number, sqrt of a negative, inf - inf"
    raise AnomalyError(
        f"detect_anomaly: {op} turned finite inputs ({shapes}) into {_what(out)}, {site}. Typical causes: {cause}; "
        f"clamp the input, lower the learning rate or use a stable formulation"
    )


def check_backward(node, grad, input_grads) -> None:
    """Raise if the backward of ``node`` produced a non-finite gradient from a finite one."""
    for i, g in enumerate(input_grads):
        if g is not None and hasattr(g, "dtype") and _non_finite(g):
            incoming = "a non-finite" if _non_finite(grad) else "a finite"
            site = getattr(node, "anomaly_site", None) or "its forward ran outside detect_anomaly, so its site is unknown"
            raise AnomalyError(
                f"detect_anomaly: backward of {node.name} produced {_what(g)} in the gradient of its input {i} "
                f"from {incoming} incoming gradient; look at {node.name}'s inputs (0 in a log/division/sqrt?). "
                f"Its forward was {site}"
            )


def check_leaf_gradient(leaf, grad) -> None:
    if _non_finite(grad):
        raise AnomalyError(f"detect_anomaly: the gradient of {_name(leaf)} contains {_what(grad)}")
