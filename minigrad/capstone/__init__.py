"""The capstone: every stage together, to train a real network inside a small card's memory.

A :class:`TrainConfig` names one way to train (precision, checkpointing,
accumulation, the simulated card). This package imports every stage below
it; none imports it.

Reading order
-------------
The files that carry the idea, in the order to read them (103 lines in all):

1. ``config.py`` (103 lines): ``TrainConfig``, the knobs and their invariant
   (the effective batch never changes).

Extensions (not on the reading path)
------------------------------------
None yet.
"""

from minigrad.capstone.config import AMP_DTYPES, CHECKPOINT_MODES, TrainConfig

__all__ = ["TrainConfig", "AMP_DTYPES", "CHECKPOINT_MODES"]
