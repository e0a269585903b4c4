"""Unscale one gradient in place and note whether it holds an inf or NaN: the clear version, and a fused kernel per device.

:func:`unscale_grad_` is what ``GradScaler.unscale_`` does to each gradient::

    found_inf = unscale_grad_(p.grad, inv_scale, found_inf)   # p.grad *= inv_scale; found_inf[0] = 1 if inf/NaN

``found_inf`` is a 1-element float32 array on the gradient's device, shared
by all the gradients of one device in a step, so the host reads it once.

Invariants (PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``)
- The check reads the gradient *before* it is multiplied; an ``inv_scale``
  of exactly 1 leaves the values untouched.
- 16-bit gradients are multiplied in float32 and rounded once; float32 and
  float64 ones in their own dtype.
- The gradient's version counter moves, as for any in-place change.
- Where a device type registered a fused kernel (:func:`register_unscale_kernel`;
  ``"cuda"``: ``minigrad.gpu.kernels.unscale_and_check``, one pass over the
  gradient), contiguous float32 gradients go through it; everything else
  takes the clear version below. The fused kernel checks the product
  instead of the gradient: the two differ only when ``inv_scale > 1``
  overflows a finite gradient.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from minigrad.gpu.kernels import unscale_and_check
from minigrad.tensor import Tensor, array_module, float32, no_grad

__all__ = ["unscale_grad_", "register_unscale_kernel", "unscale_kernel"]

#: device type -> ``kernel(grads_array, inv_scale, found_inf) -> found_inf`` (float32, contiguous, in place)
_KERNELS: dict[str, Callable] = {}


def register_unscale_kernel(device_type: str, kernel: Callable | None) -> None:
    """Use ``kernel`` for contiguous float32 gradients on ``device_type`` (None: back to the clear version)."""
    if kernel is None:
        _KERNELS.pop(device_type, None)
    elif not callable(kernel):
        raise TypeError(f"register_unscale_kernel: expected a callable (grads, inv_scale, found_inf), got {kernel!r}")
    else:
        _KERNELS[device_type] = kernel


def unscale_kernel(device_type: str) -> Callable | None:
    return _KERNELS.get(device_type)


def unscale_grad_(grad: Tensor, inv_scale: float, found_inf=None):
    """Multiply ``grad`` by ``inv_scale`` in place; return ``found_inf`` with 1 in it if ``grad`` held an inf/NaN."""
    data = grad._data
    xp = array_module(data)
    if found_inf is None:
        found_inf = xp.zeros(1, dtype=np.float32)
    kernel = _KERNELS.get(grad.device.type)
    if kernel is not None and data.dtype == np.float32 and data.flags.c_contiguous:
        found_inf = kernel(data, inv_scale, found_inf)
        grad._version_counter.value += 1
        return found_inf
    bad = xp.logical_not(xp.isfinite(data)).any()
    found_inf = xp.maximum(found_inf, bad.astype(np.float32).reshape(1))
    if inv_scale != 1.0:
        with no_grad(), np.errstate(invalid="ignore", over="ignore"):
            if data.dtype.itemsize == 2:
                grad.copy_(grad.to(float32) * inv_scale)
            else:
                grad.mul_(inv_scale)
    return found_inf


register_unscale_kernel("cuda", unscale_and_check)
