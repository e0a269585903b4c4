"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_`` (``torch.nn.utils``).

One bad batch can produce a huge gradient that throws the weights far away.
``clip_grad_norm_`` treats all gradients as one long vector and, when its
norm exceeds ``max_norm``, scales every gradient by the same factor
``max_norm / norm``: the direction is kept, only the step shrinks.
``clip_grad_value_`` clamps each element to ``[-clip_value, clip_value]``
instead (simpler, but it changes the direction).
Call either between ``loss.backward()`` and ``optimizer.step()``.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.tensor import Tensor, no_grad, stack, tensor, vector_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients in place so that their total ``norm_type``-norm is at most ``max_norm``.

    ``parameters``: an iterable of tensors (``model.parameters()``) or one
    tensor. Returns the total norm *before* clipping (log it: it tells you
    how often clipping kicks in). ``max_norm`` must be >= 0 (``inf``: never
    clip) and ``norm_type`` > 0 (``inf``: the largest absolute value).

    As in PyTorch, the norm of each gradient is taken in its own dtype, then
    the norm of those norms (float16 gradients accumulate in float32, so
    10,000 float16 gradients of 3.0 have the norm 300, not inf); the total
    and the coefficient ``max_norm / (total + 1e-6)`` have the gradients' dtype.

    A non-finite total norm (a nan or inf somewhere in the gradients) raises
    with ``error_if_nonfinite=True``; otherwise, as in PyTorch, the gradients
    are scaled by the non-finite coefficient, which turns them to nan/0.
    """
    max_norm, norm_type = _check_clip_arguments(max_norm, norm_type)
    grads = _grads(parameters)
    if not grads:
        return tensor(0.0)
    with no_grad():
        total = vector_norm(stack([vector_norm(g, norm_type) for g in grads]), norm_type)
        value = float(total.item())
        if error_if_nonfinite and not math.isfinite(value):
            raise RuntimeError(
                f"clip_grad_norm_: the total {norm_type}-norm of the gradients is {value}, so they cannot be "
                f"clipped; look for a nan/inf in the loss, or pass error_if_nonfinite=False to scale them "
                f"by the non-finite norm anyway (as PyTorch does)"
            )
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            coefficient = float((max_norm / (total + 1e-6)).item())
        if not coefficient >= 1:  # a nan coefficient scales too, as in PyTorch
            with np.errstate(invalid="ignore"):  # inf * 0 = nan is the documented outcome, not a surprise
                for g in grads:
                    if g.dtype.itemsize == 2:  # 16-bit: multiplied in float32, rounded once (PyTorch's float math)
                        g.copy_(g.float() * coefficient)
                    else:
                        g.mul_(coefficient)
    return total


def _check_clip_arguments(max_norm, norm_type) -> tuple[float, float]:
    try:
        max_norm, norm_type = float(max_norm), float(norm_type)
    except (TypeError, ValueError):
        raise TypeError(
            f"clip_grad_norm_: max_norm and norm_type must be numbers, got max_norm={max_norm!r}, "
            f"norm_type={norm_type!r}"
        ) from None
    if not max_norm >= 0:
        raise ValueError(
            f"clip_grad_norm_: max_norm={max_norm!r} must be >= 0 (a negative one would flip the gradients' "
            f"signs); typical values are 1.0 or 5.0, and float('inf') never clips"
        )
    if not norm_type > 0:
        raise ValueError(
            f"clip_grad_norm_: norm_type={norm_type!r} must be > 0; use 2.0 (the Euclidean norm, default), "
            f"1.0, or float('inf') (the largest absolute value)"
        )
    return max_norm, norm_type


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.copy_(g.clamp(-clip_value, clip_value))
