"""``estimate()`` and its fit answers on hostile inputs: an exact figure or a clear error, never a wrong number.

Each row is an input a learner will write; the expected outcome is a correct
(possibly enormous) figure, or an error of the named type whose message
says what to do. Nothing may wrap around int64, truncate, or crash inside.
"""

import subprocess
import sys

import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.cli import main
from minigrad.memory.estimate import Estimate, EstimateError, estimate, format_bytes
from minigrad.training.recipes import mnist_cnn, mnist_mlp

INPUT_BYTES = 28 * 28 * 4 + 8  # one float32 image and its int64 target


@pytest.fixture(scope="module")
def mlp_estimate() -> Estimate:
    return estimate(mnist_mlp(), (1, 28, 28), 64)


# ----------------------------------------------------------------------------- huge batch sizes


@pytest.mark.parametrize("batch", [10**16, 2**63 - 1, 2**63, 2**64 + 1, 10**30, 10**400])
def test_huge_batches_give_exact_figures(mlp_estimate, batch):
    huge = mlp_estimate.at(batch)
    assert huge.inputs == batch * INPUT_BYTES  # exact, no int64 wrap-around
    # at large batches the peak is one moment of the step, affine in the batch: read it off two batches int64 holds
    million, per_example = mlp_estimate.at(10**6).peak, (mlp_estimate.at(2 * 10**6).peak - mlp_estimate.at(10**6).peak)
    assert per_example % 10**6 == 0
    assert huge.peak == million + (batch - 10**6) * (per_example // 10**6)
    assert huge.peak > 0 and huge.reserved >= huge.peak
    assert not huge.fits("gtx1050") and not format_bytes(huge.peak).startswith("-")
    assert "does NOT fit" in huge.fit_report("gtx1050") and "peak of the step" in str(huge)
    assert huge.to_dict()["peak"] == huge.peak


def test_an_estimate_made_at_a_huge_batch_is_the_same(mlp_estimate):
    assert estimate(mnist_mlp(), (1, 28, 28), 10**16).peak == mlp_estimate.at(10**16).peak


@pytest.mark.parametrize("batch", [0, -1, 2.5, True, "64", None])
def test_batch_sizes_that_are_not_whole_positive_numbers_are_refused(mlp_estimate, batch):
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        mlp_estimate.at(batch)


# ----------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("text", ["1e17", "1e19", "2.5", "1e3"])
def test_the_cli_refuses_a_batch_not_in_digits_with_exit_2(capsys, text):
    with pytest.raises(SystemExit) as exit_info:
        main(["memory", "estimate", "mnist-cnn", "--batch", text, "--gpu", "gtx1050"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"expected a whole number >= 1, got {text!r} (write it in digits" in err and "Traceback" not in err


@pytest.mark.parametrize("batch", [10**17, 10**19])
def test_the_cli_prints_correct_figures_for_a_huge_batch(capsys, batch):
    code = main(["memory", "estimate", "mnist-cnn", "--batch", str(batch), "--gpu", "gtx1050"])
    out = capsys.readouterr().out
    expected = estimate(mnist_cnn(), (1, 28, 28), batch)
    assert code == 1 and "does NOT fit" in out and f"peak allocated {format_bytes(expected.peak)}" in out
    assert "-" not in format_bytes(expected.peak) and " -" not in out.split("peak allocated")[1][:20]
    assert f"effective batch {batch} with gradient accumulation" in out


def test_the_cli_never_shows_a_traceback_for_a_huge_batch():
    done = subprocess.run([sys.executable, "-m", "minigrad.cli", "memory", "estimate", "mnist-mlp", "--batch",
                           str(10**19)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr and "does NOT fit" in done.stdout


# ----------------------------------------------------------------------------- shapes, losses, outputs


def test_an_int_input_shape_is_one_axis():
    assert estimate(nn.Linear(784, 10), 784, 32).peak == estimate(nn.Linear(784, 10), (784,), 32).peak


class ReturnsATuple(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        h = self.linear(x)
        return h, h.sum()


HOSTILE = {
    "a float size": (dict(model=nn.Linear(784, 10), input_shape=(784.7,)), ValueError,
                     r"input_shape must be one example's shape .*784\.7 is a float: give every size as an int"),
    "a float that looks whole": (dict(model=nn.Linear(784, 10), input_shape=(784.0,)), ValueError,
                                 "input_shape must be one example's shape"),
    "a string": (dict(model=nn.Linear(784, 10), input_shape="784"), ValueError, "input_shape must be"),
    "an empty shape": (dict(model=nn.Linear(784, 10), input_shape=()), ValueError, "input_shape must be"),
    "a size of zero": (dict(model=nn.Linear(784, 10), input_shape=(0,)), ValueError, "whole numbers >= 1"),
    "None": (dict(model=nn.Linear(784, 10), input_shape=None), TypeError, "input_shape must be one example's shape"),
    "a loss returning a float": (dict(model=mnist_mlp(), input_shape=(1, 28, 28),
                                      loss_fn=lambda out, y: float(nn.functional.cross_entropy(out, y).item())),
                                 TypeError, r"loss_fn returned a float; it must return the loss as a minigrad Tensor"),
    "a loss without a graph": (dict(model=mnist_mlp(), input_shape=(1, 28, 28),
                                    loss_fn=lambda out, y: mt.tensor(1.0)),
                               TypeError, "loss_fn returned a Tensor with no graph"),
    "a loss that is not callable": (dict(model=mnist_mlp(), input_shape=(1, 28, 28), loss_fn="mse"), TypeError,
                                    "loss_fn must be None or a callable"),
    "a model returning a tuple": (dict(model=ReturnsATuple(), input_shape=(4,)), TypeError,
                                  r"the model returned a tuple, not a Tensor.*checkpoint=lambda model, x: model\(x\)\[0\]"),
    "an unknown mode": (dict(model=mnist_mlp(), input_shape=(1, 28, 28), mode="inference"), ValueError,
                        "mode must be 'train' or 'eval'"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_arguments_are_refused_with_a_message_that_says_what_to_do(case):
    kwargs, error, message = HOSTILE[case]
    with pytest.raises(error, match=message):
        estimate(batch_size=32, **kwargs)


def test_a_model_returning_a_tuple_is_measured_through_checkpoint_or_its_own_loss():
    picked = estimate(ReturnsATuple(), (4,), 32, checkpoint=lambda model, x: model(x)[0])
    own = estimate(ReturnsATuple(), (4,), 32, loss_fn=lambda out, y: out[1])
    assert picked.peak > 0 and own.peak > 0


def test_a_padding_module_raises_naming_the_category_and_the_batches():
    class Pads(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(8, 4)

        def forward(self, x):
            rows = -(-x.shape[0] // 64) * 64
            return self.linear(mt.cat([x, mt.zeros(rows - x.shape[0], 8)]))[: x.shape[0]]

    with pytest.raises(EstimateError, match=r"(?s)bytes of the step are not affine.*\(batches \(2, 3, 4, 67\)\)"):
        estimate(Pads(), (8,), 1000)
