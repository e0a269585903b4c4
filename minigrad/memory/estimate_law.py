"""The affine law behind :func:`minigrad.memory.estimate`: every event's bytes, exact in the batch size, checked.

The recorded steps (:mod:`.estimate_recording`) at the measured batches (2,
3, 4) and the check batch must make the same sequence of events - the same
allocations, frees and relabels, each free of the same allocation - and
every event's size must be ``intercept + slope * batch`` on all of them.
From the per-event coefficients (Python ints: exact at any batch size) come
the running total of each category after each event, what each layer saves
for backward, and the step's allocation sequence for the card's allocator
(:class:`~minigrad.memory.fit.StepTrace`). Any break of the law raises
:class:`EstimateError` naming the category, the phase and the batches.

The check batch is 67 (a prime above 64: no padding or bucketing of the
batch can make it look like 2, 3 and 4), or the largest prime whose step the
first batches say costs at most 256 MiB.
"""

from __future__ import annotations

import numpy as np

from minigrad.memory.estimate_recording import CATEGORIES, record_steps
from minigrad.memory.fit import FREE, StepTrace

__all__ = ["EstimateError", "CHECK_BATCH", "CHECK_BUDGET", "measure"]

CHECK_BATCH = 67  # a prime above 64: no padding or bucketing of the batch can make it look like 2, 3 and 4
CHECK_BUDGET = 256 * 2**20  # the most bytes the check step may cost; above, a smaller prime is checked


class EstimateError(ValueError):
    """The measured small batches do not follow an affine law, so the extrapolation would not be exact."""


def _primes_down_from(n: int):
    for candidate in range(n, 4, -1):
        if all(candidate % d for d in range(2, int(candidate**0.5) + 1)):
            yield candidate


def _affine_events(sizes: list, batches: tuple, signature: tuple) -> tuple[list, list]:
    """Per event, intercept and slope of its bytes from the first two batches, checked on all; Python ints."""
    (b0, b1), (first, second) = batches[:2], sizes[:2]
    step = b1 - b0
    intercepts, slopes = [], []
    for i, (n0, n1) in enumerate(zip(first, second)):
        slope, remainder = divmod(n1 - n0, step)
        intercept = n0 - b0 * slope
        wrong = remainder != 0 or any(seg[i] != intercept + slope * b for seg, b in zip(sizes[2:], batches[2:]))
        if wrong:
            kind, phase, source, target = signature[i]
            measured = ", ".join(f"{seg[i]:,} B at batch {b}" for seg, b in zip(sizes, batches))
            raise EstimateError(
                f"estimate: the {target or source} bytes of the step are not affine in the batch size: event {i} "
                f"({kind} in the {phase} phase) holds {measured} (batches {batches}); the model's memory depends "
                f"on the batch size in another way (padding or bucketing the batch, or something quadratic), "
                f"so extrapolating would be wrong. Measure the real step with minigrad.memory.track() instead")
        intercepts.append(int(intercept))
        slopes.append(int(slope))
    return intercepts, slopes


def measure(model, input_shape, batches, check_batch, make_optimizer, loss_fn, forward, dtype, device,
             set_to_none, accumulation_steps, mode, default_loss):
    """Record the steps at ``batches`` and the check batch (``"auto"``, an int, or None for none), check the law.

    Returns the running totals' coefficients ((events, categories) arrays of
    Python ints), the phase of each event, the phase marks, what each layer
    saves (coefficients), the step's :class:`StepTrace` and the batches measured.
    """

    def choose_check(recorder):
        """After the three measured steps: the check batch, from what they say its step will cost."""
        if check_batch != "auto":
            return check_batch
        segments = recorder.segments
        peaks = [_segment_peak(recorder, seg) for seg in segments[:2]]
        per_example = max(peaks[1] - peaks[0], 0) // (batches[1] - batches[0])
        for prime in _primes_down_from(CHECK_BATCH):
            if peaks[0] + per_example * (prime - batches[0]) <= CHECK_BUDGET:
                return prime
        return 5

    recorder = record_steps(model, input_shape, batches, make_optimizer, loss_fn, forward, dtype, device,
                            set_to_none, accumulation_steps, mode, default_loss, choose_check)
    segments = recorder.segments
    measured = tuple(batches) + ((recorder.check_batch,) if recorder.check_batch is not None else ())
    signatures = [tuple(recorder.signature[seg["start"]:seg["end"]]) for seg in segments]
    pairings = [tuple(map(str, recorder.pairing(seg))) for seg in segments]
    cards = [tuple(nbytes for _, nbytes in seg["card"]) for seg in segments]
    for index in range(1, len(segments)):
        if signatures[index] != signatures[0] or pairings[index] != pairings[0]:
            first, other = signatures[0], signatures[index]
            at = next((i for i, (a, b) in enumerate(zip(first, other)) if a != b), min(len(first), len(other)))
            if at == min(len(first), len(other)) and len(first) == len(other):
                at = next(i for i, (a, b) in enumerate(zip(pairings[0], pairings[index])) if a != b)
            where = f"first difference at event {at}" + (f", in the {first[at][1]} phase" if at < len(first) else "")
            raise EstimateError(
                f"estimate: the step allocates a different sequence of buffers at batches {measured} "
                f"({', '.join(str(len(s)) for s in signatures)} events; {where}); the memory does not follow one "
                f"affine law, so extrapolating would be wrong. Measure the real step with minigrad.memory.track() "
                f"instead")
        if cards[index] != cards[0]:
            raise EstimateError(f"estimate: the model and optimizer hold different bytes between the steps at "
                                f"batches {measured}; the estimate needs a steady state")
    sizes = [recorder.nbytes[seg["start"]:seg["end"]] for seg in segments]
    intercepts, slopes = _affine_events(sizes, measured, signatures[0])
    # the running total of each category after each event: the live bytes before the step, plus the events
    start = segments[0]["start"]
    base = [int(v) for v in (recorder.totals()[start - 1] if start else np.zeros(len(CATEGORIES), np.int64))]
    index = {name: i for i, name in enumerate(CATEGORIES)}
    running_a, running_b = list(base), [0] * len(CATEGORIES)
    rows_a, rows_b = [], []
    for (kind, _phase, source, target), a, b in zip(signatures[0], intercepts, slopes):
        if source is not None:
            running_a[index[source]] -= a
            running_b[index[source]] -= b
        if target is not None:
            running_a[index[target]] += a
            running_b[index[target]] += b
        rows_a.append(list(running_a))
        rows_b.append(list(running_b))
    intercept = np.array(rows_a, dtype=object).reshape(len(rows_a), len(CATEGORIES))
    slope = np.array(rows_b, dtype=object).reshape(len(rows_b), len(CATEGORIES))
    names = list(segments[0]["saved"])
    if any(list(seg["saved"]) != names for seg in segments):
        raise EstimateError(f"estimate: different layers save activations at batches {measured}")
    saved = {}
    for name in names:
        (a,), (b,) = _affine_events([[seg["saved"][name]] for seg in segments], measured,
                                    (("saved", "forward", "activation", f"activation (what {name} saves)"),))
        saved[name] = (a, b)
    events = []
    for (kind, _phase, _s, _t), target, a, b in zip(signatures[0], recorder.pairing(segments[0]), intercepts, slopes):
        if kind == "alloc":
            events.append(("alloc", None, a, b))
        elif kind == FREE and target != ("unseen",):
            events.append((FREE, target, 0, 0))
        else:  # a relabel changes no block; a free of a buffer the card never held frees nothing there
            events.append(("skip", None, 0, 0))
    # the allocation events are renumbered: a free names the index of its allocation among the kept events
    kept, renumber = [], {}
    for i, event in enumerate(events):
        if event[0] == "skip":
            continue
        renumber[i] = len(kept)
        kept.append(event)
    phases_kept = tuple(signatures[0][i][1] for i in renumber)
    kept = tuple((kind, target if isinstance(target, tuple) or target is None else renumber[target], a, b)
                 for kind, target, a, b in kept)
    trace = StepTrace(card=cards[0], events=kept, phases=phases_kept)
    return intercept, slope, tuple(sig[1] for sig in signatures[0]), dict(segments[0]["marks"]), saved, trace, measured


def _segment_peak(recorder, segment) -> int:
    totals = recorder.totals()[segment["start"]:segment["end"]]
    return int(totals.sum(axis=1).max()) if len(totals) else 0
