"""Stage 6 (chapter 09): mixed precision — the stage grows here; today it holds the casting that autocast uses.

Reading order
-------------
The files that carry the chapter's ideas, in the order to read them (149 lines in all):

1. ``casting_policy.py`` (51 lines): the core's dtype-policy slot filled from a
   rule ``rule(op, dtypes) -> dtype``: an op's floating point operands cast
   (recorded, differentiable) before it computes.
2. ``cast_cache.py`` (98 lines): inside one mixed-precision region, each weight
   is cast once (PyTorch's autocast cache).

Extensions (not on the reading path)
------------------------------------
None yet.
"""

from minigrad.amp.cast_cache import WeightCastCache, active_cache, cached_cast, weight_cast_cache
from minigrad.amp.casting_policy import casting_policy

__all__ = ["casting_policy", "cached_cast", "weight_cast_cache", "WeightCastCache", "active_cache"]
