"""Unscale gradients and check them for inf/NaN in one pass: what a mixed-precision loss scaler does each step.

A loss scaler multiplies the loss by ``scale`` so that small float16
gradients do not underflow; before the optimizer step the gradients are
divided by it again (``grad *= 1 / scale``) and, if any is inf or NaN (the
scale was too large and something overflowed), the step is skipped and the
scale lowered. Fused, each gradient element is read and written once.

``found_inf`` is a 1-element float32 array on the same device, set to 1 by
any thread that sees a non-finite value (and never reset here): several
threads may write it, but they all write the same 1, so the result does
not depend on their order. One flag can collect the check of many gradient
arrays, and the host reads it once per step.
"""

from __future__ import annotations


import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, blocks_for, check_float32, check_shape

BLOCK = 256
MAX_BLOCKS = 1024


@jit.rawkernel()
def unscale_and_check_kernel(grads, inv_scale, found_inf, n):
    """grads[i] *= inv_scale[0]; found_inf[0] = 1 if any grads[i] is inf or NaN."""
    ### BEGIN SOLUTION 9.5 | one pass with a grid-stride loop over the n elements: each read once, multiplied, written once; a thread whose product is not finite (jit.isfinite) sets the flag to 1, and no thread ever sets it back to 0
    i = jit.grid(1)
    stride = jit.gridsize(1)
    while i < n:
        g = grads[i] * inv_scale[0]
        if not jit.isfinite(g):
            found_inf[0] = np.float32(1)
        grads[i] = g
        i += stride
    ### END SOLUTION


def unscale_and_check(grads, inv_scale, found_inf=None):
    """Multiply float32 ``grads`` by ``inv_scale`` in place; return ``found_inf`` (1-element, 1 if inf/NaN seen).

    ``inv_scale`` is a number or a 1-element array on the grads' device
    (kept there: no copy to the host). Pass the same ``found_inf`` for every
    gradient of a step; a new zeroed one is made when it is None.
    """
    op = "unscale_and_check"
    check_float32(op, grads=grads)
    if not grads.flags.c_contiguous:
        raise ValueError(f"{op}: 'grads' is updated in place and must be C-contiguous")
    xp = array_module(grads)
    if found_inf is None:
        found_inf = xp.zeros(1, dtype=np.float32)
    check_float32(op, found_inf=found_inf)
    check_shape(op, "found_inf", found_inf, (1,), "one flag")
    inv_scale = xp.asarray(inv_scale, dtype=np.float32).reshape(1)
    n = grads.size
    unscale_and_check_kernel[min(blocks_for(n, BLOCK), MAX_BLOCKS), BLOCK](grads.reshape(-1), inv_scale, found_inf, n)
    return found_inf
