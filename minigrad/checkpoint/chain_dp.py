"""Which segments of a chain to checkpoint under a memory budget: a dynamic program (exercise 10.4).

A chain of ``n`` layers, run forward then backward. Layer ``i`` keeps
``saved_bytes[i]`` bytes for backward, reads an input of ``input_bytes[i]``
bytes (``input_bytes[0]`` is the chain's input, ``input_bytes[i]`` is layer
``i-1``'s output) and costs ``flops[i]`` to run forward. A *plan* cuts
``0 .. n-1`` into consecutive segments ``(start, end, checkpointed)``
(``end`` inclusive), each one

- *stored*: its layers keep their saved tensors, ``sum(saved_bytes[start..end])``;
- *checkpointed*: only its input is kept, ``input_bytes[start]``, and backward
  runs the segment again (``flops[start..end]``) to rebuild the saved tensors.

The memory model (every figure in bytes; the planner adds the parameters,
gradients, optimizer state and the batch, which no plan changes)
------------------------------------------------------------------
With ``kept(seg)`` the bytes a segment keeps as above, the plan's peak is the
largest of

- the end of forward, when every segment holds what it keeps:
  ``sum(kept(seg) for seg in plan)``;
- the recompute of each checkpointed segment ``k``: backward has finished the
  segments after ``k`` and let them go, the segments before ``k`` still keep
  theirs, and ``k`` holds its input and every tensor its layers save again:
  ``sum(kept(seg) for seg before k) + input_bytes[start_k] + sum(saved_bytes[start_k..end_k])``.

Left out, for the caller to add: gradients (of the parameters, and those in
flight between layers during backward, about one layer output), temporaries
(outputs nobody saves, scratch arrays), the caching allocator's rounding. A
buffer two neighbouring layers both keep (a ReLU's output is the next
Linear's input) is counted once, for one of them: :mod:`.chain_costs` says
how it measures so (every boundary buffer belongs to the layer that reads it).

This is the chain case of Chen et al., "Training deep nets with sublinear
memory cost" (2016), who keep checkpointed segments' inputs and rebuild one
segment at a time, with the prefix bound of Griewank and Walther's Revolve
(2000) and the budgeted objective of Checkmate (Jain et al., 2020): fewest
recomputed FLOPs subject to ``peak <= budget``; ties go to fewer segments,
then to the lower peak.

The recurrence
--------------
Plans of the prefix ``0 .. i-1`` are summed up by two figures: the bytes
they keep, ``K``, and their cost ``(recomputed FLOPs, segments, peak so
far)``. Whatever comes after the prefix sees only ``K``: a later segment's
recompute adds to ``K``, the end of forward is ``K`` plus the rest. So for
each ``i`` and each ``K`` only the cheapest plan matters::

    best[0] = {0: (0 FLOPs, 0 segments, peak 0)}
    best[i] = for every j < i and every (K, cost) in best[j], the segment j .. i-1 appended:
                stored:       K + saved[j..i-1],  cost + (0, 1)            peak: max(peak, K + saved[j..i-1])
                checkpointed: K + input[j],       cost + (flops[j..i-1], 1) peak: max(peak, K + input[j] + saved[j..i-1])
              keeping, for each K, the least cost whose peak <= budget
    answer  = the least cost in best[n]

and an entry is dropped when another keeps no more bytes and costs no more
(fewer kept bytes never hurt what follows). That is ``O(n^2)`` transitions
per kept-bytes level: for the chains of this course, a few thousand steps.
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass

from minigrad.checkpoint.segments import segment_bounds

__all__ = ["ChainPlan", "plan_chain", "brute_force_chain", "evaluate_plan", "chain_peak", "uniform_segments"]

BRUTE_FORCE_LAYERS = 16  # 2^(n-1) cuts times 2^segments flags: about 43 million plans at 16 layers


@dataclass(frozen=True)
class ChainPlan:
    """A plan for a chain: its segments ``(start, end, checkpointed)`` (``end`` inclusive), in order."""

    segments: tuple
    peak_bytes: int  # the memory model's peak (see the module docstring)
    recompute_flops: int | float  # forward FLOPs backward runs again: those of the checkpointed segments
    kept_bytes: int  # what the segments keep when forward ends

    @property
    def checkpointed(self) -> list[tuple[int, int]]:
        """``(start, end)`` of the checkpointed segments."""
        return [(start, end) for start, end, checkpointed in self.segments if checkpointed]

    def __str__(self) -> str:
        parts = [f"{'checkpoint' if c else 'store'} {s}" + (f"-{e}" if e > s else "") for s, e, c in self.segments]
        return (f"{len(self.segments)} segments ({', '.join(parts)}): peak {self.peak_bytes:,} bytes, "
                f"{self.recompute_flops:,} FLOPs recomputed")


# ----------------------------------------------------------------------------- the model


def chain_peak(segments, saved_bytes, input_bytes) -> int:
    """The memory model's peak for ``segments`` (``(start, end, checkpointed)`` tiling the chain): see the module."""
    kept_before = 0
    peak = 0
    for start, end, checkpointed in segments:
        saved = sum(saved_bytes[start:end + 1])
        if checkpointed:
            peak = max(peak, kept_before + input_bytes[start] + saved)
            kept_before += input_bytes[start]
        else:
            kept_before += saved
    return max(peak, kept_before)


def evaluate_plan(segments, saved_bytes, input_bytes, flops) -> ChainPlan:
    """The :class:`ChainPlan` of any tiling ``segments``, with its modelled peak and recomputed FLOPs."""
    segments = tuple((int(s), int(e), bool(c)) for s, e, c in segments)
    _check_tiling(segments, len(saved_bytes))
    kept = sum(input_bytes[s] if c else sum(saved_bytes[s:e + 1]) for s, e, c in segments)
    recompute = sum(sum(flops[s:e + 1]) for s, e, c in segments if c)
    return ChainPlan(segments, chain_peak(segments, saved_bytes, input_bytes), recompute, kept)


def uniform_segments(n_layers: int, segments: int) -> tuple:
    """``checkpoint_sequential``'s plan: ``segments`` equal runs, all but the last checkpointed."""
    bounds = segment_bounds(n_layers, segments)
    return tuple((start, end, index < len(bounds) - 1) for index, (start, end) in enumerate(bounds))


# ----------------------------------------------------------------------------- the dynamic program


def plan_chain(saved_bytes, input_bytes, flops, budget_bytes) -> ChainPlan | None:
    """The plan with the fewest recomputed FLOPs whose modelled peak fits ``budget_bytes`` (None if none does).

    Ties: fewer segments, then the lower peak. See the module docstring for the model and the recurrence.
    """
    saved_bytes, input_bytes, flops, budget = _check_chain("plan_chain", saved_bytes, input_bytes, flops, budget_bytes)
    ### BEGIN SOLUTION 10.4 | a dynamic program over prefixes (not brute_force_chain: it gives up beyond 16 layers): what follows the layers 0 .. i-1 sees only the bytes K their plan keeps, so for each prefix keep, for each K, the cheapest plan (recomputed FLOPs, then segments, then peak so far) whose peak fits the budget; a prefix's plans are those of every shorter prefix 0 .. j-1 with one more segment j .. i-1 (inclusive), stored (it keeps what its layers save) or checkpointed (it keeps its input, backward runs its FLOPs again, and its recompute peaks at K + its input + what its layers save); after each prefix drop the entries _undominated drops; answer the whole chain's cheapest plan as a ChainPlan, or None when no plan fits
    n = len(saved_bytes)
    saved_upto = [0, *itertools.accumulate(saved_bytes)]  # saved_upto[i] = saved bytes of layers 0 .. i-1
    flops_upto = [0, *itertools.accumulate(flops)]
    # best[i]: kept bytes K -> (cost, segments) of the cheapest plan of layers 0 .. i-1 keeping K bytes
    best: list[dict] = [{0: ((0, 0, 0), ())}] + [{} for _ in range(n)]
    for i in range(1, n + 1):
        for j in range(i):  # the plan's last segment is j .. i-1
            saved, recompute = saved_upto[i] - saved_upto[j], flops_upto[i] - flops_upto[j]
            for kept, ((cost_flops, count, peak), plan) in best[j].items():
                options = (  # (bytes kept after it, recomputed FLOPs, peak so far, checkpointed)
                    (kept + saved, cost_flops, max(peak, kept + saved), False),
                    (kept + input_bytes[j], cost_flops + recompute, max(peak, kept + input_bytes[j] + saved), True),
                )
                for new_kept, new_flops, new_peak, checkpointed in options:
                    cost = (new_flops, count + 1, new_peak)
                    if new_peak <= budget and (new_kept not in best[i] or cost < best[i][new_kept][0]):
                        best[i][new_kept] = (cost, plan + ((j, i - 1, checkpointed),))
        best[i] = _undominated(best[i])
    if not best[n]:
        return None
    kept, ((recompute, _, peak), segments) = min(best[n].items(), key=lambda item: item[1][0])
    return ChainPlan(segments, peak, recompute, kept)
    ### END SOLUTION


def _undominated(entries: dict) -> dict:
    """The entries no other entry beats: none keeps fewer or as many bytes at a cost as low or lower."""
    ### BEGIN SOLUTION 10.4 | fewer kept bytes never hurt what follows a prefix, so keep an entry only when no entry that keeps fewer bytes costs as little or less (the same dict shape back, smaller)
    front, cheapest = {}, None
    for kept in sorted(entries):
        cost, plan = entries[kept]
        if cheapest is None or cost < cheapest:
            front[kept], cheapest = (cost, plan), cost
    return front
    ### END SOLUTION


def brute_force_chain(saved_bytes, input_bytes, flops, budget_bytes) -> ChainPlan | None:
    """Every plan tried (``2^(n-1)`` ways to cut, ``2^segments`` ways to flag): the optimum of :func:`plan_chain`'s
    objective, for checking it on short chains (at most 16 layers)."""
    saved_bytes, input_bytes, flops, budget = _check_chain("brute_force_chain", saved_bytes, input_bytes, flops,
                                                           budget_bytes)
    n = len(saved_bytes)
    if n > BRUTE_FORCE_LAYERS:
        raise ValueError(f"brute_force_chain: {n} layers would mean over {2 ** (n - 1):,} ways to cut the chain; "
                         f"use at most {BRUTE_FORCE_LAYERS} (plan_chain handles long chains)")
    best = None
    for cuts in itertools.product((False, True), repeat=n - 1):  # cut after layer i?
        ends = [i for i, cut in enumerate(cuts) if cut] + [n - 1]
        bounds = list(zip([0] + [e + 1 for e in ends[:-1]], ends))
        for flags in itertools.product((False, True), repeat=len(bounds)):
            plan = evaluate_plan([(s, e, c) for (s, e), c in zip(bounds, flags)], saved_bytes, input_bytes, flops)
            key = (plan.recompute_flops, len(plan.segments), plan.peak_bytes)
            if plan.peak_bytes <= budget and (best is None or key < best[0]):
                best = (key, plan)
    return None if best is None else best[1]


# ----------------------------------------------------------------------------- checks


def _check_tiling(segments, n: int) -> None:
    expected = 0
    for start, end, _ in segments:
        if start != expected or end < start:
            raise ValueError(f"evaluate_plan: segments {list(segments)} do not tile layers 0..{n - 1} in order "
                             f"(each (start, end, checkpointed) must start where the previous one ended + 1)")
        expected = end + 1
    if expected != n:
        raise ValueError(f"evaluate_plan: segments {list(segments)} cover layers 0..{expected - 1}, "
                         f"the chain has {n} layers")


def _whole(name: str, values, what: str) -> list:
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v < 0 \
                or (what == "bytes" and float(v) != int(v)):
            kind = "a whole number of bytes >= 0" if what == "bytes" else "a finite number >= 0"
            raise ValueError(f"{name}[{i}] must be {kind}, got {v!r}")
        out.append(int(v) if what == "bytes" or float(v).is_integer() else float(v))
    return out


def _check_chain(function: str, saved_bytes, input_bytes, flops, budget_bytes):
    try:
        lengths = (len(saved_bytes), len(input_bytes), len(flops))
    except TypeError:
        raise TypeError(f"{function}: saved_bytes, input_bytes and flops must be sequences with one number per "
                        f"layer, got {type(saved_bytes).__name__}, {type(input_bytes).__name__}, "
                        f"{type(flops).__name__}") from None
    if len(set(lengths)) != 1 or lengths[0] == 0:
        raise ValueError(f"{function}: saved_bytes, input_bytes and flops need one entry per layer of a non-empty "
                         f"chain, got lengths {lengths[0]}, {lengths[1]} and {lengths[2]}")
    if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, numbers.Real) or math.isnan(budget_bytes) \
            or budget_bytes < 0:
        raise ValueError(f"{function}: budget_bytes must be a number of bytes >= 0 (math.inf for no limit), "
                         f"got {budget_bytes!r}")
    return (_whole(f"{function}: saved_bytes", saved_bytes, "bytes"),
            _whole(f"{function}: input_bytes", input_bytes, "bytes"),
            _whole(f"{function}: flops", flops, "flops"), budget_bytes)
