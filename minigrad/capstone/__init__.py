"""The capstone: every stage together, to train a real network inside a small card's memory.

A :class:`TrainConfig` names one way to train (precision, checkpointing,
accumulation, the simulated card); :func:`estimate_step` says whether its
step fits a card (its allocations replayed through the card's caching
allocator, which empties its cache and retries when full), and :func:`fitting_configuration` turns
the knobs one at a time until one does; a :class:`TrainingRun` trains a
model that way, step by step, and saves and resumes bitwise. This package
imports every stage below it; none imports it.

Reading order
-------------
The files that carry the idea, in the order to read them (1,149 lines in all):

1. ``config.py`` (106 lines): ``TrainConfig``, the knobs and their invariant
   (the effective batch never changes).
2. ``step_forward.py`` (93 lines): the forward checkpointed as the config says
   (N segments, chapter 10's plan for the card, or the budget mode), and the models each setting accepts.
3. ``step_recipe.py`` (135 lines): a configuration's step as the forward, loss and
   optimizer chapter 08's estimate runs (autocast, GradScaler, checkpointed segments, micro-batches).
4. ``fit_plan.py`` (310 lines): ``estimate_step``: the step's allocated and reserved peaks and
   the card's verdict; ``tracked_step``: one real step on the simulated card beside it.
5. ``fitting.py`` (119 lines): ``fitting_configuration``: the knobs turned one at a time until
   a step fits (exercise 11.1).
6. ``training_run.py`` (186 lines): ``TrainingRun``: one optimizer step of the
   effective batch - micro-batches, autocast, the loss scaler, on the simulated card.
7. ``run_state.py`` (200 lines): saving and resuming a run: everything its future
   depends on, checked before it is restored (exercise 11.2).

Extensions (not on the reading path)
------------------------------------
- ``run_history.py`` (69 lines): the losses, loss scales, step times and memory peaks a run keeps.
- ``recipe_run.py`` (90 lines): an MNIST recipe trained as a run, saved every N steps, and its summary
  (``minigrad train --gpu-budget ... --resume ...``).
"""

from minigrad.capstone.config import AMP_DTYPES, CHECKPOINT_MODES, TrainConfig
from minigrad.capstone.fit_plan import FitPlanError, StepFit, TrackedStep, estimate_step, tracked_step
from minigrad.capstone.fitting import FitSearch, NothingFits, accumulation_choices, fitting_configuration
from minigrad.capstone.training_run import TrainingRun

__all__ = ["TrainConfig", "AMP_DTYPES", "CHECKPOINT_MODES", "TrainingRun",
           "estimate_step", "tracked_step", "StepFit", "TrackedStep", "FitPlanError",
           "fitting_configuration", "FitSearch", "NothingFits", "accumulation_choices"]
