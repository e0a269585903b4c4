"""Dropout: zero each element with probability ``p`` while training, and scale the survivors by ``1/(1-p)``.

The scaling keeps every element's expected value unchanged, so nothing needs
to change at evaluation time, when dropout does nothing. Backward lets the
gradient through where the element was kept (times the same scale) and
blocks it where it was dropped; the node keeps only the boolean mask.

Random numbers come from ``generator`` (a ``numpy.random.Generator``, drawn
on the host) or, by default, from the generator of the input's device, so
the mask is drawn where the input lives, ``manual_seed`` makes dropout
reproducible and activation checkpointing can replay it with
``get_rng_state``/``fork_rng`` (chapter 10).
"""

from __future__ import annotations

from minigrad.nn.functional._utils import check_float, check_tensor
from minigrad.tensor import Function, Tensor, rand

__all__ = ["dropout", "DropoutFunction"]


class DropoutFunction(Function):
    op = "dropout"

    def forward(ctx, x, noise, p):
        keep = noise >= p  # each element survives with probability 1 - p
        ctx.scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(keep)
        return (x * keep * ctx.scale).astype(x.dtype, copy=False)  # the float32 noise must not widen bfloat16 data

    def backward(ctx, grad):
        (keep,) = ctx.saved_tensors
        return (grad * keep * ctx.scale).astype(grad.dtype, copy=False), None, None


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, generator=None) -> Tensor:
    """``input`` with each element zeroed with probability ``p`` (when ``training``), the rest scaled by 1/(1-p).

    ``generator``: a ``numpy.random.Generator`` to draw the mask from (minigrad
    addition); ``inplace`` is accepted for PyTorch compatibility, the result is
    always a new tensor.
    """
    check_tensor(input, "input", "dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p is the probability of zeroing an element, it must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return input
    check_float(input, "input", "dropout")
    if p == 1.0:
        return input * 0.0
    noise = rand(*input.shape, generator=generator, device=input.device)
    return DropoutFunction.apply(input, noise, float(p))
