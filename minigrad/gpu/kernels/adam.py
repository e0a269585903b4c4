"""A fused Adam / AdamW step: one kernel updates param, m and v in place, reading each array once.

Written with array operations, one Adam step makes about a dozen passes
over memory (one per ``*``, ``+``, ``sqrt``, ``/``, each with a temporary);
fused, each thread reads its element of param, grad, m and v once and
writes param, m and v once. The arithmetic is that of
:func:`minigrad.optim.functional.adam_update` (PyTorch's form), per element::

    g = grad + l2 * p                       Adam's L2 weight decay (l2 = weight_decay, else 0)
    p = p * decay                           AdamW's decoupled decay (decay = 1 - lr * weight_decay, else 1)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p = p - step_size * m / (sqrt(v) / sqrt_correction2 + eps)

with the bias corrections folded into two numbers the host computes once
per step: ``step_size = lr / (1 - beta1**t)`` and
``sqrt_correction2 = sqrt(1 - beta2**t)``. ``1 - beta1`` and ``1 - beta2``
come from the host too, computed in float64 and rounded once as the
reference rounds them (``1 - float32(0.999)`` would be 4.7e-5 off). The two weight-decay forms are
coefficients, not a branch: the kernel is the same for Adam and AdamW.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import blocks_for, check_float32, check_same_shape

BLOCK = 256
MAX_BLOCKS = 1024  # a grid-stride loop covers larger parameters


@jit.rawkernel()
def adam_step_kernel(param, grad, m, v, l2, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, step_size,
                     sqrt_correction2, eps, n):
    """One Adam step on param, m, v (each of n elements) in place; scalars are float32."""
    i = jit.grid(1)
    stride = jit.gridsize(1)
    while i < n:
        p = param[i]
        g = grad[i] + l2 * p
        p = p * decay
        m_i = beta1 * m[i] + one_minus_beta1 * g
        v_i = beta2 * v[i] + one_minus_beta2 * g * g
        m[i] = m_i
        v[i] = v_i
        param[i] = p - step_size * m_i / (jit.sqrt(v_i) / sqrt_correction2 + eps)
        i += stride


def fused_adam_step(param, grad, m, v, *, step, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
                    decoupled_weight_decay=False):
    """One Adam (or, with ``decoupled_weight_decay``, AdamW) step in place on float32 ``param``, ``m``, ``v``.

    ``step`` counts the steps taken, this one included (1 on the first).
    All four arrays have the same shape; ``m`` and ``v`` start as zeros.
    """
    op = "fused_adam_step"
    check_float32(op, param=param, grad=grad, m=m, v=v)
    check_same_shape(op, param=param, grad=grad, m=m, v=v)
    if not (isinstance(step, int) and step >= 1):
        raise ValueError(f"{op}: 'step' counts steps taken including this one (1, 2, ...), got {step!r}")
    for name, array in (("param", param), ("m", m), ("v", v)):
        if not array.flags.c_contiguous:
            raise ValueError(f"{op}: '{name}' is updated in place and must be C-contiguous; keep the state contiguous")
    f32 = np.float32
    l2 = f32(0 if decoupled_weight_decay else weight_decay)
    decay = f32(1 - lr * weight_decay if decoupled_weight_decay else 1)
    step_size = f32(lr / (1 - beta1**step))
    sqrt_correction2 = f32(math.sqrt(1 - beta2**step))
    flat = [a.reshape(-1) for a in (param, grad, m, v)]
    n = param.size
    adam_step_kernel[min(blocks_for(n, BLOCK), MAX_BLOCKS), BLOCK](
        *flat, l2, decay, f32(beta1), f32(1 - beta1), f32(beta2), f32(1 - beta2), step_size, sqrt_correction2,
        f32(eps), n
    )
