"""One optimizer step on float32 master weights for a model stored in 16 bits: unscale, check, skip or update, copy down.

A model kept in float16 computes its gradients in float16, and an optimizer
step there would lose most updates: next to a weight of 1.0 the float16
numbers are 2**-10 apart, so an update of 1e-4 rounds away. The classic
remedy (Micikevicius et al., "Mixed Precision Training", 2018; apex's
``FP16_Optimizer``) keeps a float32 *master* copy of each weight, lets the
optimizer update the masters, and copies them down into the model::

    masters = [nn.Parameter(p.detach().to(float32, copy=True)) for p in model.parameters()]
    optimizer = optim.SGD(masters, lr=0.1)
    ...
    scale = 1024.0
    (loss * scale).backward()                     # 16-bit gradients of the scaled loss
    skipped = master_weight_step(list(model.parameters()), masters, 1 / scale, optimizer.step)

Each step, in this order:

1. unscale: each master's gradient is its model weight's gradient, widened to
   float32 and multiplied by ``inv_scale`` there (:func:`.unscale.unscale_grad_`:
   in 16 bits the small gradients the scale rescued would underflow again);
2. check: if any of those gradients holds an inf or NaN the step is skipped
   (returns True): masters and model stay as they were;
3. the ``clip`` hook, if given, on the list of masters (it may wrap
   ``nn.utils.clip_grad_norm_``): it sees the true, unscaled gradients;
4. ``step()``: the optimizer's update of the masters, in float32;
5. copy down: each model weight becomes its master rounded to the model's
   dtype, in place (the model's tensors are the same objects afterwards).

Invariants
- ``model_params[i]`` and ``master_params[i]`` have one shape; masters are float32.
- A model weight without a gradient leaves its master's gradient None (the
  optimizer skips it) and takes no part in the check.
- A step changes the masters and the model, or neither; the model's own
  gradients are never modified.
"""

from __future__ import annotations

from typing import Callable, Sequence

from minigrad.amp.unscale import unscale_grad_
from minigrad.tensor import Tensor, float32, no_grad

__all__ = ["master_weight_step"]


def master_weight_step(model_params: Sequence[Tensor], master_params: Sequence[Tensor], inv_scale: float,
                       step: Callable[[], object], clip: Callable[[Sequence[Tensor]], object] | None = None) -> bool:
    """Unscale the model's gradients into the float32 masters, skip on inf/NaN, else update and copy down; True if skipped."""
    if len(model_params) != len(master_params):
        raise ValueError(f"master_weight_step: {len(model_params)} model weights but {len(master_params)} masters")
    ### BEGIN SOLUTION 9.3 | give each master a float32 copy of its weight's gradient and unscale it (one found-inf flag for all of them); on inf/NaN return before anything changes; otherwise clip (if asked) the true gradients, step, and round each master back into its model weight in place
    found_inf = None
    for model, master in zip(model_params, master_params):
        if model.grad is None:
            master.grad = None
            continue
        master.grad = model.grad.to(float32, copy=True)
        found_inf = unscale_grad_(master.grad, inv_scale, found_inf)
    if found_inf is not None and float(found_inf[0].item()):
        return True
    if clip is not None:
        clip(master_params)
    step()
    with no_grad():
        for model, master in zip(model_params, master_params):
            model.copy_(master)
    return False
    ### END SOLUTION
