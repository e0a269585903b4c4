"""Saving and resuming a TrainingRun: bitwise continuation (same process and a fresh one), crash-safe saving,
and hostile checkpoints refused with what differs."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import minigrad
from minigrad.capstone import TrainConfig
from minigrad.capstone.run_state import load_run
from minigrad.capstone.training_run import TrainingRun
from minigrad.nn.serialization import CheckpointError
from tiny_runs import make_run, optimizer_moments, parameters

CHILD = Path(__file__).with_name("run_child.py")
STEPS, STOP = 14, 8  # 6 batches an epoch: the run stops mid-epoch 2 and crosses into epoch 3 after resuming
# float16 with a large starting scale overflows at once: the trace backs off (steps skipped), grows, backs off
OVERFLOWING = {"init_scale": 2.0**20, "growth_interval": 3}
CONFIGS = {
    "float32": (TrainConfig(batch_size=8), None),
    "float16-scaler-accumulate": (TrainConfig(batch_size=8, amp="float16", accumulate=2), OVERFLOWING),
    "bfloat16-segments": (TrainConfig(batch_size=8, amp="bfloat16", checkpoint=2, accumulate=4), None),
}


def uninterrupted(config, scaler):
    run = make_run(config, scaler_kwargs=scaler)
    for _ in range(STEPS):
        run.step()
    return run


def assert_same_run(resumed, reference):
    assert resumed.history.losses == reference.history.losses  # floats, compared exactly
    assert resumed.history.loss_scales == reference.history.loss_scales
    assert resumed.history.skipped == reference.history.skipped
    for mine, theirs in zip(parameters(resumed), parameters(reference)):
        np.testing.assert_array_equal(mine, theirs)
    for mine, theirs in zip(optimizer_moments(resumed), optimizer_moments(reference)):
        np.testing.assert_array_equal(mine, theirs)
    assert (resumed.step_count, resumed.epoch, resumed.position) == (reference.step_count, reference.epoch,
                                                                   reference.position)
    assert [e["train_loss"] for e in resumed.history.epochs] == [e["train_loss"] for e in reference.history.epochs]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_resumed_run_continues_bitwise_in_the_same_process(name, tmp_path):
    config, scaler = CONFIGS[name]
    reference = uninterrupted(config, scaler)
    first = make_run(config, scaler_kwargs=scaler)
    for _ in range(STOP):
        first.step()
    first.save(tmp_path / "run.npz")
    for _ in range(3):
        first.step()  # the interrupted process goes on drawing random numbers and batches: none of it may leak
    pieces = make_run(config, scaler_kwargs=scaler)
    resumed = TrainingRun.resume(tmp_path / "run.npz", pieces.model, pieces.optimizer, pieces.train_loader, config,
                                 pieces.loss_fn, scheduler=pieces.scheduler, scaler=pieces.scaler)
    assert resumed.step_count == STOP and resumed.history.losses == reference.history.losses[:STOP]
    for _ in range(STEPS - STOP):
        resumed.step()
    assert_same_run(resumed, reference)
    if scaler is not None:
        assert 2 < sum(reference.history.skipped) < STEPS - 2 and len(set(reference.history.loss_scales)) > 2


@pytest.mark.parametrize("stop", [6, 12])  # at the end of an epoch: the next step starts a new order
def test_a_run_saved_at_an_epoch_end_continues_bitwise(stop, tmp_path):
    config, scaler = CONFIGS["float32"]
    reference = uninterrupted(config, scaler)
    run = make_run(config)
    for _ in range(stop):
        run.step()
    assert run.position == 0 and run.epoch == stop // 6
    run.save(tmp_path / "run.npz")
    resumed = make_run(config)
    resumed.load_state_dict(load_run(tmp_path / "run.npz"))
    for _ in range(STEPS - stop):
        resumed.step()
    assert_same_run(resumed, reference)


def test_a_state_dict_is_a_snapshot_and_can_be_resumed_twice():
    config, scaler = CONFIGS["float16-scaler-accumulate"]
    reference = uninterrupted(config, scaler)
    run = make_run(config, scaler_kwargs=scaler)
    for _ in range(STOP):
        run.step()
    state = run.state_dict()
    for _ in range(2):
        again = make_run(config, scaler_kwargs=scaler)
        again.load_state_dict(state)  # training the first resumed run must not have changed the state
        for _ in range(STEPS - STOP):
            again.step()
        assert_same_run(again, reference)


def test_a_run_resumed_in_a_fresh_process_continues_bitwise(tmp_path):
    config, scaler = CONFIGS["float16-scaler-accumulate"]
    reference = uninterrupted(config, scaler)
    run = make_run(config, scaler_kwargs=scaler)
    for _ in range(STOP):
        run.step()
    run.save(tmp_path / "run.npz")
    fields = {"batch_size": config.batch_size, "amp": config.amp, "accumulate": config.accumulate}
    subprocess.run([sys.executable, str(CHILD), "resume", str(tmp_path / "run.npz"), str(STEPS - STOP),
                    str(tmp_path / "out.npz"), json.dumps(fields), json.dumps(scaler)], check=True, timeout=120,
                   env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    out = minigrad.load(tmp_path / "out.npz")
    assert out["losses"] == reference.history.losses and out["scales"] == reference.history.loss_scales
    for mine, theirs in zip(out["parameters"], parameters(reference)):
        np.testing.assert_array_equal(mine, theirs)


def _kill_mid_write(child, folder: Path, timeout: float = 30.0) -> None:
    """SIGKILL ``child`` as soon as a save's half-written file (``.run.npz.<random>.part``) is seen in ``folder``."""
    for line in child.stdout:
        if line.strip() == "saving 2":  # the first checkpoint is complete
            break
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and child.poll() is None:
        if any(p.name.endswith(".part") for p in folder.iterdir()):
            child.send_signal(signal.SIGKILL)
            return
        time.sleep(0.0005)
    pytest.fail("no save was seen in progress")


def test_a_sigkill_while_saving_leaves_the_previous_checkpoint_intact(tmp_path):
    path, hidden = tmp_path / "run.npz", 1024  # ~1 M parameters: each save writes ~13 MB
    interrupted_saves = 0
    for _ in range(2):
        child = subprocess.Popen([sys.executable, str(CHILD), "save-loop", str(path), str(hidden)],
                                 stdout=subprocess.PIPE, text=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
        try:
            _kill_mid_write(child, tmp_path)
        finally:
            child.kill()
            child.wait(timeout=30)
        leftovers = list(tmp_path.glob(".*.part"))  # what the killed save had written so far
        interrupted_saves += bool(leftovers)
        state = load_run(path)  # whole, not truncated
        steps = state["counters"]["step"]
        assert steps >= 1 and len(state["history"]["losses"]) == steps
        reference = make_run(TrainConfig(batch_size=8), hidden=hidden, scheduler=False)
        for _ in range(steps):
            reference.step()
        resumed = make_run(TrainConfig(batch_size=8), hidden=hidden, scheduler=False)
        resumed.load_state_dict(state)
        for mine, theirs in zip(parameters(resumed), parameters(reference)):
            np.testing.assert_array_equal(mine, theirs)
        for leftover in leftovers:
            leftover.unlink()
    assert interrupted_saves >= 1  # the kill landed inside a write at least once (else the test proves nothing)


def _saved_run(tmp_path, config=None, steps=3, **kwargs):
    run = make_run(config or TrainConfig(batch_size=8), **kwargs)
    for _ in range(steps):
        run.step()
    return run.save(tmp_path / "run.npz")


def test_a_checkpoint_of_another_model_is_refused_naming_the_difference(tmp_path):
    path = _saved_run(tmp_path, hidden=32)
    other = make_run(hidden=16)
    before = parameters(other)
    with pytest.raises(ValueError, match=r"another model .*0\.weight is \(32, 12\) float32 in the checkpoint, "
                                         r"\(16, 12\) float32 here"):
        other.load_state_dict(load_run(path))
    for mine, theirs in zip(parameters(other), before):  # refused before anything changed
        np.testing.assert_array_equal(mine, theirs)
    assert other.step_count == 0


@pytest.mark.parametrize("changes, expected", [
    ({"batch_size": 16}, r"batch_size=8 as accumulate=1 micro-batch\(es\); this one batch_size=16, accumulate=1"),
    ({"accumulate": 2}, r"a different split rounds the sum of gradients differently.*resume with batch_size=8 and "
                        r"accumulate=1"),
    ({"amp": "bfloat16"}, r"config.amp is None in the checkpoint, 'bfloat16' here"),
    ({"optimizer": "sgd"}, r"(?s)config.optimizer is 'adam' in the checkpoint, 'sgd' here.*optimizer is Adam, this run's SGD"),
])
def test_resuming_with_another_configuration_is_explained(tmp_path, changes, expected):
    path = _saved_run(tmp_path)
    other = make_run(TrainConfig(batch_size=8).but(**changes))
    with pytest.raises(ValueError, match=expected):
        other.load_state_dict(load_run(path))


def test_a_different_card_or_checkpointing_may_resume(tmp_path):
    path = _saved_run(tmp_path)
    run = make_run(TrainConfig(batch_size=8, checkpoint=3))
    run.load_state_dict(load_run(path))
    assert run.step_count == 3


def test_another_dataset_or_scheduler_is_refused(tmp_path):
    path = _saved_run(tmp_path)
    with pytest.raises(ValueError, match="its data had 48 examples in 6 batches, this run's loader 40 in 5"):
        make_run(examples=40).load_state_dict(load_run(path))
    with pytest.raises(ValueError, match="its scheduler is CosineAnnealingLR, this run's None"):
        make_run(scheduler=False).load_state_dict(load_run(path))


def test_a_corrupt_truncated_or_foreign_file_is_refused(tmp_path):
    path = _saved_run(tmp_path)
    data = path.read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load_run(tmp_path / "truncated.npz")
    flipped = bytearray(data)
    flipped[len(data) // 3: len(data) // 3 + 64] = bytes(64)
    (tmp_path / "flipped.npz").write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError):
        load_run(tmp_path / "flipped.npz")
    minigrad.save({"model": make_run().model.state_dict()}, tmp_path / "model.npz")
    with pytest.raises(ValueError, match="not a training run's .*'model'"):
        load_run(tmp_path / "model.npz")
    state = load_run(path)
    state["counters"]["step"] = 99
    with pytest.raises(ValueError, match="do not match its history of 3 steps; the file is damaged"):
        make_run().load_state_dict(state)
    del state["rng"]
    with pytest.raises(ValueError, match="the state lacks rng"):
        make_run().load_state_dict(state)
