"""``fitting_configuration(model, input_shape, batch_size, card)``: turn the knobs one at a time until a step fits.

The order (cheapest first, in what each costs the training):

1. float32, as written;
2. mixed precision (``amp``: float16 with a loss scale, or bfloat16) - the
   same update, activations and their gradients in half the bytes, faster
   on a card with tensor cores;
3. then checkpointing (``checkpoint``: the planner's plan for the card, or N
   segments) - activations dropped and made again, about one more forward;
4. then gradient accumulation, ``accumulate = 2, 3, ...`` (each a divisor of
   the batch, smallest first) - the effective batch stays ``batch_size``,
   each forward sees ``batch_size // accumulate`` examples: one step costs
   ``accumulate`` passes of a smaller batch, and small batches use a card
   badly.

Each knob is added to the ones before (it never turns one back). A
configuration fits when the card says so (``StepFit.fits_card``): its step's
allocations replayed through the card's caching allocator with the card's
capacity, its usable memory - its memory less the CUDA context
(:mod:`.fit_plan`). A full card empties its cache and retries before it
gives up, so the reserved peak on a card big enough (``Estimate.reserved``)
within the usable memory is sufficient, not necessary: judged by it, the
search would pass over configurations the card runs. The first that fits is
the answer; every configuration tried is kept, with its figures (a fitting
step's reserved peak as the card sees it), for the table.

Invariant: ``FitSearch.chosen`` fits and no configuration before it in the
order does; when none fits, :class:`NothingFits` says what takes the memory
in the last one tried.
"""

from __future__ import annotations

from dataclasses import dataclass

from minigrad.capstone.config import TrainConfig
from minigrad.capstone.fit_plan import FitPlanError, StepFit, estimate_step, fold
from minigrad.memory import format_bytes, get_profile

__all__ = ["FitSearch", "NothingFits", "fitting_configuration", "accumulation_choices"]


class NothingFits(FitPlanError):
    """No configuration in the order fits the card; ``search`` holds every one tried."""

    def __init__(self, message: str, search: "FitSearch") -> None:
        super().__init__(message)
        self.search = search


@dataclass(frozen=True)
class FitSearch:
    """The configurations tried, in order, and the first that fits (None when none does)."""

    card: object  # the GPUProfile
    tried: tuple  # StepFit, in the order tried
    chosen: StepFit | None

    @property
    def config(self) -> TrainConfig | None:
        return None if self.chosen is None else self.chosen.config

    def table(self) -> str:
        lines = [f"{self.card.name}: {format_bytes(self.card.usable_bytes)} usable (memory less the CUDA context)"]
        lines += [f"  {'->' if fit is self.chosen else '  '} {fit}" for fit in self.tried]
        return "\n".join(lines)

    __str__ = table


def accumulation_choices(batch_size: int, most: int = 64) -> list[int]:
    """The numbers of micro-batches worth trying: the divisors of ``batch_size`` above 1, up to ``most``."""
    return [k for k in range(2, min(batch_size, most) + 1) if batch_size % k == 0]


def _nothing_fits(search: FitSearch) -> NothingFits:
    last = search.tried[-1]
    parts = fold(last.peak_by_category)
    usable = search.card.usable_bytes
    biggest = sorted(parts.items(), key=lambda kv: -kv[1])
    split = ", ".join(f"{name} {format_bytes(nbytes)}" for name, nbytes in biggest if nbytes)
    fixed = parts["parameters"] + parts["gradients"] + parts["optimizer state"]
    hint = ("the parameters, gradients and optimizer state alone take more than the card has: a smaller model or "
            "a lighter optimizer (optimizer='sgd' keeps no moments)" if fixed > usable else
            "a smaller model, a lighter optimizer "
            "(optimizer='sgd') or a bigger card")
    return NothingFits(
        f"fitting_configuration: no configuration of {len(search.tried)} tried fits the {search.card.name} "
        f"({format_bytes(usable)} usable); the last, {last.label} (micro-batch {last.config.micro_batch}), needs "
        f"{format_bytes(last.reserved)} reserved on a card big enough, allocated at its peak: {split}. Try {hint}",
        search)


def fitting_configuration(model, input_shape, batch_size: int, card, amp: str = "float16", checkpoint="auto",
                          optimizer: str = "adam", most_micro_batches: int = 64) -> FitSearch:
    """The first configuration, in the module's order, whose step fits ``card``; see the module docstring.

    ``amp``: "float16" or "bfloat16"; ``checkpoint``: "auto" (the planner's
    plan for the card) or a number of segments. Raises :class:`NothingFits`
    when none does (the search it made is on the error).
    """
    profile = get_profile(card)
    first = TrainConfig(batch_size, card=profile, optimizer=optimizer)
    first.but(amp=amp, checkpoint=checkpoint)  # the knobs are checked before anything is measured
    ### BEGIN SOLUTION 11.1 | the configurations cheapest first, each one knob more than the one before: float32, mixed precision, then with checkpointing, then with 2, 3, ... micro-batches (divisors of the batch: the effective batch never changes); the answer is the first the card itself accepts, and only the card can say: it replays a step's allocations through its caching allocator at its capacity (see StepFit), while comparing one peak with the usable memory passes steps that fail for want of a free block and refuses steps a full card runs once it has emptied its cache
    order = [first, first.but(amp=amp), first.but(amp=amp, checkpoint=checkpoint)]
    order += [first.but(amp=amp, checkpoint=checkpoint, accumulate=k)
              for k in accumulation_choices(batch_size, most_micro_batches)]
    tried = []
    for config in order:
        step = estimate_step(model, input_shape, config, judge=False)
        step = step.judged(step.fits_card(profile))
        tried.append(step)
        if step.fits:
            return FitSearch(profile, tuple(tried), step)
    search = FitSearch(profile, tuple(tried), None)
    raise _nothing_fits(search)
    ### END SOLUTION
