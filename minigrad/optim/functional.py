"""The update rules of the optimizers, as plain functions on arrays.

Each function here does the arithmetic of one optimizer step for *one*
parameter. It receives the raw arrays (NumPy on the CPU, CuPy on a GPU) of the
parameter, its gradient and the optimizer's state for it, and changes them
**in place**; the hyperparameters come as keyword arguments. Everything else
(which parameters, which hyperparameters, creating the state, version
counters) is the job of the optimizer classes in :mod:`minigrad.optim`.

The same split exists in PyTorch (``torch.optim._functional``). Keeping the
arithmetic apart makes it easy to read next to the formulas, to test against
a hand-written reference, and to swap for a fused GPU kernel later.

Rules the functions follow:

- Whole-array NumPy operations only (no Python loop over elements); only
  operators, ufuncs (``np.sqrt``, ``np.maximum``...) and ``.copy()``, which
  work on CuPy arrays too.
- ``param`` and every state array are updated in place (``x *= a``,
  ``x -= y``, ``np.maximum(a, b, out=a)``): the optimizer's tensors keep
  their memory. ``grad`` is never modified.
- The order of the floating point operations is PyTorch's, so results agree
  with ``torch.optim`` to the last few bits.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["sgd_update", "adam_update"]


def sgd_update(
    param,
    grad,
    momentum_buffer,
    *,
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    maximize: bool = False,
):
    """One SGD step (with momentum, Nesterov and L2 weight decay) for one parameter, in place.

    With ``g`` the gradient, ``p`` the parameter and ``b`` the momentum buffer::

        g = -g                       if maximize   (climb instead of descend)
        g = g + weight_decay * p     if weight_decay != 0
        if momentum != 0:
            b = g (a copy)                          on the first step
            b = momentum * b + (1 - dampening) * g  afterwards
            g = g + momentum * b     if nesterov   (look ahead along b)
            g = b                    otherwise
        p = p - lr * g

    ``momentum_buffer`` is the buffer from the previous step (``None`` on the
    first step, or when momentum is 0). Returns the buffer to keep for the next
    step: the same array, updated in place, or a new one on the first step
    (``None`` when momentum is 0).
    """
    ### BEGIN SOLUTION 5.4 | d = -grad if maximize else grad, plus weight_decay * param; with momentum: buf = d.copy() on the first step (buf is None) else buf *= momentum then buf += (1 - dampening) * d; d = d + momentum * buf if nesterov else buf; param -= lr * d; return buf
    d = -grad if maximize else grad
    if weight_decay != 0:
        d = d + weight_decay * param
    if momentum != 0:
        if momentum_buffer is None:
            momentum_buffer = d.copy()
        else:
            momentum_buffer *= momentum
            momentum_buffer += (1 - dampening) * d
        if nesterov:
            d = d + momentum * momentum_buffer
        else:
            d = momentum_buffer
    param -= lr * d
    return momentum_buffer
    ### END SOLUTION


def adam_update(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq=None,
    *,
    step: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float = 0.0,
    decoupled_weight_decay: bool = False,
    amsgrad: bool = False,
    maximize: bool = False,
) -> None:
    """One Adam / AdamW step for one parameter, in place.

    ``exp_avg`` (m) and ``exp_avg_sq`` (v) are the running averages of the
    gradient and of its square; ``step`` (t) counts the steps taken, this one
    included (1 on the first step)::

        g = -g                            if maximize
        p = p * (1 - lr * weight_decay)   AdamW (decoupled_weight_decay)
        g = g + weight_decay * p          Adam with weight_decay != 0 (L2 penalty)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)             if amsgrad (then v_max replaces v below)
        m_hat = m / (1 - beta1**t)        bias corrections: m and v start at 0,
        v_hat = v / (1 - beta2**t)        so early averages are too small
        p = p - lr * m_hat / (sqrt(v_hat) + eps)

    PyTorch computes the last line as
    ``p -= (lr / (1 - beta1**t)) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``
    (the same value, fewer full-size temporaries); so do we.
    ``max_exp_avg_sq`` is needed only when ``amsgrad`` is set.
    """
    if maximize:
        grad = -grad
    if weight_decay != 0:
        if decoupled_weight_decay:  # AdamW: shrink the weights directly
            param *= 1 - lr * weight_decay
        else:  # Adam: an L2 penalty, added to the gradient
            grad = grad + weight_decay * param
    ### BEGIN SOLUTION 5.3 | in place: exp_avg = beta1*exp_avg + (1-beta1)*grad, exp_avg_sq = beta2*exp_avg_sq + (1-beta2)*grad*grad; with amsgrad keep max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq) (np.maximum(..., out=...)) and use it instead of exp_avg_sq; m_hat = exp_avg / (1 - beta1**step), v_hat = exp_avg_sq / (1 - beta2**step); param -= lr * m_hat / (sqrt(v_hat) + eps)
    exp_avg *= beta1
    exp_avg += (1 - beta1) * grad
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    if amsgrad:
        np.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        second_moment = max_exp_avg_sq
    else:
        second_moment = exp_avg_sq
    denom = np.sqrt(second_moment)  # a new array; the in-place steps below reuse it
    denom /= math.sqrt(bias_correction2)
    denom += eps
    update = exp_avg / denom
    update *= lr / bias_correction1
    param -= update
    ### END SOLUTION
