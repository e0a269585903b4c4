"""``simulated_gpu``: a card's budget on real training steps, its out-of-memory report, and training on after it.

Most tests use a scaled-down card ("tiny": 48 MiB, no CUDA context) so a step
takes a fraction of a second; the acceptance test runs the chapter-06 CNN
against the real GTX 1050 and GTX 1650 profiles.
"""

import dataclasses
import gc
import re

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.memory.allocator import AllocatorOutOfMemoryError
from minigrad.memory.categories import CATEGORIES
from minigrad.memory.estimate import estimate
from minigrad.memory.oom_report import OutOfMemoryError, suggestions
from minigrad.memory.profiles import get_profile
from minigrad.memory.simulated_gpu import simulated_gpu
from minigrad.memory.tracker import track
import minigrad.memory as mm
from minigrad.memory import buffers, phases
from minigrad.training.recipes import mnist_cnn
from minigrad.viz.segment_map import draw_segment_map

MiB = 2**20
TINY = dataclasses.replace(get_profile("gtx1050"), name="tiny test card", short_name="tiny",
                           memory_bytes=48 * MiB, context_bytes=0)


@pytest.fixture(autouse=True)
def nothing_left_registered():
    gc.collect()
    yield
    gc.collect()
    assert not buffers.guards and not buffers.observers and not phases.observers


def batch(n, seed=0):
    rng = np.random.default_rng(seed)
    x = mt.tensor(rng.standard_normal((n, 1, 28, 28)).astype(np.float32))
    return x, mt.tensor(rng.integers(0, 10, n))


def train_step(model, optimizer, n, seed=0, accumulation_steps=1):
    """zero_grad, then forward and backward on ``accumulation_steps`` micro-batches of the batch, then step."""
    x, y = batch(n, seed)
    optimizer.zero_grad(set_to_none=True)
    micro = n // accumulation_steps
    for i in range(accumulation_steps):
        loss = nn.functional.cross_entropy(model(x[i * micro:(i + 1) * micro]), y[i * micro:(i + 1) * micro])
        (loss * (1.0 / accumulation_steps) if accumulation_steps > 1 else loss).backward()
        del loss
    optimizer.step()


def cnn_and_adam(seed=0):
    mt.manual_seed(seed)
    model = mnist_cnn()
    return model, optim.Adam(model.parameters(), lr=1e-3)


def live_simulated_bytes():
    return sum(nbytes for nbytes, _tag, device in mm.live_buffers().values() if device.split(":")[0] == "cpu")


def report_categories(message):
    """The category lines of the message, parsed back into exact bytes."""
    return {m.group(1): int(m.group(2).replace(",", ""))
            for m in re.finditer(r"^  (\w+) +\S+ \w+ +\(([\d,]+) bytes\)$", message, re.M)}


# ----------------------------------------------------------------------------- the small card


def test_out_of_memory_then_a_smaller_batch_trains_like_a_run_that_never_failed():
    too_big = estimate(mnist_cnn(), (1, 28, 28), 64).max_batch_size(TINY) * 2
    model, optimizer = cnn_and_adam()
    with simulated_gpu(TINY) as gpu, track(model, optimizer, tracemalloc=False, timeline=False) as mem:
        with pytest.raises(OutOfMemoryError) as caught:
            train_step(model, optimizer, too_big)
        tracked_then = mem.current
        report = caught.value.report
        del caught
        gc.collect()
        assert report.allocated == tracked_then == sum(report.by_category.values())
        # nothing of the failed step is left: the card and the tracker hold exactly the live buffers
        assert gpu.current == live_simulated_bytes() == mem.current
        assert len(gpu.allocator.allocated) == len(gpu.live)
        train_step(model, optimizer, 32, seed=1)
        train_step(model, optimizer, 32, seed=2)
        assert gpu.current == live_simulated_bytes() == mem.current
        assert mem.by_category() == gpu.by_category()
    reference, reference_optimizer = cnn_and_adam()
    train_step(reference, reference_optimizer, 32, seed=1)
    train_step(reference, reference_optimizer, 32, seed=2)
    for p, q in zip(model.parameters(), reference.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())
    assert gpu.num_ooms == 1 and gpu.stats()["num_ooms"] == 1


def test_the_report_reads_like_pytorchs_and_its_categories_sum_to_the_tracked_total():
    model, optimizer = cnn_and_adam()
    train_step(model, optimizer, 4)  # Adam has its state: every category of a step is present
    too_big = estimate(model, (1, 28, 28), 64).max_batch_size(TINY) * 2
    with simulated_gpu(TINY, model=model, optimizer=optimizer) as gpu, \
            track(model, optimizer, tracemalloc=False, timeline=False) as mem:
        with pytest.raises(OutOfMemoryError) as caught:
            train_step(model, optimizer, too_big)
        tracked = mem.current
    error = caught.value
    message = str(error)
    assert isinstance(error, MemoryError) and isinstance(error, AllocatorOutOfMemoryError)
    assert message.startswith("tiny test card (simulated): Tried to allocate ")
    assert "GPU has a total capacity of 48.0 MiB of which " in message and " is free." in message
    assert "reserved but unallocated" in message and "fragmentation" in message
    parsed = report_categories(message)
    assert parsed == {c: b for c, b in error.report.by_category.items() if b}
    assert sum(parsed.values()) == tracked == error.report.allocated
    assert set(parsed) >= {"parameter", "optimizer_state", "activation", "input"}
    # the three largest live tensors, largest first, each with the op that made it
    sizes = [row[0] for row in error.report.largest_tensors]
    assert len(sizes) == 3 and sizes == sorted(sizes, reverse=True)
    assert all(op for _, _, op in error.report.largest_tensors[:1])
    assert re.search(r"^  1\. +\S+ \w+ +activation, made by \w+", message, re.M)
    # suggestions ranked by their saving; SGD instead of Adam saves exactly the optimizer state
    lines = re.findall(r"^  \d\. saves about (\S+ \w+): (.*)$", message, re.M)
    advice = error.report.suggestions()
    assert [text for _, text in lines] == [s.advice for s in advice]
    assert [s.saving for s in advice] == sorted((s.saving for s in advice), reverse=True)
    sgd = next(s for s in advice if s.advice.startswith("SGD instead of Adam"))
    assert sgd.saving == error.report.by_category["optimizer_state"] == 2 * sum(p.nbytes for p in model.parameters())


def test_an_error_that_ends_the_block_frees_the_failed_steps_buffers_at_once():
    """As in a notebook, where the kernel keeps the last traceback (and with it the failed step's arrays)."""
    model, optimizer = cnn_and_adam()
    too_big = estimate(model, (1, 28, 28), 64).max_batch_size(TINY) * 2
    parameter_bytes = sum(p.nbytes for p in model.parameters())
    with pytest.raises(OutOfMemoryError) as caught:  # keeps the traceback alive, as a kernel does
        with simulated_gpu(TINY) as gpu:
            train_step(model, optimizer, too_big)
    assert caught.value.report.by_category["activation"] > 0
    assert gpu.by_category() == dict(dict.fromkeys(CATEGORIES, 0), parameter=parameter_bytes)
    assert gpu.allocator.allocated_bytes < parameter_bytes + 512 * len(gpu.live)


def test_suggestions_are_estimated_from_the_live_categories():
    live = dict.fromkeys(CATEGORIES, 0)
    live.update(activation=800, input=200, gradient=50, optimizer_state=100)
    saving = {s.advice.split(":")[0].split(" (")[0]: s.saving for s in suggestions(live)}
    assert saving == {
        "gradient accumulation": 750, "halve the batch size": 500, "mixed precision": 400,
        "activation checkpointing": 400, "SGD instead of Adam": 100,
        "optimizer.zero_grad(set_to_none=True) before the forward pass": 50,
    }
    assert [s.saving for s in suggestions(live)] == [750, 500, 400, 400, 100, 50]
    assert suggestions(dict.fromkeys(CATEGORIES, 0)) == []


def test_parameters_made_before_the_block_are_on_the_card_and_the_allocator_is_exposed():
    model, optimizer = cnn_and_adam()
    parameter_bytes = sum(p.nbytes for p in model.parameters())
    with simulated_gpu(TINY) as gpu:
        train_step(model, optimizer, 8)
        assert gpu.by_category()["parameter"] == parameter_bytes
        assert gpu.by_category()["optimizer_state"] == 2 * parameter_bytes
        assert gpu.current == live_simulated_bytes()
        stats = gpu.stats()
        assert stats["allocated_bytes.all.current"] == gpu.allocator.allocated_bytes >= gpu.current
        assert stats["reserved_bytes.all.peak"] <= TINY.usable_bytes
        tags = {block["tag"] for segment in gpu.allocator.snapshot() for block in segment["blocks"]}
        assert {"parameter", "optimizer_state"} <= tags  # the segment map colours blocks by category
        picture = draw_segment_map(gpu.allocator, title="tiny card")
        assert "optimizer_state" in picture.body
    assert not gpu.active and "tiny" in repr(gpu)


def test_a_model_that_does_not_fit_is_refused_when_the_card_is_entered():
    model, optimizer = cnn_and_adam()
    train_step(model, optimizer, 2)
    crumb = dataclasses.replace(TINY, memory_bytes=64 * 1024)
    with pytest.raises(OutOfMemoryError, match="Tried to allocate"):
        with simulated_gpu(crumb, model=model, optimizer=optimizer):
            pass
    train_step(model, optimizer, 2)  # the model trains on outside the card


def test_bad_profiles_and_reentry_are_refused():
    with pytest.raises(ValueError, match="no memory left"):
        simulated_gpu(dataclasses.replace(TINY, context_bytes=TINY.memory_bytes))
    with pytest.raises(ValueError, match="unknown policy"):
        simulated_gpu(TINY, policy="worst_fit")
    gpu = simulated_gpu(TINY)
    with gpu:
        with pytest.raises(RuntimeError, match="already active"):
            gpu.__enter__()


def test_other_devices_are_not_on_the_card():
    from minigrad.testing import strict_backend
    strict = strict_backend.register()
    with simulated_gpu(TINY, devices=("cpu",)) as gpu:
        big = mt.zeros((64, MiB // 4), device=strict)  # 64 MiB on a device the card does not simulate
        assert gpu.current == 0
        del big


# ----------------------------------------------------------------------------- the real cards (acceptance)


def test_a_cnn_just_above_the_gtx1050_fails_there_fits_on_4_gb_and_on_2_gb_with_accumulation():
    model, optimizer = cnn_and_adam()
    train_step(model, optimizer, 2)  # the optimizer's state exists, as in any step after the first
    plan = estimate(model, (1, 28, 28), 64)
    fitting = plan.max_batch_size("gtx1050")
    too_big = fitting + 256
    usable = get_profile("gtx1050").usable_bytes
    # just above the budget, in reserved bytes, the way the card decides
    assert plan.at(fitting).replay("gtx1050").peak_reserved <= usable < plan.at(too_big).reserved
    assert not plan.at(too_big).fits("gtx1050") and plan.at(too_big).peak < 1.05 * usable
    assert plan.at(too_big).fits("gtx1650")
    assert estimate(model, (1, 28, 28), too_big // 2, accumulation_steps=2).fits("gtx1050")
    with simulated_gpu("gtx1050") as gpu, track(model, optimizer, tracemalloc=False, timeline=False) as mem:
        with pytest.raises(OutOfMemoryError) as caught:
            train_step(model, optimizer, too_big)
        tracked = mem.current
        report = caught.value.report
        del caught
        assert sum(report.by_category.values()) == report.allocated == tracked
        assert report.allocated + report.requested > 0.5 * usable
        assert report.request_op is not None  # an op, or the backward pass / optimizer step that asked
        # training continues in the same process, on the same card: gradient accumulation at the same effective batch
        train_step(model, optimizer, too_big, accumulation_steps=2)
    assert gpu.stats()["reserved_bytes.all.peak"] <= usable
    with simulated_gpu("gtx1650") as big_card:
        train_step(model, optimizer, too_big)
    assert big_card.stats()["num_ooms"] == 0 and big_card.stats()["reserved_bytes.all.peak"] > usable
