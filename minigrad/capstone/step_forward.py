"""How a training run's forward pass is checkpointed, as its :class:`TrainConfig` says.

``checkpoint=N``: ``checkpoint_sequential(model, N, x)``, N equal segments.
``"auto"``: chapter 10's planner picks the segments for the card at the
micro-batch, once (the plan holds for every step of the run). ``"budget"``:
the budget mode, one :class:`~minigrad.checkpoint.budget` held across steps,
its bytes the card's usable memory less what no checkpointing changes (see
:func:`activation_budget`). None: the model's own forward.

Invariant: whichever mode, the loss and the gradients are bitwise those of
the plain forward (chapter 10's recomputes replay the same calls with the
same random state); only memory and time differ. Planning draws no random
numbers that the run would see (it runs under ``fork_rng``).
"""

from __future__ import annotations

from contextlib import nullcontext

from minigrad import nn
from minigrad.checkpoint import budget, checkpoint_sequential, plan
from minigrad.memory import format_bytes, get_profile
from minigrad.tensor import fork_rng

__all__ = ["CheckpointedForward", "activation_budget", "check_checkpointing", "configured_forward"]

OPTIMIZER_SLOTS = {"adam": 2, "sgd": 1}  # state tensors per parameter (Adam's two moments; SGD's momentum at most)


def activation_budget(model, config, input_bytes: int) -> int:
    """Bytes left on ``config.card`` for saved activations: usable memory less parameters, gradients, optimizer
    state (``OPTIMIZER_SLOTS``) and the micro-batch; ``ValueError`` when nothing is left."""
    profile = get_profile(config.card)
    parameter_bytes = sum(p.nbytes for p in model.parameters())
    fixed = parameter_bytes * (2 + OPTIMIZER_SLOTS[config.optimizer]) + input_bytes
    left = profile.usable_bytes - fixed
    if left <= 0:
        raise ValueError(
            f"TrainingRun: checkpoint='budget' on the {profile.name}: the parameters, gradients, optimizer state "
            f"and micro-batch take {format_bytes(fixed)} of {format_bytes(profile.usable_bytes)} usable, leaving "
            f"nothing for activations; choose a card with more memory or a smaller model")
    return left


def check_checkpointing(model, checkpoint, who: str) -> None:
    """Raise TypeError (not a chain) or ValueError (more segments than layers) when ``model`` cannot be
    checkpointed as the setting ``checkpoint`` says; ``who`` names the function in the message."""
    if checkpoint is not None and checkpoint != "budget" and not isinstance(model, nn.Sequential):
        raise TypeError(
            f"{who}: checkpoint={checkpoint!r} cuts the model into segments, so it must be an nn.Sequential, "
            f"got {type(model).__name__}; wrap its layers in nn.Sequential, or use checkpoint='budget' (any model) "
            f"or checkpoint=None")
    if isinstance(checkpoint, int) and checkpoint > len(model):
        raise ValueError(f"{who}: checkpoint={checkpoint} segments, but the Sequential has only {len(model)} "
                         f"layers; use at most {len(model)}")


def configured_forward(model, x, checkpoint, plan=None):
    """``model(x)`` as the setting ``checkpoint`` says: None or "budget", the model's own forward (the budget is a
    context around the whole step); "auto", the planner's ``plan``; N, ``checkpoint_sequential`` in N segments."""
    if checkpoint is None or checkpoint == "budget":
        return model(x)
    if checkpoint == "auto":
        return plan.run(model, x)
    return checkpoint_sequential(model, checkpoint, x)


class CheckpointedForward:
    """``forward(x)`` of ``model`` checkpointed per ``config``; ``around_step()`` is the context one step runs in."""

    def __init__(self, model, config) -> None:
        check_checkpointing(model, config.checkpoint, "TrainingRun")
        self.model, self.config = model, config
        self.plan = None
        self.budget = None

    def prepare(self, x) -> None:
        """Plan (``"auto"``) or size the budget (``"budget"``) from the first batch ``x``, once, off the card."""
        mode = self.config.checkpoint
        if mode == "auto" and self.plan is None:
            with fork_rng():
                self.plan = plan(self.model, tuple(x.shape[1:]), card=self.config.card,
                                 batch_size=self.config.micro_batch, optimizer=self.config.optimizer)
        elif mode == "budget" and self.budget is None:
            micro_bytes = x.nbytes * self.config.micro_batch // max(len(x), 1)
            self.budget = budget(activation_budget(self.model, self.config, micro_bytes))

    def __call__(self, x):
        return configured_forward(self.model, x, self.config.checkpoint, self.plan)

    def around_step(self):
        """The context one step's forward and backward run in: the budget mode's budget, else nothing."""
        return self.budget if self.budget is not None else nullcontext()
