"""Stage 6 (chapter 09): mixed precision — autocast (PyTorch's op lists on the core's dtype-policy slot), dynamic loss scaling, master weights.

Reading order
-------------
The files that carry the chapter's ideas, in the order to read them (1,187 lines in all):

1. ``float16_bits.py`` (82 lines): the float16 format on the bits: a float32
   number rounded to nearest even, subnormals, overflow, NaN (exercise 9.1).
2. ``casting_policy.py`` (51 lines): the core's dtype-policy slot filled from a
   rule ``rule(op, dtypes) -> dtype``: an op's floating point operands cast
   (recorded, differentiable) before it computes.
3. ``op_lists.py`` (73 lines): PyTorch's lists — which ops run in float16/bfloat16
   (matrix products, convolutions), which in float32 (losses; on CUDA also
   exp, log, softmax, sums, norms), which in their widest input dtype.
4. ``autocast_state.py`` (74 lines): per thread and device type, whether
   autocast is on, its dtype, whether weights are cached.
5. ``autocast_policy.py`` (83 lines): the policy autocast installs: each op's
   eligible tensors cast to the dtype its list gives (exercise 9.2).
6. ``cast_cache.py`` (108 lines): inside one mixed-precision region, each weight
   is cast once (PyTorch's autocast cache).
7. ``autocast.py`` (126 lines): ``autocast(device_type, dtype, enabled, cache_enabled)``,
   a context manager and decorator that nests and restores.
8. ``scaler_state.py`` (79 lines): dynamic loss scaling as a state machine:
   the scale and its growth tracker after a clean or an overflowing step
   (exercise 9.4), and which formats need a loss scale at all.
9. ``grad_scaler.py`` (264 lines): ``GradScaler``, PyTorch's API around that
   state machine: ``scale``, ``unscale_``, ``step`` (skipped on inf/NaN),
   ``update``, ``state_dict``.
10. ``master_step.py`` (70 lines): one optimizer step on float32 master
    weights of a 16-bit model: unscale, skip on inf/NaN, clip, update, copy
    down (exercise 9.3).
11. ``master_weights.py`` (104 lines): the classic recipe around that step: a
    float16 model, float32 masters that the optimizer updates, a loss scale.
12. ``float8_matmul.py`` (73 lines): an experiment: per-tensor scaled float8
    (e4m3, e5m2) matmul with float32 accumulation, its error beside float16/bfloat16.

Extensions (not on the reading path)
------------------------------------
- ``unscale.py`` (75 lines): one gradient unscaled in place and checked for
  inf/NaN; the GPU stage's fused kernel for ``"cuda"``, through a per-device registry.
- ``cast_accounting.py`` (36 lines): while memory is tracked, autocast's copy of a
  parameter or of the data is counted in its source's category.
- ``step_memory.py`` (35 lines): one step's tracked peak, activation high-water mark
  and model state, the figures the benchmark and chapter compare.
"""

from minigrad.amp.autocast import autocast
from minigrad.amp.autocast_state import get_autocast_dtype, is_autocast_enabled
from minigrad.amp.cast_cache import WeightCastCache, active_cache, cached_cast, weight_cast_cache
from minigrad.amp.casting_policy import casting_policy
from minigrad.amp.grad_scaler import GradScaler
from minigrad.amp.master_weights import MasterWeights
from minigrad.amp.scaler_state import needs_loss_scaling
from minigrad.amp.step_memory import step_memory
from minigrad.amp.unscale import register_unscale_kernel

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "casting_policy", "cached_cast", "weight_cast_cache", "WeightCastCache", "active_cache",
           "GradScaler", "needs_loss_scaling", "register_unscale_kernel", "MasterWeights", "step_memory"]
