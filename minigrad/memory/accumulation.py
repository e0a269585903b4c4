"""Gradient accumulation and memory: the peak of a step against the micro-batch size, at one effective batch.

Accumulating ``k`` micro-batches of ``B / k`` examples gives the update of a
batch of ``B`` (see :class:`minigrad.optim.GradientAccumulator`), while only
one micro-batch's activations are alive at a time. The price is the
gradients: from the second micro-batch on they exist *during* backward, so
that backward adds into them. ``peak_by_micro_batch`` shows the trade for
every micro-batch size that divides the effective batch.

**How: two estimates, not one per point.** ``estimate(...)`` measures a step
at three small batches and extrapolates exactly in the batch size. With
accumulation its recorded step holds two micro-batches - the first, whose
backward creates the gradients, and one standing for the second and every
later one, whose memory does not depend on how many follow. So one estimate
without accumulation and one with ``accumulation_steps=2`` give the peak at
every micro-batch size and every number of steps, by ``Estimate.at`` (no new
measurement). ``measure_accumulated_peak`` runs real steps through
``GradientAccumulator`` under the tracker, to check the figures.

Whether a micro-batch fits a card is the card's answer, in reserved bytes:
each point keeps its estimate, whose step is replayed through the card's
allocator (:mod:`minigrad.memory.fit`); ``peak`` (allocated) and
``reserved`` stand side by side.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field, replace

import minigrad.tensor as mt
from minigrad import nn
from minigrad.memory.estimate import OPTIMIZERS, Estimate, estimate
from minigrad.memory.profiles import get_profile
from minigrad.memory.tracker import track
from minigrad.optim import GradientAccumulator
from minigrad.memory import buffers

__all__ = ["AccumulationPoint", "accumulation_estimates", "estimate_at", "peak_by_micro_batch", "fewest_steps_that_fit",
           "fewest_steps_for", "measure_accumulated_peak"]


@dataclass(frozen=True)
class AccumulationPoint:
    """One way to make the effective batch: ``steps`` micro-batches of ``micro_batch`` examples, and its step's peak.

    ``peak``: allocated bytes (the tensors'); ``reserved``: what the caching
    allocator holds at the peak, on a card big enough; ``fits(card)`` is the card's answer.
    """

    micro_batch: int
    steps: int
    peak: int
    peak_by_category: dict
    peak_phase: str
    reserved: int = 0
    estimate: Estimate | None = field(default=None, repr=False, compare=False)

    def fits(self, profile) -> bool:
        """Whether this micro-batch's step runs on ``profile``'s card (reserved bytes, replayed)."""
        if self.estimate is None:
            return self.peak <= get_profile(profile).usable_bytes
        return self.estimate.fits(profile)

    @property
    def effective_batch(self) -> int:
        return self.micro_batch * self.steps


def accumulation_estimates(model, input_shape, optimizer="adam", dtype=None, **estimate_options) -> tuple:
    """``(without, with_accumulation)``: the two estimates every micro-batch size is read from (see the module)."""
    whole = estimate(model, input_shape, 2, optimizer=optimizer, dtype=dtype, **estimate_options)
    accumulated = estimate(model, input_shape, 2, optimizer=optimizer, dtype=dtype, accumulation_steps=2,
                           **estimate_options)
    return whole, accumulated


def estimate_at(estimates: tuple, micro_batch: int, steps: int) -> Estimate:
    """The estimate of ``steps`` accumulated micro-batches of ``micro_batch``, from ``accumulation_estimates``."""
    whole, accumulated = estimates
    if steps == 1:
        return whole.at(micro_batch)
    return replace(accumulated.at(micro_batch), accumulation_steps=int(steps))


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def peak_by_micro_batch(model, input_shape, effective_batch: int, optimizer="adam", dtype=None,
                        micro_batches=None, estimates=None, **estimate_options) -> list[AccumulationPoint]:
    """The step's peak for each micro-batch size that divides ``effective_batch``, largest micro-batch first.

    ``micro_batches``: the sizes to show (default: every divisor of
    ``effective_batch``); each must divide it. ``estimates``: the pair from
    :func:`accumulation_estimates`, to reuse (else it is measured here). A
    micro-batch of one is estimated a few percent high (see ``estimate``).
    """
    if isinstance(effective_batch, bool) or not isinstance(effective_batch, int) or effective_batch < 1:
        raise ValueError(f"peak_by_micro_batch: effective_batch must be a whole number >= 1, got {effective_batch!r}")
    sizes = _divisors(effective_batch) if micro_batches is None else sorted({int(m) for m in micro_batches})
    wrong = [m for m in sizes if m < 1 or effective_batch % m]
    if wrong:
        raise ValueError(f"peak_by_micro_batch: micro-batch sizes {wrong} do not divide the effective batch "
                         f"{effective_batch}; choose among its divisors {_divisors(effective_batch)}")
    if estimates is None:
        estimates = accumulation_estimates(model, input_shape, optimizer, dtype, **estimate_options)
    points = []
    for micro in reversed(sizes):
        step = estimate_at(estimates, micro, effective_batch // micro)
        points.append(AccumulationPoint(micro, effective_batch // micro, step.peak, step.peak_by_category,
                                        step.peak_phase, step.reserved, step))
    return points


def fewest_steps_that_fit(points, profile) -> AccumulationPoint | None:
    """The point with the fewest micro-batches (the largest micro-batch) that fits ``profile``'s card; None if none."""
    fitting = [p for p in points if p.fits(profile)]
    return min(fitting, key=lambda p: p.steps) if fitting else None


def fewest_steps_for(estimates: tuple, effective_batch: int, profile) -> AccumulationPoint | None:
    """The fewest micro-batches that make ``effective_batch`` and fit ``profile``'s card, for any effective batch.

    Without listing divisors: the micro-batch can be no larger than the
    largest that fits by allocated bytes, so the candidates are the divisors
    of ``effective_batch`` below that bound, largest first, each replayed
    through the card's allocator. None if not even micro-batches of one fit.
    """
    whole, accumulated = estimates
    if whole.at(effective_batch).fits(profile):
        step = whole.at(effective_batch)
        return AccumulationPoint(effective_batch, 1, step.peak, step.peak_by_category, step.peak_phase,
                                 step.reserved, step)
    bound = min(accumulated.max_batch_size_by_allocated(profile), effective_batch // 2)
    for micro in range(bound, 0, -1):
        if effective_batch % micro:
            continue
        step = estimate_at(estimates, micro, effective_batch // micro)
        if step.fits(profile):
            return AccumulationPoint(micro, effective_batch // micro, step.peak, step.peak_by_category,
                                     step.peak_phase, step.reserved, step)
    return None


def measure_accumulated_peak(build_model, input_shape, micro_batch: int, steps: int, optimizer="adam",
                             dtype=None, updates: int = 2, seed: int = 0) -> int:
    """Peak bytes of ``updates`` real updates of ``steps`` micro-batches each, through ``GradientAccumulator``.

    Measured by :func:`minigrad.memory.track` from the moment the model and
    its optimizer exist: ``build_model()`` makes a fresh model (its
    parameters are counted; what building allocates and drops is not, nor
    buffers alive before). The batches are random inputs of ``input_shape``
    with random class targets; the loop holds the previous batch while it
    makes the next, as a data loader does. Two updates, so that the second
    one has the optimizer's state. With ``steps=1`` the optimizer steps
    directly, as ``fit`` does. The global random state is left alone.
    """
    make_optimizer = OPTIMIZERS[optimizer] if isinstance(optimizer, str) else optimizer
    gc.collect()  # garbage from earlier work must not be freed, and counted, during the measurement
    alive_before = set(buffers.live_buffers())
    with mt.fork_rng():
        mt.manual_seed(seed)
        model = build_model()
        if dtype is not None:
            model.to(dtype)
        x_dtype = next(p.dtype for p in model.parameters())
        optimizer = make_optimizer(list(model.parameters()))
        accumulator = GradientAccumulator(optimizer, steps)
        loss_fn = nn.CrossEntropyLoss()
        foreign = sum(nbytes for buffer, (nbytes, _, _) in buffers.live_buffers().items() if buffer in alive_before)
        with track(model, optimizer, tracemalloc=False, timeline=False) as memory:
            optimizer.zero_grad()
            x = y = None
            for _ in range(updates * steps):
                x, y = mt.randn(micro_batch, *input_shape, dtype=x_dtype), mt.randint(0, 10, (micro_batch,))
                logits = model(x)
                loss = loss_fn(logits, y)
                if steps == 1:  # as fit() does: no 1/steps scaling, so no scaled-loss scalar
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                else:
                    accumulator.backward(loss)
                del logits, loss
            del x, y
    return memory.peak - foreign  # what was alive before the model (and a tracker counts from its start) is no part
