"""``log_softmax``: one op written out as a :class:`~minigrad.tensor.Function` (exercise 4.4).

Along dimension ``dim``, ``y_i = x_i - log sum_j exp(x_j)``: log-probabilities
from scores. It is how classifiers are trained (cross-entropy is minus the
target's ``y``), and it shows the two things every op has to get right.

**Forward, without overflow.** ``exp(1000.)`` is ``inf``, and then so is the
answer. Subtracting the largest score ``m`` first changes nothing
mathematically (``x_i - m - log sum_j exp(x_j - m)`` is the same number), but
every ``exp`` is then at most 1.

**Backward, from what was saved.** ``dy_i/dx_j = [i == j] - softmax(x)_j``,
and ``softmax(x) = exp(y)``: the output alone is enough, and ``exp(y) <= 1``
cannot overflow either. So the node saves its output and nothing else.

The protocol (``function.py``): ``forward(ctx, a, dim)`` receives the input's
backend array and the (non-negative) dim, and returns the output array;
``backward(ctx, grad)`` returns one gradient per argument of ``forward``,
``None`` for ``dim``, which is not a tensor.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.function import Function

__all__ = ["LogSoftmax"]


class LogSoftmax(Function):
    """``log_softmax`` along ``dim``: stable forward, backward from the saved output."""

    def forward(ctx, a, dim):
        """``y = a - log(sum(exp(a)))`` along ``dim``, computed so that no ``exp`` overflows; keeps what backward needs."""
        ### BEGIN SOLUTION 4.4 | shift each slice along dim so its largest score is 0 (the result does not change), take logs of the summed exponentials, remember dim and save the output for backward
        ctx.dim = dim
        shifted = a - a.max(axis=dim, keepdims=True)
        out = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
        ctx.save_for_backward(out)
        return out
        ### END SOLUTION

    def backward(ctx, grad):
        """``(d loss/d a, None)`` from ``grad = d loss/d y`` and the saved output ``y``."""
        ### BEGIN SOLUTION 4.4 | section 7's Jacobian of log-softmax, computed from the saved output alone; one gradient per argument of forward
        (out,) = ctx.saved_tensors
        probabilities = np.exp(out)
        return grad - probabilities * grad.sum(axis=ctx.dim, keepdims=True), None
        ### END SOLUTION
