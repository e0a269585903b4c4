"""The fused kernels' arithmetic written with array operations, for any array module: the test stand-ins.

The kernel simulator runs only on NumPy arrays and only small sizes, so the
tensor and nn suites cannot run the real kernels on the strict test device.
These functions compute what each kernel computes, with the operations of
the arrays' own module (``array_module(x)``), in float32 or float64, with the
kernels' signatures. Registered for the strict device
(``register_fused_ops("strict", REFERENCE_KERNELS)``), they let the suites
run :mod:`minigrad.gpu.device.backend_ops` - the code that decides when to
fuse and wires the kernels' results into the graph - on arrays that refuse
any trip to the host, with float64 gradchecks going through the fused paths.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.gpu.device.backend_ops import FusedKernels
from minigrad.tensor import array_module

__all__ = ["REFERENCE_KERNELS"]


def bias_relu_backward(grad_out, out):
    grad_x = grad_out * (out > 0)
    return grad_x, grad_x.sum(axis=0)


def softmax_cross_entropy(logits, targets):
    xp = array_module(logits)
    row_max = logits.max(axis=1, keepdims=True)
    log_sum = xp.log(xp.exp(logits - row_max).sum(axis=1, keepdims=True))[:, 0]
    picked = logits[xp.arange(logits.shape[0]), targets]
    loss = log_sum + (row_max[:, 0] - picked)  # never logsumexp - picked: huge logits would cancel in float32
    return loss.mean().reshape(1), row_max[:, 0].astype(np.float64) + log_sum.astype(np.float64)


def softmax_cross_entropy_grad(logits, targets, logsumexp, grad_loss=1.0):
    xp = array_module(logits)
    grad = xp.exp((logits.astype(np.float64) - logsumexp[:, None]).astype(logits.dtype))
    grad[xp.arange(logits.shape[0]), targets] -= 1
    return grad * (grad_loss / logits.shape[0])


def adam_step(param, grad, m, v, *, step, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
              decoupled_weight_decay=False):
    xp = array_module(param)
    if decoupled_weight_decay:
        param *= 1 - lr * weight_decay
    elif weight_decay:
        grad = grad + weight_decay * param
    m *= beta1
    m += (1 - beta1) * grad
    v *= beta2
    v += (1 - beta2) * grad * grad
    step_size = lr / (1 - beta1**step)
    sqrt_correction2 = math.sqrt(1 - beta2**step)
    param -= step_size * m / (xp.sqrt(v) / sqrt_correction2 + eps)


REFERENCE_KERNELS = FusedKernels(
    dtypes=(np.dtype(np.float32), np.dtype(np.float64)),
    bias_relu_backward=bias_relu_backward,
    softmax_cross_entropy=softmax_cross_entropy,
    softmax_cross_entropy_grad=softmax_cross_entropy_grad,
    adam_step=adam_step,
)
