"""Graded checks for chapter 11, exercise 11.1 (``fitting_configuration``): ``exercises/11_fitting.py``.

The learner's search runs in the child on a small MLP (64 -> 512 -> 256 ->
10 on 8x8 inputs, Adam, effective batch 4096, 2 checkpoint segments, at most
8 micro-batches) against cards made here from what the steps need on the
card: a card whose usable memory is exactly a step's reserved peak as the
card replays it (the boundary), one byte less, cards between a step's
reserved peak on the card and its peak on a card big enough (the card
empties its cache and retries, so it runs the step: judged by the unbounded
peak it would not), between a step's allocated peak and what the card needs
(allocated bytes alone would say it fits), and a card nothing fits. It
answers plain data: the configurations it tried, each with its verdict, and
the one it chose (or the exception it raised).

The grader decides here: it estimates the same configurations itself with
the library, takes the canonical order (float32, then mixed precision, then
checkpointing, then accumulating 2, 4, 8 micro-batches of the same
effective batch), and requires the learner's tried list to be that order up
to the chosen one, the chosen configuration to fit the card (its step
replayed through the card's allocator with the card's capacity,
``Estimate.fits``; tests/capstone/test_fit_plan.py checks that replay
against a real step on the simulated card) and no earlier one to fit. The
cards' sizes are found here by bisection on that replay, and each test
first checks that its card separates what it is meant to.
"""

from __future__ import annotations

from dataclasses import replace

from minigrad.grading.probing import exercise, probe

BATCH, SEGMENTS, MOST = 4096, 2, 8
SHAPE = (1, 8, 8)
CONTEXT = 287_047_680  # gtx1050's CUDA context, checked against the profile in _card


def _model():
    import minigrad.tensor as mt
    from minigrad import nn

    mt.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def _card(usable: int, name: str):
    from minigrad.memory import get_profile

    base = get_profile("gtx1050")
    assert base.context_bytes == CONTEXT
    return replace(base, name=f"test card ({name})", short_name=f"test-{name}", memory_bytes=CONTEXT + usable)


def _plain(config) -> list:
    return [config.batch_size, config.amp, config.checkpoint, config.accumulate]


@probe
def search(submission, state, usable, name):
    """(child) The learner's search on the small MLP against a card of ``usable`` bytes, as plain data."""
    try:
        found = submission.fitting_configuration(_model(), SHAPE, BATCH, _card(usable, name), amp="float16",
                                                 checkpoint=SEGMENTS, most_micro_batches=MOST)
        raised, tried, chosen = None, getattr(found, "tried", None), getattr(found, "chosen", None)
    except NotImplementedError:
        raise  # the stub: not started
    except Exception as error:  # the learner's exception is an answer: a search that finds nothing must raise
        found, raised = None, type(error).__name__
        tried, chosen = getattr(getattr(error, "search", None), "tried", None), None
    rows = None
    if isinstance(tried, (list, tuple)):
        rows = [[*_plain(step.config), step.fits] if hasattr(step, "config") else repr(step) for step in tried]
    return {"raised": raised, "tried": rows, "chosen": None if chosen is None else _plain(chosen.config)}


_ORDER_CACHE: dict = {}


def _order():
    """(grader) The canonical order and each step's estimate, made once per grading run."""
    if not _ORDER_CACHE:
        from minigrad.capstone.config import TrainConfig
        from minigrad.capstone.fit_plan import estimate_step

        first = TrainConfig(BATCH)
        order = [first, first.but(amp="float16"), first.but(amp="float16", checkpoint=SEGMENTS)]
        order += [order[-1].but(accumulate=k) for k in (2, 4, 8)]
        model = _model()
        _ORDER_CACHE["steps"] = [estimate_step(model, SHAPE, config) for config in order]
    return _ORDER_CACHE["steps"]


def _fits(step, usable: int) -> bool:
    """(grader) The card's verdict: the step replayed through the allocator of a card of ``usable`` bytes."""
    return step.estimate.fits(_card(usable, "probe"))


def _needs(index: int) -> int:
    """(grader) The fewest usable bytes on which the card runs step ``index`` (bisection on the replay)."""
    step = _order()[index]
    low, high = step.peak - 1, step.estimate.reserved  # the card fails at low (below the allocated peak), runs at high
    assert _fits(step, high) and not _fits(step, low)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if _fits(step, middle) else (middle, high)
    return high


def _chosen(usable: int):
    return next((i for i, step in enumerate(_order()) if _fits(step, usable)), None)


def _expect(learner, usable: int, name: str, why: str) -> None:
    steps = _order()
    card = _card(usable, name)
    chosen = _chosen(usable)
    answer = learner.probe("search", usable, name)
    assert type(answer) is dict, "fitting_configuration: the answer did not come back"
    labels = [step.config.label() for step in steps]
    where = f"on a card with {usable:,} usable bytes"

    def figures(i):
        step = steps[i]
        on_card = step.estimate.replay(card)
        return (f"{labels[i]} reserves {on_card.peak_reserved:,} on this card" if on_card.fits else
                f"{labels[i]} does not run on this card (it reserves {step.estimate.reserved:,} on a card big enough)")

    if chosen is None:
        assert answer["raised"] is not None, (
            f"fitting_configuration {where}: no configuration runs on this card (replayed through its allocator), "
            f"so it must raise (NothingFits), but it returned {answer['chosen']}")
        assert answer["raised"] == "NothingFits", (
            f"fitting_configuration {where}: nothing fits, so it raises NothingFits (the search on it), not "
            f"{answer['raised']}")
        return
    assert answer["raised"] is None, (
        f"fitting_configuration {where} raised {answer['raised']}; the first configuration the card runs is "
        f"{figures(chosen)}: {why}")
    expected = [[*_plain(step.config), i == chosen] for i, step in enumerate(steps[:chosen + 1])]
    tried = answer["tried"]
    assert answer["chosen"] == expected[-1][:4], (
        f"fitting_configuration {where} chose {answer['chosen']} (batch, amp, checkpoint, accumulate), expected "
        f"{expected[-1][:4]} ({figures(chosen)}" + "".join(f"; before it {figures(i)}" for i in range(chosen))
        + f"): {why}")
    assert tried is not None and [row[:4] for row in tried] == [row[:4] for row in expected], (
        f"fitting_configuration {where}: tried {tried}, expected the configurations in order {expected}: float32, "
        f"then mixed precision, then checkpointing, then accumulation, each knob added to those before, "
        f"stopping at the first that fits")
    assert [row[4] for row in tried] == [row[4] for row in expected], (
        f"fitting_configuration {where}: the verdicts of the tried configurations are {[r[4] for r in tried]}, "
        f"expected {[r[4] for r in expected]}: {why}")


def _retried(index: int) -> int:
    """A card on which step ``index`` runs only thanks to the retry: above what it needs, below its unbounded peak."""
    step = _order()[index]
    needs, unbounded = _needs(index), step.estimate.reserved
    assert needs < unbounded, f"the check's model: {step.config.label()} needs its whole unbounded reserved peak"
    return (needs + unbounded) // 2


RETRY = ("a full card empties its cache and retries before it gives up, so it runs a step whose reserved peak on "
         "a card big enough is above the usable bytes: ask the card (the step replayed through its allocator, "
         "StepFit.fits_card), do not compare that peak with the usable bytes")


@exercise("11.1")
def test_stops_at_the_first_configuration_that_fits(learner, rng):
    usable = _needs(1) + 2**20 * rng.randint(0, 2)
    assert _chosen(usable) == 1
    _expect(learner, usable, "roomy", "the knobs are turned in order and the search stops at the first that fits")


@exercise("11.1")
def test_accumulation_keeps_the_effective_batch(learner, rng):
    usable = _needs(4)
    assert _chosen(usable) == 4
    _expect(learner, usable, "accumulation",
            "accumulate=k runs k micro-batches of batch_size // k: the effective batch stays batch_size "
            "(TrainConfig(batch_size, accumulate=k)), and a step the card runs with exactly its usable bytes "
            "reserved fits")


@exercise("11.1")
def test_the_card_retries_before_it_gives_up(learner, rng):
    for index in (0, 2):  # float32 itself, and checkpointing after mixed precision
        usable = _retried(index)
        assert _chosen(usable) == index and _order()[index].estimate.reserved > usable
        _expect(learner, usable, f"retry{index}", RETRY)


@exercise("11.1")
def test_the_boundary_is_the_cards_reserved_peak(learner, rng):
    usable = _needs(0)
    assert _order()[0].estimate.replay(_card(usable, "boundary")).peak_reserved == usable  # exactly full
    _expect(learner, usable, "boundary", "a step the card runs with exactly its usable bytes reserved fits; " + RETRY)
    _expect(learner, usable - 1, "short", "one byte short of what the card needs, the step does not fit")


@exercise("11.1")
def test_reserved_bytes_decide_not_allocated(learner, rng):
    first = _order()[0]
    usable = (first.peak + _needs(0)) // 2
    assert _chosen(usable) != 0
    _expect(learner, usable, "allocated",
            f"the card decides on its allocator's blocks and segments: float32's tensors ({first.peak:,} bytes "
            f"allocated) would fit, but its caching allocator needs {_needs(0):,}")


@exercise("11.1")
def test_the_cuda_context_is_not_usable(learner, rng):
    _expect(learner, _needs(0) - 1 - 2**20 * rng.randint(0, 2), "context",
            "the card's usable memory is its memory less the CUDA context (profile.usable_bytes): the card's "
            "allocator has that capacity, not the whole memory")


@exercise("11.1")
def test_nothing_fits_raises(learner, rng):
    _expect(learner, min(_needs(i) for i in range(len(_order()))) - 1, "tiny", "")
