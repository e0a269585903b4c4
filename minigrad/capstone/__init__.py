"""The capstone: every stage together, to train a real network inside a small card's memory.

A :class:`TrainConfig` names one way to train (precision, checkpointing,
accumulation, the simulated card). This package imports every stage below
it; none imports it.

Reading order
-------------
The files that carry the idea, in the order to read them (620 lines in all):

1. ``config.py`` (104 lines): ``TrainConfig``, the knobs and their invariant
   (the effective batch never changes).
2. ``step_recipe.py`` (138 lines): a configuration's step as the forward, loss and
   optimizer chapter 08's estimate runs (autocast, GradScaler, checkpointed segments, micro-batches).
3. ``fit_plan.py`` (264 lines): ``estimate_step``: the step's allocated and reserved peaks and
   the card's verdict; ``tracked_step``: one real step on the simulated card beside it.
4. ``fitting.py`` (114 lines): ``fitting_configuration``: the knobs turned one at a time until
   a step fits (exercise 11.1).

Extensions (not on the reading path)
------------------------------------
None yet.
"""

from minigrad.capstone.config import AMP_DTYPES, CHECKPOINT_MODES, TrainConfig
from minigrad.capstone.fit_plan import FitPlanError, StepFit, TrackedStep, estimate_step, tracked_step
from minigrad.capstone.fitting import FitSearch, NothingFits, accumulation_choices, fitting_configuration

__all__ = ["TrainConfig", "AMP_DTYPES", "CHECKPOINT_MODES",
           "estimate_step", "tracked_step", "StepFit", "TrackedStep", "FitPlanError",
           "fitting_configuration", "FitSearch", "NothingFits", "accumulation_choices"]
