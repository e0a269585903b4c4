"""The capstone's fit plan: each configuration's estimate agrees with one real step on the simulated card."""

from dataclasses import replace

import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.capstone.config import TrainConfig
from minigrad.capstone.fit_plan import FitPlanError, estimate_step, tracked_step
from minigrad.capstone.fitting import NothingFits, accumulation_choices, fitting_configuration
from minigrad.memory import get_profile

BIG = "rtx3060"  # a card where every configuration here fits, to compare the figures of a completed step


def mlp():
    mt.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU(), nn.Linear(48, 10))


def cnn():
    mt.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))


def card_of(reserved_bytes: int, name: str = "test card"):
    """A GTX 1050 whose usable memory is exactly ``reserved_bytes``."""
    base = get_profile("gtx1050")
    return replace(base, name=name, short_name=name.replace(" ", ""), memory_bytes=base.context_bytes + reserved_bytes)


CONFIGS = [
    TrainConfig(24, amp="float16"),
    TrainConfig(24, amp="bfloat16", checkpoint=2, optimizer="sgd"),
    TrainConfig(24, amp="float16", checkpoint=3, accumulate=3),
]


@pytest.mark.parametrize("build, shape", [(mlp, (1, 8, 8)), (cnn, (1, 8, 8))], ids=["mlp", "cnn"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.label() + " " + c.optimizer)
def test_estimate_agrees_with_the_tracked_step(build, shape, config):
    # tolerance: none - both peaks are exact bytes (the tracker's allocated peak, the card's allocator's reserved peak)
    model = build()
    estimated = estimate_step(model, shape, config)
    tracked = tracked_step(model, shape, config, card=BIG)
    assert tracked.fits
    assert estimated.peak == tracked.peak
    assert estimated.peak_by_category == tracked.peak_by_category
    assert estimated.reserved == tracked.reserved


def test_each_knob_changes_the_step():
    model = cnn()
    plain = estimate_step(model, (1, 8, 8), TrainConfig(64))
    half = estimate_step(model, (1, 8, 8), TrainConfig(64, amp="float16"))
    split = estimate_step(model, (1, 8, 8), TrainConfig(64, accumulate=4))
    assert half.peak_by_category["activation"] < plain.peak_by_category["activation"]
    assert split.peak < plain.peak
    assert split.config.micro_batch == 16 and split.estimate.batch_size == 16
    assert split.estimate.accumulation_steps == 4


def test_verdict_is_in_reserved_bytes_against_the_usable_memory():
    model = mlp()
    config = TrainConfig(16)
    step = estimate_step(model, (1, 8, 8), config)
    assert step.reserved > step.peak  # the allocator's segments
    exact = estimate_step(model, (1, 8, 8), config.but(card=card_of(step.reserved)))
    short = estimate_step(model, (1, 8, 8), config.but(card=card_of(step.reserved - 1)))
    by_allocated_only = estimate_step(model, (1, 8, 8), config.but(card=card_of((step.peak + step.reserved) // 2)))
    assert exact.fits and not short.fits and not by_allocated_only.fits
    assert "no block for" in short.reason and "emptying the cache" in short.reason
    on_card = tracked_step(model, (1, 8, 8), config, card=card_of(step.reserved))
    assert on_card.fits
    assert not tracked_step(model, (1, 8, 8), config, card=card_of(step.reserved // 2)).fits


def retry_mlp():
    mt.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def test_a_full_card_empties_its_cache_and_runs_what_an_unbounded_one_would_reserve_more_for():
    # float32 at batch 2048: 26 MiB reserved on a card big enough, but a 24 MiB card runs it - when a request
    # finds no room the card empties its cache (hands back its free segments) and retries
    model, config = retry_mlp(), TrainConfig(2048)
    needs = 24 << 20
    unbounded = estimate_step(model, (1, 8, 8), config)
    assert unbounded.reserved == unbounded.estimate.reserved == 26 << 20 > needs
    card, short = card_of(needs), card_of(needs - 1)
    step = estimate_step(model, (1, 8, 8), config.but(card=card))
    assert step.fits and step.fits_card() and step.reserved == needs == step.estimate.replay(card).peak_reserved
    assert step.estimate.reserved == unbounded.reserved  # what it would need without the retry stays on the estimate
    on_card = tracked_step(model, (1, 8, 8), config, card=card)
    assert on_card.fits and on_card.reserved == step.reserved  # the card agrees, to the byte
    over = estimate_step(model, (1, 8, 8), config.but(card=short))
    assert not over.fits and over.reserved == unbounded.reserved and "no block for" in over.reason
    assert not tracked_step(model, (1, 8, 8), config, card=short).fits
    unjudged = estimate_step(model, (1, 8, 8), config.but(card=card), judge=False)
    assert unjudged.fits is None and unjudged.reserved == unbounded.reserved > card.usable_bytes
    assert unjudged.fits_card() and unjudged.judged(True).reserved == needs
    assert not unjudged.fits_card(short) and unjudged.judged(False).reason
    chosen = fitting_configuration(model, (1, 8, 8), 2048, card, checkpoint=2).chosen
    assert chosen.config.amp is None and chosen.reserved == needs  # float32 itself: no knob needed


def test_planned_checkpoints_and_the_budget_mode():
    model = cnn()
    planned = estimate_step(model, (1, 8, 8), TrainConfig(32, checkpoint="auto", card="gtx1050"))
    assert planned.fits and planned.plan is not None and planned.how == "estimated"
    measured = estimate_step(model, (1, 8, 8), TrainConfig(32, amp="bfloat16", checkpoint="budget", card="gtx1050"))
    assert measured.how == "measured" and measured.fits and measured.estimate is None
    assert measured.reserved >= measured.peak > 0
    unjudged = estimate_step(model, (1, 8, 8), TrainConfig(32, amp="bfloat16", checkpoint="budget", card="gtx1050"),
                             judge=False)
    assert unjudged.fits is None and unjudged.fits_card() is True  # the measured run's verdict
    with pytest.raises(FitPlanError, match="measured on the"):
        unjudged.fits_card("rtx3060")


class TwoLayers(nn.Module):
    """Not a chain: the budget mode needs none (it manages saved tensors, not segments)."""

    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        return self.second(self.first(x).relu())


def test_the_budget_mode_takes_any_model_and_segments_take_a_chain():
    mt.manual_seed(0)
    model = TwoLayers()
    measured = estimate_step(model, (16,), TrainConfig(8, checkpoint="budget", card="gtx1050"))
    assert measured.how == "measured" and measured.fits and measured.peak > 0
    with pytest.raises(FitPlanError, match="must be an nn.Sequential, got TwoLayers"):
        estimate_step(model, (16,), TrainConfig(8, checkpoint=2, card="gtx1050"))


def wide_mlp():
    mt.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


@pytest.mark.parametrize("usable, chosen", [(8 << 20, 1), (4 << 20, 3)])
def test_fitting_configuration_turns_the_knobs_in_order(usable, chosen):
    # at batch 2048 the steps reserve 24, 8, 8, 4 MiB (float32, float16, + 2 segments, + accumulate 2)
    search = fitting_configuration(wide_mlp(), (1, 8, 8), 2048, card_of(usable), checkpoint=2)
    order = [TrainConfig(2048), TrainConfig(2048, amp="float16"), TrainConfig(2048, amp="float16", checkpoint=2),
             TrainConfig(2048, amp="float16", checkpoint=2, accumulate=2)]
    assert [fit.config.but(card=None) for fit in search.tried] == order[:chosen + 1]
    assert search.chosen is search.tried[-1] and search.chosen.fits
    assert search.chosen.reserved <= usable < min(fit.reserved for fit in search.tried[:-1])
    assert not any(fit.fits for fit in search.tried[:-1])
    assert search.config.micro_batch == 2048 // search.config.accumulate
    assert "->" in search.table()


def test_nothing_fits_says_what_takes_the_memory():
    model = mlp()
    with pytest.raises(NothingFits, match="optimizer state") as caught:
        fitting_configuration(model, (1, 8, 8), 4, card_of(1 << 16), checkpoint=2)
    assert len(caught.value.search.tried) == 3 + len(accumulation_choices(4))
    assert caught.value.search.chosen is None


def test_bad_input_is_explained():
    with pytest.raises(FitPlanError, match="TrainConfig"):
        estimate_step(mlp(), (1, 8, 8), {"batch_size": 8})
    with pytest.raises(FitPlanError, match="estimate_step: checkpoint=2 cuts the model into segments, so it must be an nn.Sequential"):
        estimate_step(nn.Linear(4, 2), (4,), TrainConfig(8, checkpoint=2))
    layers = len(mlp())
    with pytest.raises(FitPlanError, match=f"tracked_step: checkpoint={layers + 1} segments, but the Sequential has only {layers} layers"):
        tracked_step(mlp(), (1, 8, 8), TrainConfig(8, checkpoint=layers + 1, card="gtx1050"))  # refused, never clamped
    with pytest.raises(FitPlanError, match="input_shape"):
        estimate_step(mlp(), (1, 8.5, 8), TrainConfig(8))
    with pytest.raises(FitPlanError, match="name a card"):
        tracked_step(mlp(), (1, 8, 8), TrainConfig(8))
    with pytest.raises(FitPlanError, match="names no card"):
        estimate_step(mlp(), (1, 8, 8), TrainConfig(8)).fits_card()
    with pytest.raises(ValueError, match="amp"):
        fitting_configuration(mlp(), (1, 8, 8), 8, "gtx1050", amp="float8")
    with pytest.raises(ValueError, match="unknown GPU"):
        fitting_configuration(mlp(), (1, 8, 8), 8, "gtx9999")
