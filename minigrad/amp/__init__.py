"""Stage 6 (chapter 09): mixed precision — the casting that autocast uses, and dynamic loss scaling (``GradScaler``).

Reading order
-------------
The files that carry the chapter's ideas, in the order to read them (471 lines in all):

1. ``casting_policy.py`` (51 lines): the core's dtype-policy slot filled from a
   rule ``rule(op, dtypes) -> dtype``: an op's floating point operands cast
   (recorded, differentiable) before it computes.
2. ``cast_cache.py`` (98 lines): inside one mixed-precision region, each weight
   is cast once (PyTorch's autocast cache).
3. ``scaler_state.py`` (59 lines): dynamic loss scaling as a state machine:
   the scale and its growth tracker after a clean or an overflowing step.
4. ``grad_scaler.py`` (263 lines): ``GradScaler``, PyTorch's API around that
   state machine: ``scale``, ``unscale_``, ``step`` (skipped on inf/NaN),
   ``update``, ``state_dict``.

Extensions (not on the reading path)
------------------------------------
- ``unscale.py`` (75 lines): one gradient unscaled in place and checked for
  inf/NaN; the GPU stage's fused kernel for ``"cuda"``, through a per-device registry.
"""

from minigrad.amp.cast_cache import WeightCastCache, active_cache, cached_cast, weight_cast_cache
from minigrad.amp.casting_policy import casting_policy
from minigrad.amp.grad_scaler import GradScaler
from minigrad.amp.unscale import register_unscale_kernel

__all__ = ["casting_policy", "cached_cast", "weight_cast_cache", "WeightCastCache", "active_cache",
           "GradScaler", "register_unscale_kernel"]
