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

    The step follows ``torch.optim.SGD`` (chapter 05, section 5): the direction
    starts from the gradient (its negative with ``maximize``), plus the L2
    penalty's gradient when ``weight_decay`` is set; with momentum, the buffer
    is a decaying sum of past directions (``dampening`` scales the new one),
    whose first value is a copy of the direction itself, undamped; the step
    then goes along the buffer, or with ``nesterov`` along the direction
    looked ahead by the buffer. The parameter moves ``lr`` times the final
    direction downhill.

    ``momentum_buffer`` is the buffer from the previous step (``None`` on the
    first step, or when momentum is 0). Returns the buffer to keep for the next
    step: the same array, updated in place, or a new one on the first step
    (``None`` when momentum is 0).
    """
    ### BEGIN SOLUTION 5.4 | heavy-ball momentum (chapter 05, section 5): build the direction in the docstring's order (maximize, weight decay, the buffer with its first-step rule, Nesterov or not), then move param in place and return the buffer; never write into grad
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
    gradient and of its square, with decay rates ``beta1`` and ``beta2``;
    ``step`` (t) counts the steps taken, this one included (1 on the first
    step). Both averages start at zero, so early on they are too small: each
    is divided by its bias correction before use. The step per coordinate is
    the corrected first moment scaled by ``lr`` and divided by the square root
    of the corrected second moment (plus ``eps``), so every coordinate moves
    about ``lr`` whatever its gradient's scale (chapter 05, section 5). With
    ``amsgrad``, ``max_exp_avg_sq`` keeps the running maximum of v, and the
    maximum is used in v's place. ``maximize`` and the two kinds of weight
    decay are handled before the exercise region.
    """
    if maximize:
        grad = -grad
    if weight_decay != 0:
        if decoupled_weight_decay:  # AdamW: shrink the weights directly
            param *= 1 - lr * weight_decay
        else:  # Adam: an L2 penalty, added to the gradient
            grad = grad + weight_decay * param
    ### BEGIN SOLUTION 5.3 | adaptive steps (chapter 05, section 5): update both running averages in place, keep the AMSGrad maximum in place when asked, then move param in place by the bias-corrected ratio the docstring describes
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
