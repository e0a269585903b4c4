"""Stage 7 (chapter 10): activation checkpointing - trading compute for memory.

Reading order
-------------
The files that carry the chapter's ideas, in the order to read them (722 lines in all):

1. ``recompute.py`` (272 lines): ``checkpoint(fn, *args)`` runs a block keeping
   only its inputs and runs it again during backward, on the core's
   saved-tensor hooks; ``count_recomputes()``.
2. ``rng_states.py`` (33 lines): the random-number states the recompute starts
   from (dropout draws the same mask twice).
3. ``errors.py`` (10 lines): ``CheckpointError``, a recompute that does not match its first run.
4. ``batchnorm_stats.py`` (63 lines): the BatchNorm pitfall (running statistics
   updated twice) and its fix: every module's buffers put back after the recompute runs it.
5. ``segments.py`` (29 lines): where ``checkpoint_sequential`` cuts a chain (exercise 10.3).
6. ``sequential.py`` (65 lines): ``checkpoint_sequential(functions, segments, input)``,
   the sqrt(n) trade-off.
7. ``wrapper.py`` (112 lines): ``CheckpointWrapper(module)`` and ``apply(model, which=...)``,
   checkpointing chosen submodules by configuration.
8. ``selective.py`` (138 lines): ``selective_checkpoint_context(policy)``: keep what
   the expensive ops saved, recompute the rest (``save_expensive``).

Extensions (not on the reading path)
------------------------------------
"""

from minigrad.checkpoint.errors import CheckpointError
from minigrad.checkpoint.recompute import RecomputeCount, checkpoint, count_recomputes
from minigrad.checkpoint.segments import segment_bounds
from minigrad.checkpoint.selective import RECOMPUTE, SAVE, save_expensive, selective_checkpoint_context
from minigrad.checkpoint.sequential import checkpoint_sequential
from minigrad.checkpoint.wrapper import CheckpointWrapper, apply

__all__ = ["checkpoint", "CheckpointError", "count_recomputes", "RecomputeCount", "segment_bounds",
           "checkpoint_sequential", "CheckpointWrapper", "apply", "selective_checkpoint_context",
           "save_expensive", "SAVE", "RECOMPUTE"]
