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

from minigrad.tensor import Tensor, no_grad, stack, tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients in place so that their total ``norm_type``-norm is at most ``max_norm``.

    ``parameters``: an iterable of tensors (``model.parameters()``) or one
    tensor. Returns the total norm *before* clipping (log it: it tells you
    how often clipping kicks in).
    """
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        if math.isinf(norm_type):
            total = stack([g.abs().amax().float() for g in grads]).amax()
        else:
            per_tensor = stack([(g.abs() ** norm_type).sum().float() for g in grads])
            total = per_tensor.sum() ** (1.0 / norm_type)
        value = float(total.item())
        if error_if_nonfinite and not math.isfinite(value):
            raise RuntimeError(
                f"clip_grad_norm_: the total {norm_type}-norm of the gradients is {value}, so they cannot be "
                f"clipped; look for a nan/inf in the loss, or pass error_if_nonfinite=False"
            )
        coefficient = max_norm / (value + 1e-6)
        if coefficient < 1:
            for g in grads:
                g.mul_(coefficient)
    return total


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.copy_(g.clamp(-clip_value, clip_value))
