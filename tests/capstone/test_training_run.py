"""TrainingRun.step: the knobs change memory and time, not the numbers; the card records its peaks or refuses."""

import gc

import numpy as np
import pytest

from minigrad import nn, optim
from minigrad.capstone import TrainConfig
from minigrad.capstone.training_run import TrainingRun
from minigrad.memory import CATEGORIES, PROFILES, GPUProfile, OutOfMemoryError, live_buffers
from minigrad.memory.categories import category_of
from tiny_runs import make_run, parameters

STEPS = 7  # crosses an epoch (6 batches)


def losses(config, steps=STEPS, **kwargs):
    run = make_run(config, **kwargs)
    for _ in range(steps):
        run.step()
    return run


@pytest.mark.parametrize("checkpoint, card", [(2, None), (6, None), ("budget", "gtx1050"), ("auto", "gtx1050")])
def test_checkpointing_leaves_the_losses_and_parameters_bitwise_unchanged(checkpoint, card):
    plain = losses(TrainConfig(batch_size=8))
    checked = losses(TrainConfig(batch_size=8, checkpoint=checkpoint, card=card))
    assert checked.history.losses == plain.history.losses
    for mine, theirs in zip(parameters(checked), parameters(plain)):
        np.testing.assert_array_equal(mine, theirs)


def test_accumulation_makes_the_same_update_up_to_rounding():
    whole = losses(TrainConfig(batch_size=8))
    split = losses(TrainConfig(batch_size=8, accumulate=4))
    np.testing.assert_allclose(split.history.losses, whole.history.losses, rtol=1e-5)
    for mine, theirs in zip(parameters(split), parameters(whole)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-6)


def test_a_short_last_batch_is_weighted_by_its_share():
    run = losses(TrainConfig(batch_size=8, accumulate=2), steps=6, examples=44)  # 6 batches: five of 8, one of 4
    whole = losses(TrainConfig(batch_size=8), steps=6, examples=44)
    np.testing.assert_allclose(run.history.losses, whole.history.losses, rtol=1e-5)
    assert run.epoch == 1 and run.position == 0 and len(run.history.epochs) == 1


def test_float16_records_the_loss_scale_trace():
    run = losses(TrainConfig(batch_size=8, amp="float16"), scaler_kwargs={"init_scale": 2.0**18, "growth_interval": 2})
    scales, skipped = run.history.loss_scales, run.history.skipped
    assert scales[0] == 2.0**18 and any(skipped)
    assert all(b == a / 2 for a, b, s in zip(scales, scales[1:], skipped) if s)  # each overflow halves the scale
    assert not all(skipped) and all(np.isfinite(run.history.losses))
    grown = [b for a, b, s in zip(scales, scales[1:], skipped) if not s and b != a]
    assert all(b in (a, 2 * a) for a, b, s in zip(scales, scales[1:], skipped) if not s) and grown
    assert len(run.history.step_times) == STEPS and min(run.history.step_times) > 0


def _live_bytes_by_category():
    gc.collect()
    totals = dict.fromkeys(CATEGORIES, 0)
    for nbytes, tag, _device in live_buffers().values():
        totals[category_of(tag)] += nbytes
    return totals


def test_a_card_records_reserved_allocated_and_category_peaks():
    before = _live_bytes_by_category()  # other tests' tensors still alive are on the card too, as on a real one
    run = losses(TrainConfig(batch_size=8, card="gtx1050"), steps=2)
    memory = run.memory
    assert memory.peak_reserved >= memory.peak_allocated >= memory.peak > 0
    assert sum(memory.peak_by_category.values()) == memory.peak
    weights = sum(p.nbytes for p in run.model.parameters())
    assert memory.peak_by_category["parameter"] == weights + before["parameter"]
    assert memory.peak_by_category["optimizer_state"] == 2 * weights + before["optimizer_state"]


def test_out_of_memory_is_the_cards_report(monkeypatch):
    tiny = GPUProfile("Tiny Test Card", "tinycard", memory_bytes=40_000, bandwidth_gb_s=1.0, fp32_tflops=1.0,
                      fp16_tflops=1.0, tensor_cores=0, compute_capability=(6, 1), context_bytes=0)
    monkeypatch.setitem(PROFILES, "tinycard", tiny)
    run = make_run(TrainConfig(batch_size=8, card="tinycard"), hidden=64)
    with pytest.raises(OutOfMemoryError, match="Tiny Test Card"):
        run.step()
    assert run.step_count == 0 and run.history.losses == []


def test_bad_pieces_are_refused_with_a_fix():
    run = make_run()
    with pytest.raises(ValueError, match="hands out batches of 8 but config.batch_size is 16"):
        TrainingRun(run.model, run.optimizer, run.train_loader, TrainConfig(batch_size=16), run.loss_fn)
    with pytest.raises(ValueError, match="checkpoint=9 segments, but the Sequential has only 6 layers"):
        TrainingRun(run.model, run.optimizer, run.train_loader, TrainConfig(batch_size=8, checkpoint=9), run.loss_fn)
    with pytest.raises(TypeError, match="must be an nn.Sequential, got Linear; wrap its layers in nn.Sequential, or use checkpoint='budget'"):
        linear = nn.Linear(12, 4)
        TrainingRun(linear, optim.SGD(linear.parameters(), lr=0.1), run.train_loader,
                    TrainConfig(batch_size=8, checkpoint=2), run.loss_fn)
    from minigrad.amp import GradScaler
    with pytest.raises(ValueError, match="a GradScaler was given but config.amp=None needs none"):
        TrainingRun(run.model, run.optimizer, run.train_loader, TrainConfig(batch_size=8), run.loss_fn,
                    scaler=GradScaler("cpu"))


def test_a_loader_that_runs_dry_before_the_epoch_ends_is_explained():
    run = make_run()
    run.step()
    run.position = 0  # the run believes it is at the epoch's start; the loader has handed out one batch
    for _ in range(5):
        run.step()
    with pytest.raises(RuntimeError, match="no batch left, but the run is at batch 5 of 6 in its epoch"):
        run.step()
