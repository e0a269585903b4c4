"""The capstone: every stage together, to train a real network inside a small card's memory.

A :class:`TrainConfig` names one way to train (precision, checkpointing,
accumulation, the simulated card); a :class:`TrainingRun` trains a model that
way, step by step, and saves and resumes bitwise. This package imports every
stage below it; none imports it.

Reading order
-------------
The files that carry the idea, in the order to read them (571 lines in all):

1. ``config.py`` (103 lines): ``TrainConfig``, the knobs and their invariant
   (the effective batch never changes).
2. ``step_forward.py`` (82 lines): the forward checkpointed as the config says
   (N segments, chapter 10's plan for the card, or the budget mode).
3. ``training_run.py`` (186 lines): ``TrainingRun``: one optimizer step of the
   effective batch - micro-batches, autocast, the loss scaler, on the simulated card.
4. ``run_state.py`` (200 lines): saving and resuming a run: everything its future
   depends on, checked before it is restored (exercise 11.2).

Extensions (not on the reading path)
------------------------------------
- ``run_history.py`` (69 lines): the losses, loss scales, step times and memory peaks a run keeps.
- ``recipe_run.py`` (90 lines): an MNIST recipe trained as a run, saved every N steps, and its summary
  (``minigrad train --gpu-budget ... --resume ...``).
"""

from minigrad.capstone.config import AMP_DTYPES, CHECKPOINT_MODES, TrainConfig
from minigrad.capstone.training_run import TrainingRun

__all__ = ["TrainConfig", "AMP_DTYPES", "CHECKPOINT_MODES", "TrainingRun"]
