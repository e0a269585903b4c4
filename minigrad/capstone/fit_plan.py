"""Will this configuration fit the card? One training step's memory with every knob of a ``TrainConfig`` applied.

``estimate_step(model, input_shape, config)`` is chapter 08's estimate of the
configured step (:mod:`.step_recipe` makes the step: autocast around the
forward and the loss, a GradScaler for float16, checkpointed segments, the
micro-batch accumulated ``accumulate`` times), so its figures are exact in
the batch size, and its verdict is the card's (``Estimate.fits``): the
step's allocations replayed through the card's caching allocator with the
card's capacity, its usable memory (its memory less the CUDA context)
(:mod:`minigrad.memory.fit`). A full card empties its cache - hands its
free segments back - and retries before it gives up, so a step can run on a
card smaller than the reserved peak it reaches on a card big enough
(``Estimate.reserved``): that peak within the usable memory is sufficient,
not necessary. ``checkpoint="auto"`` asks chapter 10's planner for
a plan for the card at the micro-batch (the planner plans a float32 step:
for float16 or bfloat16 the plan is cautious), then estimates the configured
step with it. ``checkpoint="budget"`` cannot be estimated ahead: which
tensors the budget mode evicts depends on the order they are made and used,
so its step is not one fixed sequence of allocations; it is *measured*, one
real step on the simulated card (``how == "measured"``).

``tracked_step`` runs one real step of the same configuration on a fresh
simulated card with the tracker on, so that the chapter can put the
estimate and the card's figures side by side; they agree exactly (allocated
peak to the byte, reserved peak to the byte; tests/capstone/test_fit_plan.py).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field, replace

import numpy as np

import minigrad.tensor as mt
from minigrad.capstone.config import TrainConfig
from minigrad.capstone.step_forward import check_checkpointing
from minigrad.capstone.step_recipe import recipe
from minigrad.checkpoint import BudgetError, budget, plan
from minigrad.memory import Estimate, OutOfMemoryError, estimate, format_bytes, get_profile, simulated_gpu, track
from minigrad.memory.estimate import example_shape
from minigrad.memory.card_check import warmed_up_copy
from minigrad.memory.estimate_recording import training_step
from minigrad import nn

__all__ = ["StepFit", "TrackedStep", "estimate_step", "tracked_step", "FitPlanError", "BAR_CATEGORIES"]

# what a bar shows: the estimate's seven categories folded into five, then the allocator's slack
BAR_CATEGORIES = ("parameters", "gradients", "optimizer state", "activations", "other")
_FOLD = {"parameter": "parameters", "gradient": "gradients", "optimizer_state": "optimizer state",
         "activation": "activations", "temporary": "other", "input": "other", "other": "other"}


class FitPlanError(ValueError):
    """A model, shape or configuration the fit plan cannot estimate; the message says why and what to do."""


def fold(peak_by_category: dict) -> dict:
    """The seven categories of chapter 08 as the five of a bar (temporaries, the batch and buffers are "other")."""
    out = dict.fromkeys(BAR_CATEGORIES, 0)
    for name, nbytes in peak_by_category.items():
        out[_FOLD[name]] += int(nbytes)
    return out


@dataclass(frozen=True, eq=False)
class StepFit:
    """One configuration's step: its allocated peak by category, its reserved peak, and the card's verdict.

    ``fits`` is None without a card or unjudged (``estimate_step(judge=False)``).
    ``reserved``: the allocator's peak on the card when the step fits it (the
    replay through the card's allocator, retry included: at most ``usable``);
    otherwise - unjudged, or not fitting - its peak on a card big enough,
    what the step would reserve if nothing made it empty its cache.
    ``how``: ``"estimated"`` (chapter 08's estimate, exact) or ``"measured"``
    (the budget mode, one real step). ``reason``: why it does not fit (or
    could not be planned), else "". ``known``: the card's verdict where no
    replay can give it (a measured step's run, False for a configuration no
    plan could be made for), else None.
    """

    config: TrainConfig
    peak: int
    peak_by_category: dict
    reserved: int
    fits: bool | None
    usable: int | None
    how: str = "estimated"
    reason: str = ""
    estimate: Estimate | None = field(default=None, repr=False)
    plan: object = field(default=None, repr=False)
    known: bool | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return self.config.label()

    @property
    def bars(self) -> dict:
        """The bar's parts: the five categories at the peak, then ``reserved beyond allocated``."""
        parts = fold(self.peak_by_category)
        parts["reserved beyond allocated"] = max(self.reserved - self.peak, 0)
        return parts

    def fits_card(self, profile=None) -> bool:
        """Whether ``profile``'s card (default: the configuration's) runs this step: the card's verdict.

        The step's allocations replayed through the card's caching allocator
        with the card's capacity (``Estimate.fits``): when a request finds no
        free block and no room for a new segment, the card empties its cache
        and retries, so the step may run although ``reserved`` on a card big
        enough is above ``usable``.
        """
        if profile is None and self.config.card is None:
            raise FitPlanError(f"StepFit.fits_card: {self.label} names no card; pass one, e.g. fits_card('gtx1050')")
        card = get_profile(self.config.card if profile is None else profile)
        if self.known is not None:
            if self.how == "measured" and card != get_profile(self.config.card):
                raise FitPlanError(f"StepFit.fits_card: {self.label} was measured on the "
                                   f"{get_profile(self.config.card).name}, "
                                   f"not the {card.name}; measure it there (estimate_step with "
                                   f"card={card.short_name!r})")
            return self.known
        return self.estimate.fits(card)

    def judged(self, fits: bool) -> "StepFit":
        """This step with the verdict ``fits`` (a search deciding for itself: ``estimate_step(judge=False)``).

        A step judged to fit that the card runs shows its reserved peak on the
        card; any other keeps its peak on a card big enough.
        """
        if self.usable is None:
            raise FitPlanError(f"StepFit.judged: {self.label} names no card to fit")
        reserved, reason = self.reserved, ""
        if self.estimate is not None and self.known is None:
            card_fits, on_card, why = _on_card(self.estimate, get_profile(self.config.card))
            reserved = on_card if fits and card_fits else self.reserved
            reason = why if not card_fits else ""
        if not fits:
            reason = self.reason or reason or (f"reserved {format_bytes(self.reserved)} > "
                                               f"{format_bytes(self.usable)} usable")
        return replace(self, fits=bool(fits), reserved=reserved, reason="" if fits else reason)

    def row(self) -> dict:
        """Plain numbers for a table or a widget."""
        return {"configuration": self.label, "micro_batch": self.config.micro_batch, "peak": self.peak,
                "reserved": self.reserved, "fits": self.fits, "how": self.how, "reason": self.reason}

    def __str__(self) -> str:
        verdict = "" if self.fits is None else ("fits" if self.fits else "does NOT fit")
        return (f"{self.label:<44} micro-batch {self.config.micro_batch:>5}  allocated {format_bytes(self.peak):>10}"
                f"  reserved {format_bytes(self.reserved):>10}  {verdict}" + (f" ({self.reason})" if self.reason else ""))


def _check_model(function: str, model, input_shape):
    if not isinstance(model, nn.Module):
        raise FitPlanError(f"{function}: model must be an nn.Module (an nn.Sequential for checkpointing), got "
                           f"{type(model).__name__}")
    try:
        return example_shape(input_shape, op=function)
    except (TypeError, ValueError) as error:
        raise FitPlanError(str(error)) from None


def _check_config(function: str, config, model) -> TrainConfig:
    if not isinstance(config, TrainConfig):
        raise FitPlanError(f"{function}: config must be a TrainConfig, got {type(config).__name__}; e.g. "
                           f"TrainConfig(batch_size=256, amp='float16', card='gtx1050')")
    try:
        check_checkpointing(model, config.checkpoint, function)
    except (TypeError, ValueError) as error:
        raise FitPlanError(str(error)) from None
    return config


def _on_card(result: Estimate, profile) -> tuple[bool, int, str]:
    """The card's verdict on an estimated step, the reserved peak it would see, and why not when it does not fit.

    Fitting: the replay's peak on the card. Not fitting: the peak on a card
    big enough (what the step needs), and where the card's replay failed.
    """
    if result.fits(profile):
        return True, result.replay(profile).peak_reserved, ""
    usable = profile.usable_bytes
    if result.peak > usable:
        return False, result.reserved, f"allocated {format_bytes(result.peak)} > {format_bytes(usable)} usable"
    failed = result.replay(profile)
    phase = failed.failed_phase or "step"
    return False, result.reserved, (f"no block for {format_bytes(failed.failed_request or 0)} in "
                                    f"{'' if phase.startswith('the ') else 'the '}{phase}, even after emptying "
                                    f"the cache")


def estimate_step(model, input_shape, config: TrainConfig, judge: bool = True) -> StepFit:
    """The configured step's memory (see the module docstring); the budget mode is measured, not estimated.

    ``judge=False``: the figures without the card's verdict (``fits`` None,
    ``reserved`` on a card big enough), for a search that decides for itself
    (exercise 11.1: ``step.judged(...)``, the card's answer being
    ``step.fits_card()``); a checkpointing plan that could not be made keeps
    its reason.
    """
    shape = _check_model("estimate_step", model, input_shape)
    config = _check_config("estimate_step", config, model)
    profile = None if config.card is None else get_profile(config.card)
    usable = None if profile is None else profile.usable_bytes
    if config.checkpoint == "budget":
        measured = _measure_budget_mode(model, shape, config)
        return measured if judge else replace(measured, fits=None, known=measured.fits)
    the_plan = None
    if config.checkpoint == "auto":
        try:
            the_plan = plan(model, shape, card=profile, batch_size=config.micro_batch, optimizer=config.optimizer)
        except ValueError as error:
            unplanned = estimate_step(model, shape, config.but(checkpoint=None))
            return StepFit(config, unplanned.peak, unplanned.peak_by_category, unplanned.estimate.reserved,
                           False if judge else None, usable,
                           reason="no checkpointing plan fits: " + str(error).split(": ", 1)[-1].split(";")[0],
                           estimate=unplanned.estimate, known=False)
    step = recipe(config, the_plan)
    result = estimate(model, shape, step.batch, optimizer=step.make_optimizer, checkpoint=step.forward,
                      loss_fn=step.loss_fn, accumulation_steps=step.accumulation_steps)
    step = StepFit(config, result.peak, result.peak_by_category, result.reserved, None, usable, estimate=result,
                   plan=the_plan)
    return step.judged(step.fits_card(profile)) if profile is not None and judge else step


# ----------------------------------------------------------------------------- one real step on the card


@dataclass(frozen=True)
class TrackedStep:
    """What one real step did on the simulated card: the tracker's peak by category, the allocator's peaks."""

    config: TrainConfig
    fits: bool
    peak: int  # the tracker's allocated peak (exact bytes; up to the failure if it did not fit)
    peak_by_category: dict
    reserved: int  # the card's allocator: the most bytes reserved from the device
    allocated_blocks: int  # the card's allocator: the most bytes in allocated blocks (rounded to 512)
    error: str = ""


def tracked_step(model, input_shape, config: TrainConfig, card=None, forward=None) -> TrackedStep:
    """One step of a copy of ``model`` in ``config`` on a fresh simulated card (``card``, else ``config.card``).

    As chapter 08's card check: a warm-up step off the card makes the
    optimizer's state, then the model and optimizer go on the card and one
    step (the loop of ``fit``, accumulation included) runs under ``track()``.
    ``forward``: a callable ``(model, x) -> output`` to run instead of the
    recipe's (the budget mode passes its own).
    """
    shape = _check_model("tracked_step", model, input_shape)
    config = _check_config("tracked_step", config, model)
    card = card if card is not None else config.card
    if card is None:
        raise FitPlanError("tracked_step: name a card (card='rtx3060' or a TrainConfig with card=...) to run on")
    profile = get_profile(card)
    the_plan = None
    if config.checkpoint == "auto":
        the_plan = plan(model, shape, card=get_profile(config.card or card), batch_size=config.micro_batch,
                        optimizer=config.optimizer)
    step = recipe(config, the_plan)
    run_forward = forward or step.forward
    was_enabled = gc.isenabled()
    gc.collect()
    error = ""
    with mt.fork_rng(), np.errstate(all="ignore"):
        work, optimizer, make_batch = warmed_up_copy(model, shape, step.make_optimizer, step.loss_fn, step.forward)
        gc.disable()
        fits, gpu, mem = True, simulated_gpu(profile, model=work, optimizer=optimizer), track(work, optimizer)
        try:
            with gpu:
                with mem:
                    training_step(work, optimizer, make_batch, step.batch, step.loss_fn, run_forward,
                                  step.accumulation_steps, True)
        except (OutOfMemoryError, BudgetError) as failure:
            fits, error = False, str(failure).splitlines()[0]
        finally:
            if was_enabled:
                gc.enable()
        stats = gpu.stats()
        del work, optimizer
    return TrackedStep(config, fits, mem.peak, dict(mem.peak_by_category), stats["reserved_bytes.all.peak"],
                       stats["allocated_bytes.all.peak"], error)


def _measure_budget_mode(model, shape, config: TrainConfig) -> StepFit:
    """The budget mode's step, measured: saved activations held under what the card leaves once the rest is there.

    The budget: the card's usable bytes less what no eviction frees (the
    step's bytes other than its saved activations, from the estimate of the
    same step without checkpointing), at least 1 MiB.
    """
    profile = get_profile(config.card)
    plain = estimate_step(model, shape, config.but(checkpoint=None))
    rest = plain.peak - plain.estimate.activations
    held = max(profile.usable_bytes - max(rest, 0) - max(plain.estimate.reserved - plain.peak, 0), 2**20)

    step = recipe(config.but(checkpoint=None))

    def under_budget(module, x):
        with budget(held):
            return step.forward(module, x)

    run = tracked_step(model, shape, config, card=profile, forward=under_budget)
    reason = "" if run.fits else run.error
    return StepFit(config, run.peak, run.peak_by_category, run.reserved, run.fits, profile.usable_bytes,
                   how="measured", reason=reason, known=run.fits)

