"""``GradScaler``: dynamic loss scaling for float16 training, with ``torch.amp.GradScaler``'s API and semantics.

The training step it expects (PyTorch's)::

    scaler = GradScaler("cpu")                # or "cuda"
    for x, y in batches:
        optimizer.zero_grad()
        with autocast("cpu", dtype=mt.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()         # gradients of loss * scale
        scaler.unscale_(optimizer)            # optional: true gradients now, e.g. to clip them
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)                # skipped if a gradient is inf/NaN
        scaler.update()                       # the scale for the next iteration

Several optimizers: ``unscale_``/``step`` each, one ``update()`` after all
(an overflow seen by any of them lowers the scale, each skips only its own
step). Gradient accumulation: ``scale(loss).backward()`` for each micro-batch,
then ``step`` and ``update`` once.

The arithmetic of the scale lives in :mod:`.scaler_state`, the per-gradient
unscale + inf check in :mod:`.unscale`.

Invariants (PyTorch's)
- Defaults: ``init_scale=2**16``, ``growth_factor=2.0``,
  ``backoff_factor=0.5``, ``growth_interval=2000``, ``enabled=True``.
- ``1 / scale`` is computed in float64, then rounded to float32.
- The scale is multiplied in as a 0-d float32 tensor: a float16 loss tensor
  with dimensions stays float16, a 0-d float16 loss becomes float32.
- Gradients must not be float16 (keep float32 master weights); bfloat16
  ones are unscaled in float32.
- ``unscale_`` at most once per optimizer between ``update()`` calls, never
  after its ``step``; ``step`` at most once.
- Disabled, every method is a pass-through: ``scale`` returns its input,
  ``step`` calls ``optimizer.step``, ``get_scale()`` is 1.0.
- ``device="cuda"`` without a usable GPU warns and disables the scaler, as PyTorch does.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections import abc

import numpy as np

from minigrad.amp import scaler_state
from minigrad.amp.scaler_state import OptState, float32
from minigrad.amp.unscale import unscale_grad_
from minigrad.gpu import cuda_available
from minigrad.tensor import Tensor, float16, tensor

__all__ = ["GradScaler"]

_NO_SCALE_FIX = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."


def _check_factor(name: str, value, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (low < value < high):
        interval = f"> {low:g}" if high == math.inf else f"in ({low:g}, {high:g})"
        raise ValueError(f"GradScaler: {name}={value!r} must be a number {interval}")
    return float(value)


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps that overflowed, adjust the scale (see the module docstring)."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = str(device)
        self._init_scale = _check_factor("init_scale", init_scale, 0.0, math.inf)
        if not math.isfinite(self._init_scale):
            raise ValueError(f"GradScaler: init_scale={init_scale!r} must be finite (2**16 is the usual start)")
        self._growth_factor = _check_factor("growth_factor", growth_factor, 1.0, math.inf)
        self._backoff_factor = _check_factor("backoff_factor", backoff_factor, 0.0, 1.0)
        self._growth_interval = self._check_interval(growth_interval)
        if enabled and self._device.split(":")[0] == "cuda" and not cuda_available():
            warnings.warn("GradScaler is enabled, but CUDA is not available. Disabling. "
                          "(Use GradScaler('cpu') to scale on the CPU.)", UserWarning, stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)
        self._scale: float | None = None  # set by the first scale(), as PyTorch's lazy init
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict] = {}

    @staticmethod
    def _check_interval(value) -> int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"GradScaler: growth_interval={value!r} must be a positive int (steps between growths)")
        return int(value)

    # ------------------------------------------------------------------ the step

    def scale(self, outputs):
        """``outputs * scale`` (a tensor, or tensors nested in lists/tuples); ``outputs`` itself when disabled."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = float32(self._init_scale)
        return self._apply_scale(outputs)

    def _apply_scale(self, value):
        if isinstance(value, Tensor):
            return value * tensor(self._scale, dtype="float32", device=value.device)
        if isinstance(value, (list, tuple)):
            return type(value)(self._apply_scale(v) for v in value)
        if isinstance(value, abc.Iterable) and not isinstance(value, (str, bytes, abc.Mapping)):
            return map(self._apply_scale, value)
        raise ValueError(f"GradScaler.scale: outputs must be a Tensor or an iterable of Tensors, got {type(value).__name__}")

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place and record whether any is inf/NaN."""
        if not self._enabled:
            return
        self._check_scaled("unscale_")
        state = self._state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        for g in grads:
            if g.dtype is float16:
                raise ValueError(
                    "Attempting to unscale FP16 gradients. The parameters are float16, so their gradients are "
                    "too: keep float32 master weights (a float32 model under autocast, or float32 copies that "
                    "the optimizer updates) and let autocast run the ops in float16."
                )
        inv_scale = float32(1.0 / np.float64(self._scale))
        found_inf: dict = {}
        for g in grads:
            found_inf[g.device] = unscale_grad_(g, inv_scale, found_inf.get(g.device))
        state["found_inf_per_device"] = found_inf
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless a gradient is inf/NaN (unscaling first if needed); None if skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scaled("step")
        state = self._state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise RuntimeError(
                "No inf checks were recorded for this optimizer. None of its parameters has a gradient: "
                "call scaler.scale(loss).backward() before scaler.step(optimizer)."
            )
        result = None
        if not self._found_inf(state):
            result = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: from the overflow checks of this one, or ``new_scale``."""
        if not self._enabled:
            return
        self._check_scaled("update")
        if new_scale is not None:
            self._scale = self._checked_new_scale(new_scale)
        else:
            checked = [s for s in self._per_optimizer.values() if s["found_inf_per_device"]]
            if not checked:
                raise RuntimeError("No inf checks were recorded prior to update.")
            self._advance(any(self._found_inf(s) for s in checked))
            return
        self._per_optimizer = {}

    def _advance(self, found_inf: bool) -> None:
        """The scale and growth tracker after an iteration that did (``found_inf``) or did not overflow
        (:func:`.scaler_state.update_scale`); the next iteration begins. ``MasterWeights`` drives it too."""
        self._check_scaled("update")
        self._scale, self._growth_tracker = scaler_state.update_scale(
            self._scale, self._growth_tracker, found_inf,
            self._growth_factor, self._backoff_factor, self._growth_interval,
        )
        self._per_optimizer = {}

    @staticmethod
    def _checked_new_scale(new_scale) -> float:
        if isinstance(new_scale, Tensor):
            if new_scale.numel() != 1 or new_scale.requires_grad or not new_scale.is_floating_point():
                raise ValueError("GradScaler.update: new_scale should be a float or a 1-element floating point "
                                 "tensor with requires_grad=False.")
            new_scale = new_scale.item()
        if isinstance(new_scale, bool) or not isinstance(new_scale, numbers.Real) or not 0 < new_scale < math.inf:
            raise ValueError(f"GradScaler.update: new_scale={new_scale!r} must be a finite number > 0")
        return float32(new_scale)

    # ------------------------------------------------------------------ bookkeeping

    def _state(self, optimizer) -> dict:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": OptState.READY, "found_inf_per_device": {}})

    @staticmethod
    def _found_inf(state) -> bool:
        return any(float(flag[0].item()) for flag in state["found_inf_per_device"].values())

    def _check_scaled(self, method: str) -> None:
        if self._scale is None:
            raise RuntimeError(f"Attempted {method} but _scale is None.  {_NO_SCALE_FIX}")

    # ------------------------------------------------------------------ PyTorch's accessors

    def get_scale(self) -> float:
        """The current scale (``init_scale`` before the first ``scale()``; 1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = _check_factor("growth_factor", new_factor, 1.0, math.inf)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = _check_factor("backoff_factor", new_factor, 0.0, 1.0)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = self._check_interval(new_interval)

    def _get_growth_tracker(self) -> int:
        return self._growth_tracker if self._enabled else 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """PyTorch's keys: ``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``, ``_growth_tracker``
        (empty when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        scale = _check_factor("scale", state_dict["scale"], 0.0, math.inf)
        self._init_scale = scale
        if self._scale is not None:
            self._scale = float32(scale)
        self._growth_factor = _check_factor("growth_factor", state_dict["growth_factor"], 1.0, math.inf)
        self._backoff_factor = _check_factor("backoff_factor", state_dict["backoff_factor"], 0.0, 1.0)
        self._growth_interval = self._check_interval(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    def __repr__(self) -> str:
        status = f"scale={self.get_scale():g}, growth_tracker={self._growth_tracker}" if self._enabled else "disabled"
        return f"GradScaler({self._device!r}, {status})"
