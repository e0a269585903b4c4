"""The training step of a ``TrainConfig`` as the three pieces chapter 08's estimate and card run take.

:func:`minigrad.memory.estimate` and :func:`minigrad.memory.card_check.train_on_card`
run the loop of ``fit`` with three pluggable parts: the forward pass
(``checkpoint=``, a callable ``(model, x) -> output``), the loss
(``loss_fn=``) and the optimizer (a callable ``params -> optimizer``).
Every knob of a configuration is one of them, so the memory stage needs no
hook for the stages above it:

- **checkpointing**: the forward runs ``checkpoint_sequential(model, N, x)``
  (N segments) or the planner's ``Plan.run`` (``"auto"``);
- **amp**: the forward *and* the loss run inside ``autocast("cpu", dtype)``
  (PyTorch's recipe: the region covers the loss; cross-entropy then runs in
  float32 by the op lists), the parameters stay float32 (their float16
  copies are counted as parameters, :mod:`minigrad.amp.cast_accounting`);
  with float16 the loss is multiplied by a ``GradScaler``'s scale and the
  optimizer is wrapped so that its ``step`` is ``scaler.step`` then
  ``scaler.update`` - the unscale, the inf checks and their flags are in
  the step, byte for byte;
- **accumulation**: the loop's own ``accumulation_steps`` with the
  micro-batch as its batch.

The loss scale's value changes no buffer, only whether a step is skipped
(an inf found: no optimizer update, fewer bytes). The measured steps run on
random data, so the scaler starts at 1.0, where they never overflow, and a
step that is skipped all the same raises :class:`StepRecipeError` rather than
give the figures of a step that did not update.
"""

from __future__ import annotations

import minigrad.tensor as mt
from minigrad import nn
from minigrad.amp import GradScaler, autocast
from minigrad.capstone.step_forward import configured_forward
from minigrad.memory import OPTIMIZERS

__all__ = ["StepRecipe", "StepRecipeError", "recipe", "ScaledOptimizer"]

AMP = {"float16": mt.float16, "bfloat16": mt.bfloat16}


class StepRecipeError(RuntimeError):
    """A configuration's step could not be measured as configured."""


def _loss(output, target):
    if target is None:
        return (output * output).mean()
    return nn.functional.cross_entropy(output, target)


class ScaledOptimizer:
    """An optimizer whose ``step`` is a GradScaler's: unscale, check for inf/NaN, step, update the scale.

    ``param_groups`` and ``state`` are the wrapped optimizer's, so a tracker
    or a simulated card registers the same tensors.
    """

    def __init__(self, optimizer, scaler: GradScaler) -> None:
        self.optimizer, self.scaler = optimizer, scaler

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        before = self.scaler.get_scale()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        if self.scaler.get_scale() < before:
            raise StepRecipeError("fit_plan: a float16 step found an inf/NaN gradient and skipped its update, so its "
                                  "memory is not that of a training step; the model's outputs overflow float16 on "
                                  "random data: check its initialisation, or use amp='bfloat16'")


class StepRecipe:
    """``forward``, ``loss_fn``, ``make_optimizer`` and the batch of one configuration's step (see the module)."""

    def __init__(self, config, plan=None) -> None:
        if config.checkpoint == "auto" and plan is None:
            raise StepRecipeError("fit_plan: checkpoint='auto' needs the planner's plan (minigrad.checkpoint.plan)")
        self.config, self.plan = config, plan
        self.dtype = AMP.get(config.amp)
        self._scaler = None  # the GradScaler of the last optimizer made (float16)

    def _run(self, model, x):
        return configured_forward(model, x, self.config.checkpoint, self.plan)

    @property
    def batch(self) -> int:
        """The examples of one forward/backward: the micro-batch."""
        return self.config.micro_batch

    @property
    def accumulation_steps(self) -> int:
        return self.config.accumulate

    def forward(self, model, x):
        if self.dtype is None:
            return self._run(model, x)
        with autocast("cpu", dtype=self.dtype):
            return self._run(model, x)

    def loss_fn(self, output, target):
        if self.dtype is None:
            return _loss(output, target)
        with autocast("cpu", dtype=self.dtype):
            loss = _loss(output, target)
        if not self.config.scaled:
            return loss
        if self._scaler is None:
            raise StepRecipeError("fit_plan: a float16 step's loss is scaled by its optimizer's GradScaler: call "
                                  "make_optimizer first")
        return self._scaler.scale(loss)

    def make_optimizer(self, params):
        optimizer = OPTIMIZERS[self.config.optimizer](params)
        if not self.config.scaled:
            return optimizer
        self._scaler = GradScaler("cpu", init_scale=1.0)
        return ScaledOptimizer(optimizer, self._scaler)


def recipe(config, plan=None) -> StepRecipe:
    """The step of ``config`` (``plan``: the planner's plan, for ``checkpoint="auto"``)."""
    return StepRecipe(config, plan)
