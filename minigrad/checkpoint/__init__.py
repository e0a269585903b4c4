"""Stage 7 (chapter 10): activation checkpointing - trading compute for memory.

``checkpoint(fn, *args)`` runs a block keeping only its inputs and runs it
again during backward (``recompute.py``), with the random-number states of
its first run (``rng_states.py``).
"""

from minigrad.checkpoint.errors import CheckpointError
from minigrad.checkpoint.recompute import checkpoint

__all__ = ["checkpoint", "CheckpointError"]
