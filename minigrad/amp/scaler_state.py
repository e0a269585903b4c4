"""Dynamic loss scaling as a state machine: the scale and its growth tracker after each step, and each optimizer's stage.

float16 gradients below ~6e-8 underflow to zero. Multiplying the loss by a
large ``scale`` (2**16 to start) lifts them into range; before the optimizer
step the gradients are divided by it again. Too large a scale overflows:
some gradient is inf or NaN, the step is skipped and the scale halved. A
run of ``growth_interval`` steps without overflow doubles it again, so the
scale hovers just below the largest one that does not overflow::

    scale, tracker = 65536.0, 0
    scale, tracker = update_scale(scale, tracker, found_inf=True, ...)    # 32768.0, 0   (step skipped)
    scale, tracker = update_scale(scale, tracker, found_inf=False, ...)   # 32768.0, 1
    ...                                                                   # 2000 clean steps later: 65536.0, 0

Invariants (PyTorch's ``_amp_update_scale_``)
- The scale is a float32 number: each product is rounded to float32.
- An overflow multiplies the scale by ``backoff_factor`` and resets the tracker to 0.
- A clean step adds 1 to the tracker; when it reaches ``growth_interval``
  the scale is multiplied by ``growth_factor`` (unless that product is not
  finite in float32: then it stays) and the tracker goes back to 0.

Per optimizer, a step moves through three stages, reset by ``update()``:
``READY`` -> (``unscale_``) ``UNSCALED`` -> (``step``) ``STEPPED``.

Only a format whose exponent range is narrower than float32's needs any of
this (:func:`needs_loss_scaling`): float16 does, bfloat16 (float32's
exponent, fewer fraction bits) does not, so a bfloat16 run turns the
scaler off::

    scaler = GradScaler("cpu", enabled=needs_loss_scaling(dtype))
"""

from __future__ import annotations

import enum
import math

import numpy as np

from minigrad.tensor import finfo, is_floating_point
from minigrad.tensor.dtypes import as_dtype

__all__ = ["OptState", "update_scale", "float32", "needs_loss_scaling"]


class OptState(enum.Enum):
    """Where one optimizer is in the current iteration."""

    READY = 0  # gradients still scaled
    UNSCALED = 1  # unscale_() ran: gradients are true gradients, inf/NaN recorded
    STEPPED = 2  # step() ran (or was skipped) for this iteration


def float32(x: float) -> float:
    """``x`` rounded to the nearest float32 number (the precision PyTorch keeps the scale in)."""
    with np.errstate(over="ignore"):
        return float(np.float32(x))


def update_scale(scale: float, growth_tracker: int, found_inf: bool,
                 growth_factor: float, backoff_factor: float, growth_interval: int) -> tuple[float, int]:
    """The ``(scale, growth_tracker)`` after a step that did (``found_inf``) or did not overflow."""
    ### BEGIN SOLUTION 9.4 | an overflow backs the scale off and starts the count of clean steps again; a clean step counts, and the growth_interval-th one in a row grows the scale (if float32 can hold the result) and starts the count again; every new scale is a float32 number
    if found_inf:
        return float32(scale * backoff_factor), 0
    successful = growth_tracker + 1
    if successful == growth_interval:
        grown = float32(scale * growth_factor)
        return (grown if math.isfinite(grown) else scale), 0
    return scale, successful
    ### END SOLUTION


def needs_loss_scaling(dtype) -> bool:
    """Whether training with gradients of ``dtype`` needs a loss scale: float16 yes; bfloat16, float32, float64 no."""
    ### BEGIN SOLUTION 9.4 | the loss scale exists because small gradients underflow: it is needed exactly when the format's smallest normal number is larger than float32's (compare the formats' limits, not their names or their widths)
    dtype = as_dtype(dtype)
    return is_floating_point(dtype) and float(finfo(dtype).tiny) > float(finfo(np.float32).tiny)
    ### END SOLUTION
