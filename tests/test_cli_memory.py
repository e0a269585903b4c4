"""``minigrad memory``: the profile table, a step's estimate against a card, exit codes and clear errors."""

import subprocess
import sys

import pytest

from minigrad.cli import main
from minigrad.memory.estimate import estimate, format_bytes
from minigrad.memory.profiles import PROFILES, get_profile
from minigrad.training.recipes import mnist_cnn


def run(capsys, *argv):
    code = main(["memory", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_devices_prints_every_profile(capsys):
    code, out, _ = run(capsys, "devices")
    assert code == 0
    for profile in PROFILES.values():
        assert profile.short_name in out and profile.name.replace("NVIDIA ", "") in out
    assert "usable" in out and "CUDA context" in out


def test_a_step_that_fits_exits_0_with_its_breakdown_and_largest_batch(capsys):
    code, out, _ = run(capsys, "estimate", "mnist-cnn", "--batch", "4096", "--gpu", "gtx1050")
    assert code == 0
    expected = estimate(mnist_cnn(), (1, 28, 28), 4096)
    for label in ("parameters", "gradients", "optimizer state", "activations", "peak of the step"):
        assert label in out
    assert format_bytes(expected.peak) in out
    assert "mnist-cnn" in out and "GTX 1050" in out and " fits " in out
    assert f"largest batch that fits: {expected.max_batch_size('gtx1050')}" in out


def test_a_step_that_does_not_fit_exits_1_and_proposes_accumulation_that_fits(capsys):
    code, out, _ = run(capsys, "estimate", "mnist-cnn", "--batch", "16384", "--gpu", "gtx1050")
    assert code == 1
    assert "does NOT fit" in out
    assert "--batch 4096 --accumulation 4" in out
    fixed = estimate(mnist_cnn(), (1, 28, 28), 4096, accumulation_steps=4)
    assert fixed.fits("gtx1050") and not estimate(mnist_cnn(), (1, 28, 28), 8192, accumulation_steps=2).fits("gtx1050")


def test_dtype_optimizer_and_accumulation_reach_the_estimate(capsys):
    code, out, _ = run(capsys, "estimate", "mnist-mlp", "--batch", "256", "--gpu", "t4", "--dtype", "float16",
                       "--optimizer", "sgd", "--accumulation", "2")
    assert code == 0
    from minigrad.training.recipes import mnist_mlp
    expected = estimate(mnist_mlp(), (1, 28, 28), 256, optimizer="sgd", dtype="float16", accumulation_steps=2)
    assert "float16, sgd" in out and "effective batch: 256 x 2 = 512" in out
    assert f"peak allocated {format_bytes(expected.peak)}, reserved {format_bytes(expected.reserved)}" in out


def test_without_a_gpu_every_profile_gets_a_verdict(capsys):
    code, out, _ = run(capsys, "estimate", "mnist-mlp", "--batch", "64")
    assert code == 0
    assert all(get_profile(name).name in out for name in PROFILES)


@pytest.mark.parametrize("argv, message", [
    (["mnist-resnet", "--batch", "8"], "unknown model 'mnist-resnet'; choose one of mnist-mlp, mnist-cnn"),
    (["mnist-cnn", "--batch", "8", "--gpu", "rtx9090"], "unknown GPU 'rtx9090'; known profiles: mx150, gtx1050"),
    (["mnist-cnn", "--batch", "8", "--dtype", "int8"], "unknown dtype 'int8'; choose one of float32, float16"),
    (["mnist-cnn", "--batch", "8", "--optimizer", "lbfgs"],
     "unknown optimizer 'lbfgs'; choose one of adam, sgd, sgd-momentum, adamw, rmsprop"),
    (["mnist-cnn", "--batch", "0"], "--batch: must be >= 1, got 0"),
    (["mnist-cnn", "--batch", "8", "--accumulation", "two"], "expected a whole number >= 1, got 'two'"),
])
def test_bad_arguments_exit_2_naming_the_valid_values(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["memory", "estimate", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_exit_codes_are_documented(capsys):
    with pytest.raises(SystemExit):
        main(["memory", "estimate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "0 the step fits the --gpu card" in help_text and "1 it does not fit" in help_text


def test_the_names_it_accepts_are_the_librarys():
    import minigrad.tensor as mt
    from minigrad import cli
    from minigrad.memory.estimate import OPTIMIZERS
    from minigrad.training.recipes import RECIPES

    assert set(cli.MEMORY_MODELS) == set(RECIPES)
    assert set(cli.MEMORY_OPTIMIZERS) == set(OPTIMIZERS) and cli.MEMORY_OPTIMIZERS[0] == "adam"
    assert {mt.dtypes.as_dtype(name) for name in cli.MEMORY_DTYPES} == set(mt.dtypes.FLOATING_DTYPES)


def test_building_the_parser_imports_no_stage():
    code = ("import sys, minigrad.cli; minigrad.cli.parser(); "
            "print(sorted(m for m in sys.modules if m.startswith('minigrad.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "['minigrad.cli']", done.stdout + done.stderr


def test_the_command_runs_as_a_program():
    done = subprocess.run([sys.executable, "-m", "minigrad.cli", "memory", "estimate", "mnist-cnn", "--batch", "16384",
                           "--gpu", "gtx1050"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "does NOT fit" in done.stdout and "--accumulation 4" in done.stdout
