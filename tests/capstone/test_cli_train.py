"""``minigrad train`` with the capstone's options, on the shipped MNIST subset: a crash resumed bitwise, the
summary, and bad combinations refused by the parser with a fix."""

import gc

import numpy as np
import pytest

import minigrad
from minigrad import cli
from minigrad.capstone.training_run import TrainingRun

BASE = ["train", "mnist-mlp", "--subset", "--no-progress", "--epochs", "1", "--batch-size", "256"]


class Crash(Exception):
    pass


def test_a_crashed_run_resumed_from_its_last_save_ends_bitwise_as_one_never_stopped(tmp_path, monkeypatch, capsys):
    options = ["--amp", "float16", "--accumulate", "2", "--gpu-budget", "gtx1050"]
    assert cli.main([*BASE, *options, "--save", str(tmp_path / "whole.npz")]) == 0
    out = capsys.readouterr().out
    assert "final test accuracy:" in out and "reserved peak:" in out and "of the NVIDIA GeForce GTX 1050's 2.00 GiB" in out
    assert "peak memory:" in out and "parameter" in out and "optimizer_state" in out
    step = TrainingRun.step

    def crashing(run):
        if run.step_count == 13:
            raise Crash("the machine went down")
        return step(run)

    monkeypatch.setattr(TrainingRun, "step", crashing)
    with pytest.raises(Crash) as crashed:
        cli.main([*BASE, *options, "--save", str(tmp_path / "run.npz"), "--save-every", "5"])
    del crashed  # its traceback holds the crashed run's model: a later simulated card would count it
    gc.collect()
    assert minigrad.load(tmp_path / "run.npz")["counters"]["step"] == 10  # the last save before the crash
    monkeypatch.setattr(TrainingRun, "step", step)
    assert cli.main([*BASE, *options, "--resume", str(tmp_path / "run.npz"), "--save", str(tmp_path / "end.npz")]) == 0
    whole, resumed = minigrad.load(tmp_path / "whole.npz"), minigrad.load(tmp_path / "end.npz")
    assert resumed["history"]["losses"] == whole["history"]["losses"]
    for key, value in whole["model"].items():
        np.testing.assert_array_equal(resumed["model"][key].numpy(), value.numpy())


def test_resuming_with_another_accumulation_is_explained(tmp_path, capsys):
    assert cli.main([*BASE, "--accumulate", "2", "--save", str(tmp_path / "run.npz")]) == 0
    capsys.readouterr()
    assert cli.main([*BASE, "--accumulate", "4", "--resume", str(tmp_path / "run.npz")]) == 2
    err = capsys.readouterr().err
    assert "batch_size=256 as accumulate=2" in err and "resume with batch_size=256 and accumulate=2" in err


@pytest.mark.parametrize("options, expected", [
    (["--checkpoint", "auto"], "--checkpoint auto plans against a card's memory: add --gpu-budget PROFILE"),
    (["--checkpoint", "0"], "'0': use auto"),
    (["--checkpoint", "some"], "'some': use auto"),
    (["--save-every", "5"], "--save-every N saves the run to the --save path: add --save PATH"),
    (["--accumulate", "3"], r"--accumulate 3 must divide the batch of 256 into equal micro-batches; try --accumulate in"),
    (["--resume", "/no/such/run.npz"], "--resume /no/such/run.npz: no such file"),
    (["--gpu-budget", "gtx9999"], "unknown GPU 'gtx9999'"),
    (["--amp", "float8"], "invalid choice: 'float8'"),
    (["--accumulate", "0"], "must be >= 1, got 0"),
])
def test_bad_combinations_are_refused_by_the_parser(options, expected, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main([*BASE, *options])
    assert stopped.value.code == 2
    assert expected in capsys.readouterr().err


def test_a_file_that_is_not_a_run_is_refused(tmp_path, capsys):
    minigrad.save({"recipe": "mnist-mlp"}, tmp_path / "model.npz")
    assert cli.main([*BASE, "--resume", str(tmp_path / "model.npz")]) == 2
    assert "not a training run's" in capsys.readouterr().err
