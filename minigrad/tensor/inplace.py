"""In-place ops (``add_``, ``mul_``, ``x += y``) and the version counter.

An in-place op writes into the tensor's existing memory instead of making a new
tensor. That saves memory (optimizers update parameters this way), but it is
dangerous for autograd: ``y = x * w`` saved ``x`` for its backward, and
``x += 1`` afterwards would silently change the saved value. So every in-place
op bumps a *version counter* shared by all views of the memory; each node
remembers the versions of what it saved, and backward raises if they moved.

Rules, as in PyTorch:

- under ``no_grad()`` (or when nothing involved requires grad) the op just
  writes into memory and bumps the version;
- when autograd records, the op becomes part of the graph: the tensor's
  ``grad_fn`` is replaced by the op's node, whose input is the old value;
- a leaf that requires grad cannot be modified in place while recording
  (its value is what the gradient is *for*); wrap the update in ``no_grad()``;
- minigrad refuses recorded in-place changes to a *view* of a tensor (PyTorch
  rewrites the base's graph; we keep the core small): clone the view first.

The ops themselves (``add_``... ``x[key] = v``, ``fill_``, ``copy_``) are in ``inplace_ops.py``.
"""

from __future__ import annotations

from minigrad.tensor import saved_tensors as _saved_tensors
from minigrad.tensor.backend import root_array as _root
from minigrad.tensor.errors import ShapeError
from minigrad.tensor.function import _GradMode
from minigrad.tensor.inplace_writes import operand_data, write_error
from minigrad.tensor.ops_convert import cast
from minigrad.tensor.ops_elementwise import _as_operand
from minigrad.tensor.tensor import Tensor, VersionCounter, make_tensor

__all__ = ["binary_"]


def _recording(t: Tensor, other) -> bool:
    return _GradMode.enabled and (t._requires_grad or (isinstance(other, Tensor) and other._requires_grad))


def _check_can_record(t: Tensor, op: str) -> None:
    if t.grad_fn is None and t._requires_grad:
        raise RuntimeError(
            f"{op}: a leaf tensor that requires grad (shape {t.shape}) cannot be modified in place while "
            f"autograd is recording: its value is what the gradient is computed for. Update it inside "
            f"`with no_grad():` (as an optimizer step does), or work on a copy: y = x.clone()"
        )
    if t._base is not None:
        raise RuntimeError(
            f"{op}: this tensor (shape {t.shape}) is a view of another tensor, and modifying a view in "
            f"place while autograd records is not supported by minigrad. Clone it first (v = v.clone()), "
            f"or write into the base tensor, or do the update inside `with no_grad():`"
        )


def _bump(t: Tensor) -> Tensor:
    t._version_counter.value += 1
    return t


def _rebase(t: Tensor, result: Tensor, op: str) -> Tensor:
    """Make ``result`` (computed out of place from t's old value) t's new value and its grad_fn."""
    if result.shape != t.shape:
        raise ShapeError(
            f"{op}: an in-place op cannot change the tensor's shape {t.shape} (the result would have "
            f"shape {result.shape})"
        )
    node = result.grad_fn
    if node is not None and node._saved and node._unpack is None:  # it may have saved t's old memory, about to change
        buffer = _root(t._data)
        node._saved = tuple(
            s.copy() if s is t._data or (getattr(s, "base", None) is not None and _root(s) is buffer) else s
            for s in node._saved
        )
    try:
        t._data[...] = result._data
    except (TypeError, ValueError) as exc:
        raise write_error(t, result, op, exc) from None
    t.grad_fn = node
    t._requires_grad = result._requires_grad
    return _bump(t)


def _alias(t: Tensor) -> Tensor:
    """t's current value and graph position as a separate tensor (its own version counter).

    Under saved-tensor hooks the value is copied: the op's node hands what it
    saves to a pack hook, which may keep it without copying, so it must not
    be t's memory that the in-place write is about to change.
    """
    data = t._data.copy() if _saved_tensors.stack else t._data
    return make_tensor(data, t._device, t._requires_grad, t.grad_fn, VersionCounter())


def binary_(t: Tensor, other, fn_cls, ufunc, op: str, alpha=1) -> Tensor:
    """``t = t (op) (alpha * other)`` in place; recorded as ``fn_cls`` when autograd is recording."""
    if _recording(t, other):
        _check_can_record(t, op)
        if not isinstance(other, Tensor):
            other = _as_operand(other, t, op)
        if alpha != 1:
            other = other * alpha
        if isinstance(other, Tensor) and other._data.dtype != t._data.dtype:
            other = cast(other, t._data.dtype)
        return _rebase(t, fn_cls.apply(_alias(t), other), op)
    data = operand_data(t, other, op)
    if alpha != 1:
        data = data * alpha
    try:
        ufunc(t._data, data, out=t._data)
    except (TypeError, ValueError) as exc:
        raise write_error(t, other, op, exc) from None
    return _bump(t)
