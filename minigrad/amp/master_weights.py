"""Master weights, the classic mixed-precision recipe (Micikevicius et al., "Mixed Precision Training", ICLR 2018).

The model itself is float16: its forward and backward run on float16 weights
and give float16 gradients. The optimizer never sees them; it updates a
float32 *master* copy of every parameter, and after each step the masters
are rounded down into the model::

    mw = MasterWeights(model, lambda params: optim.Adam(params, lr=1e-3))   # model is now float16
    loss = loss_fn(model(x.half()), y)
    mw.scale(loss).backward()        # float16 gradients of loss * scale
    mw.step()                        # unscale, inf/NaN check, skip, float32 update, copy down
    mw.zero_grad()

Why the masters: an update ``lr * grad`` is often below half a float16 step
of the weight (a weight of 1.0 moves only by multiples of 2**-10), so in
float16 it would round away; in float32 it accumulates. Why the scale:
float16 gradients below ~6e-8 are zero; the loss is multiplied by ``scale``
so they stay representable, and the float32 gradients are divided by it again.

PyTorch's way (:mod:`.autocast`: a float32 model, its ops run in float16,
the weight-cast cache) is the same idea turned around: the float32
parameters *are* the masters, and the float16 copies live only during the
step. Model state is 16 bytes per parameter with Adam either way:
4 + 4 + 8 (float32 weight, gradient, two moments) here against
2 + 2 + 4 + 8 (float16 weight and gradient, float32 master, two moments).

Invariants
- After every :meth:`~MasterWeights.step` each model parameter is its
  master rounded to float16; a skipped step changes neither.
- The optimizer holds the masters only; their gradients are float32,
  unscaled, and set only for the update (``None`` after it).
- ``loss_scale``: a number (static scale) or a :class:`~.grad_scaler.GradScaler`
  (dynamic: each step advances that scaler's own state machine,
  :mod:`.scaler_state`, so its scale and growth tracker are the ones a
  ``GradScaler`` step would leave); by default a new ``GradScaler`` on the
  model's device type.
"""

from __future__ import annotations

import numbers

from minigrad.amp import master_step
from minigrad.amp.grad_scaler import GradScaler
from minigrad.tensor import Tensor, float16, no_grad, tensor

__all__ = ["MasterWeights"]


class MasterWeights:
    """Turn ``model`` into a float16 model trained through float32 masters updated by ``optimizer_factory(masters)``."""

    def __init__(self, model, optimizer_factory, loss_scale=None, dtype=float16) -> None:
        if not callable(optimizer_factory):
            raise TypeError("MasterWeights: optimizer_factory must be a callable params -> optimizer, "
                            f"e.g. lambda params: optim.Adam(params, lr=1e-3); got {optimizer_factory!r}")
        if loss_scale is None:  # dynamic, PyTorch's defaults
            params = list(model.parameters())
            loss_scale = GradScaler(params[0].device.type if params else "cpu")
        if isinstance(loss_scale, GradScaler):
            self.scaler = loss_scale
        elif isinstance(loss_scale, numbers.Real) and not isinstance(loss_scale, bool) and 0 < loss_scale < float("inf"):
            self.scaler, self._static = None, float(loss_scale)
        else:
            raise ValueError(f"MasterWeights: loss_scale={loss_scale!r} must be a finite number > 0 or a GradScaler")
        self.model = model
        self.params = list(model.parameters())
        self.masters = []
        with no_grad():
            for p in self.params:
                master = p.detach().to(dtype="float32", copy=True)
                master.requires_grad_(True)
                self.masters.append(master)
                p.data = p.data.to(dtype)
        self.optimizer = optimizer_factory(self.masters)
        self.skipped = 0

    def get_scale(self) -> float:
        return self.scaler.get_scale() if self.scaler is not None else self._static

    def scale(self, loss: Tensor) -> Tensor:
        """``loss * scale`` (the scaler's, or the static one)."""
        if self.scaler is not None:
            return self.scaler.scale(loss)
        return loss * tensor(self._static, dtype="float32", device=loss.device)

    def step(self) -> bool:
        """One optimizer step through the masters (:func:`.master_step.master_weight_step`); False if it was skipped."""
        scale = self.get_scale()
        skipped = master_step.master_weight_step(self.params, self.masters, 1.0 / scale, self.optimizer.step)
        for master in self.masters:  # the masters hold no gradient between steps
            master.grad = None
        stepped = not skipped
        self.skipped += skipped
        if self.scaler is not None and self.scaler.is_enabled():
            self.scaler._advance(found_inf=skipped)  # the scaler's own state machine: scale and growth tracker
        return stepped

    def zero_grad(self) -> None:
        """Drop the model's float16 gradients (the masters hold none between steps)."""
        for p in self.params:
            p.grad = None
