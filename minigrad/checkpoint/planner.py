"""``plan(model, input_shape, budget_bytes=..., card=..., batch_size=...)``: which segments of a Sequential to checkpoint.

::

    p = plan(model, (1, 28, 28), card="gtx1050", batch_size=4096)
    print(p)                      # the segments, the predicted peak, the share of FLOPs run again
    planned = p.apply(model)      # a module running the model with the chosen segments checkpointed
    loss = loss_fn(planned(x), y)

How
1. :func:`.chain_costs.measure_chain` measures each layer's saved bytes,
   input bytes and FLOPs at ``batch_size`` (exact, from three small batches).
2. :func:`minigrad.memory.estimate` of the step without checkpointing gives
   what no plan changes, the *fixed* bytes: the parameters, their gradients
   (all of them, as at the end of backward), the optimizer's state, the
   batch and module buffers; and what the chain leaves out (the loss's saved
   tensors, gradients in flight): its forward/backward peak less the fixed
   bytes and the chain model's peak of storing everything.
3. :func:`.chain_dp.plan_chain` picks the plan with the fewest recomputed
   FLOPs whose modelled peak fits what is left for activations. The
   *predicted* peak is fixed + left out + the plan's modelled peak.
4. The answer is then measured, not trusted: the planned step (its
   recomputes included) is estimated again with ``checkpoint=plan.run``.
   Without a card it must fit the budget in allocated bytes (the tracker's
   truth); with a card, in reserved bytes, its allocations replayed through
   the card's caching allocator as chapter 08 decides every fit
   (:mod:`minigrad.memory.fit`). If it does not, the activation budget
   shrinks by the excess and the plan is made again (a few rounds at most).

The budget is ``budget_bytes`` or, with only a ``card``, its usable bytes
(memory less the CUDA context); given both, both must hold. Invariant: a
returned plan fits (``fits`` is True), or :func:`plan` raises ``ValueError``
saying what takes the memory.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

from minigrad import nn
from minigrad.checkpoint import chain_dp  # plan_chain through the module: use_exercise("10.4") swaps it
from minigrad.checkpoint.chain_costs import ChainCosts, measure_chain
from minigrad.checkpoint.chain_dp import ChainPlan, evaluate_plan, uniform_segments
from minigrad.checkpoint.chain_run import run_segments
from minigrad.memory import Estimate, estimate, format_bytes, get_profile

__all__ = ["Plan", "PlannedChain", "plan"]

REPLANS = 4  # rounds of "shrink the activation budget by what the measured step was over"
FORWARD_BACKWARD = ("forward", "backward")


@dataclass(frozen=True, eq=False)
class Plan:
    """A checkpointing plan for one Sequential at one batch size; see the module docstring. Made by :func:`plan`."""

    model_name: str
    input_shape: tuple
    batch_size: int
    budget_bytes: int | None  # the budget asked for (None: the card's usable bytes)
    card: object  # the GPUProfile the fit is decided on, or None
    costs: ChainCosts
    chain: ChainPlan
    fixed_bytes: int  # parameters, gradients, optimizer state, the batch, buffers: no plan changes them
    outside_chain: int  # what the chain model leaves out, measured without checkpointing (loss, gradients in flight)
    unplanned: Estimate  # the step without checkpointing
    planned: Estimate | None = None  # the step with this plan, measured

    @property
    def segments(self) -> tuple:
        return self.chain.segments

    @property
    def predicted_peak(self) -> int:
        """Fixed bytes + what the chain leaves out + the chain model's peak (see :mod:`.chain_dp`)."""
        return self.fixed_bytes + self.outside_chain + self.chain.peak_bytes

    @property
    def recompute_fraction(self) -> float:
        """Recomputed FLOPs over the forward's FLOPs (a whole forward pass run again is 1.0)."""
        total = sum(self.costs.flops)
        return self.chain.recompute_flops / total if total else 0.0

    @property
    def fits(self) -> bool:
        """Whether the measured planned step fits: ``budget_bytes`` in allocated bytes, ``card`` in reserved bytes."""
        fits_budget = self.budget_bytes is None or self.planned.peak <= self.budget_bytes
        return fits_budget and (self.card is None or self.planned.fits(self.card))

    def run(self, model, x):
        """``model(x)`` with the plan's checkpointed segments checkpointed (``estimate(checkpoint=plan.run)`` takes it)."""
        _check_model("Plan.run", model, len(self.costs))
        return run_segments(list(model), self.segments, x, who="Plan.run")

    def apply(self, model) -> "PlannedChain":
        """A module that runs ``model`` (its layers, shared, not copied) with the plan's segments checkpointed."""
        return PlannedChain(model, self)

    def uniform(self, segments: int | None = None) -> ChainPlan:
        """``checkpoint_sequential``'s plan with ``segments`` equal segments (default ``round(sqrt(n))``), under the
        same chain model: to compare with this plan."""
        n = len(self.costs)
        count = max(1, round(math.sqrt(n))) if segments is None else segments
        return evaluate_plan(uniform_segments(n, count), self.costs.saved_bytes, self.costs.chain_input_bytes,
                             self.costs.flops)

    def __str__(self) -> str:
        lines = [f"Checkpointing plan for {self.model_name} ({len(self.costs)} layers), input {self.input_shape}, "
                 f"batch {self.batch_size}: budget "
                 + " and ".join(([format_bytes(self.budget_bytes)] if self.budget_bytes is not None else [])
                                + ([f"the {self.card.name}"] if self.card is not None else []))]
        for start, end, checkpointed in self.segments:
            span = f"layers {start}-{end}" if end > start else f"layer {start}"
            kinds = ", ".join(self.costs.kinds[start:end + 1])
            saved = sum(self.costs.saved_bytes[start:end + 1])
            lines.append(f"  {'checkpoint' if checkpointed else 'store':<11}{span:<16}{format_bytes(saved):>11} "
                         f"saved   {kinds if len(kinds) < 60 else kinds[:57] + '...'}")
        lines.append(f"  predicted peak {format_bytes(self.predicted_peak)} = fixed {format_bytes(self.fixed_bytes)} "
                     f"(parameters, gradients, optimizer state, batch) + {format_bytes(self.outside_chain)} outside "
                     f"the chain + activations {format_bytes(self.chain.peak_bytes)}")
        lines.append(f"  measured peak {format_bytes(self.planned.peak)} ({self.planned.peak_phase}); without "
                     f"checkpointing {format_bytes(self.unplanned.peak)}")
        lines.append(f"  recomputed: {self.recompute_fraction:.1%} of the forward's {sum(self.costs.flops):,} FLOPs")
        if self.card is not None:
            replay = self.planned.replay(self.card)
            lines.append(f"  on the {self.card.name}: {'fits' if self.planned.fits(self.card) else 'does NOT fit'}, "
                         f"reserved {format_bytes(replay.peak_reserved)} of {format_bytes(self.card.usable_bytes)} "
                         f"usable (without the plan: {'fits' if self.unplanned.fits(self.card) else 'does NOT fit'})")
        return "\n".join(lines)


class PlannedChain(nn.Module):
    """``model`` run with ``plan``'s segments checkpointed; its parameters are ``model``'s (the same tensors)."""

    def __init__(self, model, plan: Plan) -> None:
        super().__init__()
        _check_model("Plan.apply", model, len(plan.costs))
        self.chain = model
        self.plan = plan

    def forward(self, x):
        return self.plan.run(self.chain, x)


def _check_model(function: str, model, n_layers: int) -> None:
    if not isinstance(model, nn.Sequential) or len(model) != n_layers:
        raise ValueError(f"{function}: the plan is for a Sequential of {n_layers} layers, got "
                         f"{type(model).__name__}" + (f" of {len(model)}" if isinstance(model, nn.Sequential) else ""))


def plan(model, input_shape, budget_bytes=None, card=None, batch_size: int | None = None, optimizer="adam",
         dtype=None) -> Plan:
    """The plan for ``model`` (a Sequential) with the fewest recomputed FLOPs that fits; see the module docstring.

    ``budget_bytes``: bytes for the whole training step; ``card``: a GPU
    profile name or :class:`~minigrad.memory.profiles.GPUProfile` (fit in
    reserved bytes); at least one of them. ``optimizer`` and ``dtype`` as
    :func:`minigrad.memory.estimate` takes them.
    """
    if not isinstance(model, nn.Sequential) or len(model) == 0:
        raise TypeError(f"plan: expected a non-empty nn.Sequential, got {type(model).__name__}; the planner cuts "
                        "a chain of layers (wrap your layers in nn.Sequential)")
    if batch_size is None:
        raise TypeError("plan: batch_size is required (the activations, hence the plan, depend on it)")
    if budget_bytes is None and card is None:
        raise TypeError("plan: give budget_bytes (bytes for the whole step) or card (a GPU profile such as "
                        "'gtx1050'), or both")
    if budget_bytes is not None and (isinstance(budget_bytes, bool) or not isinstance(budget_bytes, numbers.Real)
                                     or not math.isfinite(budget_bytes) or budget_bytes <= 0):
        raise ValueError(f"plan: budget_bytes must be a positive number of bytes, got {budget_bytes!r}")
    profile = None if card is None else get_profile(card)
    budget = min(b for b in (budget_bytes, None if profile is None else profile.usable_bytes) if b is not None)
    costs = measure_chain(model, input_shape, batch_size, dtype=dtype)
    unplanned = estimate(model, input_shape, batch_size, optimizer=optimizer, dtype=dtype)
    fixed = unplanned.parameters + unplanned.gradients + unplanned.optimizer_state + unplanned.inputs + unplanned.other
    outside = 0
    if unplanned.peak_phase in FORWARD_BACKWARD:
        outside = max(0, unplanned.peak - fixed - sum(costs.saved_bytes))
    activation_budget = budget - fixed - outside
    result = None
    for _ in range(REPLANS):
        chain = None if activation_budget < 0 else chain_dp.plan_chain(costs.saved_bytes, costs.chain_input_bytes,
                                                                       costs.flops, activation_budget)
        if chain is None:
            break
        result = Plan(type(model).__name__, costs.input_shape, int(batch_size),
                      None if budget_bytes is None else int(budget_bytes), profile, costs, chain, fixed, outside,
                      unplanned)
        planned = unplanned if not chain.checkpointed else estimate(
            model, input_shape, batch_size, optimizer=optimizer, dtype=dtype, checkpoint=result.run)
        result = replace(result, planned=planned)
        if result.fits:
            return result
        excess = planned.peak - budget
        if profile is not None and not planned.fits(profile):
            excess = max(excess, planned.reserved - profile.usable_bytes, planned.replay(profile).failed_request or 0)
        activation_budget = min(activation_budget, chain.peak_bytes) - max(excess, 1)
    where = f"the {profile.name}" if profile is not None and budget == profile.usable_bytes else format_bytes(budget)
    measured = "" if result is None else (f" (the last plan tried measured {format_bytes(result.planned.peak)}"
                                          + (f", reserved {format_bytes(result.planned.reserved)}" if profile else "")
                                          + ")")
    raise ValueError(
        f"plan: no checkpointing plan of {type(model).__name__} fits {where} at batch {batch_size}: the parameters, "
        f"gradients, optimizer state and batch take {format_bytes(fixed)} and the loss and gradients in flight "
        f"{format_bytes(outside)}, leaving {format_bytes(max(budget - fixed - outside, 0))} for activations, where "
        f"storing everything needs {format_bytes(sum(costs.saved_bytes))}{measured}; try a smaller batch_size, a "
        "lighter optimizer ('sgd') or gradient accumulation")
