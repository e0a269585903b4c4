"""Graded checks for chapter 11, exercise 11.1 (``fitting_configuration``): ``exercises/11_fitting.py``.

The learner's search runs in the child on a small MLP (784 -> 256 -> 256 ->
10 on 8x8 inputs, Adam, effective batch 2048, 2 checkpoint segments, at most
8 micro-batches) against cards made here from what the steps reserve: cards
whose usable memory is exactly one configuration's reserved bytes (the
boundary), between a step's allocated and reserved peaks (allocated bytes
alone would say it fits), one byte short of a step's reserved bytes (its
memory with the CUDA context would hold it), and a card nothing fits. It
answers plain data: the configurations it tried, each with its verdict, and
the one it chose (or the exception it raised).

The grader decides here: it estimates the same configurations itself with
the library, takes the canonical order (float32, then mixed precision, then
checkpointing, then accumulating 2, 4, 8 micro-batches of the same
effective batch), and requires the learner's tried list to be that order up
to the chosen one, the chosen configuration to fit the card (its step
replayed through the card's allocator) and no earlier one to fit.
"""

from __future__ import annotations

from dataclasses import replace

from minigrad.grading.probing import exercise, probe

BATCH, SEGMENTS, MOST = 2048, 2, 8
SHAPE = (1, 8, 8)
CONTEXT = 287_047_680  # gtx1050's CUDA context, checked against the profile in _card


def _model():
    import minigrad.tensor as mt
    from minigrad import nn

    mt.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
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


def _expect(learner, usable: int, name: str, why: str) -> None:
    steps = _order()
    card = _card(usable, name)
    fitting = [step.estimate.fits(card) for step in steps]
    chosen = next((i for i, fits in enumerate(fitting) if fits), None)
    answer = learner.probe("search", usable, name)
    assert type(answer) is dict, "fitting_configuration: the answer did not come back"
    labels = [step.config.label() for step in steps]
    where = f"on a card with {usable:,} usable bytes"
    if chosen is None:
        assert answer["raised"] is not None, (
            f"fitting_configuration {where}: no configuration fits (the smallest step reserves "
            f"{min(s.reserved for s in steps):,} bytes), so it must raise (NothingFits), but it returned "
            f"{answer['chosen']}")
        assert answer["raised"] == "NothingFits", (
            f"fitting_configuration {where}: nothing fits, so it raises NothingFits (the search on it), not "
            f"{answer['raised']}")
        return
    assert answer["raised"] is None, (
        f"fitting_configuration {where} raised {answer['raised']}; the first configuration that fits is "
        f"{labels[chosen]} (it reserves {steps[chosen].reserved:,} bytes): {why}")
    expected = [[*_plain(step.config), i == chosen] for i, step in enumerate(steps[:chosen + 1])]
    tried = answer["tried"]
    assert answer["chosen"] == expected[-1][:4], (
        f"fitting_configuration {where} chose {answer['chosen']} (batch, amp, checkpoint, accumulate), expected "
        f"{expected[-1][:4]} ({labels[chosen]}, reserving {steps[chosen].reserved:,} bytes; before it "
        + ", ".join(f"{labels[i]} reserves {steps[i].reserved:,}" for i in range(chosen)) + f"): {why}")
    assert tried is not None and [row[:4] for row in tried] == [row[:4] for row in expected], (
        f"fitting_configuration {where}: tried {tried}, expected the configurations in order {expected}: float32, "
        f"then mixed precision, then checkpointing, then accumulation, each knob added to those before, "
        f"stopping at the first that fits")
    assert [row[4] for row in tried] == [row[4] for row in expected], (
        f"fitting_configuration {where}: the verdicts of the tried configurations are {[r[4] for r in tried]}, "
        f"expected {[r[4] for r in expected]}: {why}")


def _reserved(index: int) -> int:
    return _order()[index].reserved


@exercise("11.1")
def test_stops_at_the_first_configuration_that_fits(learner, rng):
    _expect(learner, _reserved(1) + 2**20 * rng.randint(0, 2), "roomy",
            "the knobs are turned in order and the search stops at the first that fits")


@exercise("11.1")
def test_accumulation_keeps_the_effective_batch(learner, rng):
    _expect(learner, _reserved(3), "accumulation",
            "accumulate=k runs k micro-batches of batch_size // k: the effective batch stays batch_size "
            "(TrainConfig(batch_size, accumulate=k)), and a step that reserves exactly the usable bytes fits")


@exercise("11.1")
def test_reserved_bytes_decide_not_allocated(learner, rng):
    first = _order()[0]
    _expect(learner, (first.peak + first.reserved) // 2, "allocated",
            f"the card decides in reserved bytes: float32's tensors ({first.peak:,} bytes allocated) would fit, "
            f"but its caching allocator reserves {first.reserved:,}")


@exercise("11.1")
def test_the_cuda_context_is_not_usable(learner, rng):
    _expect(learner, _reserved(0) - 1, "context",
            "the card's usable memory is its memory less the CUDA context (profile.usable_bytes), and a step "
            "reserving one byte more than it does not fit")


@exercise("11.1")
def test_nothing_fits_raises(learner, rng):
    _expect(learner, min(step.reserved for step in _order()) - 1, "tiny", "")
