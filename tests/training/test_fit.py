"""The training loop, the MNIST recipes and the `minigrad train` command."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad
from minigrad import nn, optim
from minigrad.data import DataLoader, TensorDataset
from minigrad.tensor import manual_seed, tensor
from minigrad.training import evaluate, fit, mnist_mlp, recipes, train_mnist


def _blobs(n=256, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centres = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.5]], dtype=np.float32)
    x = centres[y] + rng.normal(0, 0.5, (n, 2)).astype(np.float32)
    return TensorDataset(x, y)


def _model():
    manual_seed(0)
    return nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))


def test_fit_learns_and_records_history(capsys):
    model = _model()
    loader = DataLoader(_blobs(), batch_size=32, shuffle=True, seed=0)
    history = fit(model, optim.Adam(model.parameters(), lr=0.05), loader, nn.CrossEntropyLoss(), 3,
                  test_loader=DataLoader(_blobs(seed=1), batch_size=64), progress=False)
    assert len(history.epochs) == 3 and len(history.step_losses) == 3 * len(loader)
    assert history.last.test_accuracy > 0.95 and history.last.train_loss < history.epochs[0].train_loss
    assert "epoch  3: train loss" in capsys.readouterr().out


def test_accumulation_matches_the_full_batch():
    """Two micro-batches of 32 with accumulation give the update of one batch of 64."""
    data = _blobs(64)
    results = []
    for batch, steps in ((64, 1), (32, 2)):
        model = _model()
        opt = optim.SGD(model.parameters(), lr=0.1)
        fit(model, opt, DataLoader(data, batch_size=batch), nn.CrossEntropyLoss(), 1,
            accumulation_steps=steps, progress=False, print_epochs=False)
        results.append([p.detach().numpy().copy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_evaluate_restores_training_mode():
    model = _model()
    model.train()
    loss, accuracy = evaluate(model, DataLoader(_blobs(), batch_size=50), nn.CrossEntropyLoss())
    assert model.training and 0 <= accuracy <= 1 and loss > 0


def test_recipe_trains_on_the_shipped_subset_and_saves(tmp_path):
    path = tmp_path / "mlp.npz"
    model, history = train_mnist("mnist-mlp", epochs=1, subset=True, save_path=path, progress=False)
    assert history.last.test_accuracy > 0.75  # 40 steps on 5,000 images: learning, not converged
    state = minigrad.load(path)
    assert state["recipe"] == "mnist-mlp"
    fresh = mnist_mlp()
    fresh.load_state_dict(state["model"])
    x = tensor(np.random.default_rng(0).random((4, 1, 28, 28), dtype=np.float32))
    model.eval()
    fresh.eval()
    assert np.array_equal(model(x).detach().numpy(), fresh(x).detach().numpy())  # bitwise


def test_unknown_recipe():
    with pytest.raises(ValueError, match="choose one of mnist-mlp, mnist-cnn"):
        train_mnist("mnist-rnn")


def test_train_command_on_the_subset(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "minigrad.cli", "train", "mnist-cnn", "--epochs", "1", "--subset", "--no-progress",
         "--save", str(tmp_path / "cnn.npz")],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "final test accuracy:" in run.stdout and (tmp_path / "cnn.npz").exists()


def test_train_command_explains_missing_data(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "minigrad.cli", "train", "mnist-mlp", "--data", str(tmp_path), "--no-download"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 2 and "MNIST files not found" in run.stderr and str(tmp_path) in run.stderr
    assert "or run `minigrad train mnist-mlp --subset` to use the small copy shipped with minigrad" in run.stderr
    assert "MNIST(subset=True)" not in run.stderr and "(--no-download: nothing was downloaded)" in run.stderr


def _train_command(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "minigrad.cli", "train", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("option, value, message", [
    ("--epochs", "0", "argument --epochs: must be >= 1, got 0; leave the option out to use the recipe's value"),
    ("--epochs", "-1", "argument --epochs: must be >= 1, got -1"),
    ("--epochs", "2.5", "argument --epochs: expected a whole number >= 1, got '2.5'"),
    ("--batch-size", "0", "argument --batch-size: must be >= 1, got 0"),
    ("--lr", "0", "argument --lr: must be a finite number > 0 (e.g. 1e-3), got 0"),
    ("--lr", "-1e-3", "argument --lr: must be a finite number > 0"),
    ("--lr", "nan", "argument --lr: must be a finite number > 0"),
    ("--lr", "fast", "argument --lr: expected a number such as 1e-3, got 'fast'"),
    ("--seed", "-1", "argument --seed: must be >= 0, got -1"),
])
def test_train_command_refuses_bad_values_instead_of_using_the_defaults(capsys, monkeypatch, option, value, message):
    from minigrad import cli

    monkeypatch.setattr(recipes, "fit", lambda *a, **k: pytest.fail("trained despite a bad value"))
    with pytest.raises(SystemExit) as info:
        cli.main(["train", "mnist-mlp", "--subset", "--no-progress", f"{option}={value}"])
    assert info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("value", ["-1e-3", "-0.001", "-1E-3"])
def test_a_negative_lr_given_as_a_separate_word_gets_the_lr_message(capsys, monkeypatch, value):
    """``--lr -1e-3`` (not ``--lr=-1e-3``): argparse alone would answer "expected one argument"."""
    from minigrad import cli

    monkeypatch.setattr(recipes, "fit", lambda *a, **k: pytest.fail("trained despite a bad value"))
    with pytest.raises(SystemExit) as info:
        cli.main(["train", "mnist-mlp", "--subset", "--no-progress", "--lr", value])
    assert info.value.code == 2 and "argument --lr: must be a finite number > 0" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, message", [
    ({"epochs": 0}, "train_mnist: epochs=0 must be a whole number >= 1 (the recipe uses 5)"),
    ({"epochs": -1}, "train_mnist: epochs=-1 must be a whole number >= 1"),
    ({"epochs": 1.5}, "train_mnist: epochs=1.5 must be a whole number"),
    ({"batch_size": 0}, "train_mnist: batch_size=0 must be a whole number >= 1 (the recipe uses 128)"),
    ({"lr": 0}, "train_mnist: lr=0 must be a finite number > 0 (the recipe uses 0.001)"),
    ({"lr": float("nan")}, "train_mnist: lr=nan must be a finite number > 0"),
])
def test_train_mnist_checks_its_values_before_training(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        train_mnist("mnist-mlp", subset=True, progress=False, **kwargs)


def test_fit_refuses_a_negative_number_of_epochs():
    model = _model()
    with pytest.raises(ValueError, match=r"fit: epochs=-1 must be a whole number >= 0"):
        fit(model, optim.SGD(model.parameters(), lr=0.1), [], nn.CrossEntropyLoss(), -1)


def _unwritable_folder(tmp_path):
    if sys.platform.startswith("linux"):
        return Path("/proc")  # not writable, even for root
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


@pytest.mark.parametrize("where, message", [
    ("folder", "it is a folder; give a file name, e.g."),
    ("missing parent", "the folder {tmp}/nowhere does not exist; create it first or choose another path"),
    ("file as parent", "{tmp}/plain.txt is a file, not a folder"),
    ("unwritable", "no file can be written in"),
])
def test_train_checks_the_save_path_before_training(tmp_path, monkeypatch, where, message):
    (tmp_path / "plain.txt").write_text("x")
    path = {
        "folder": tmp_path,
        "missing parent": tmp_path / "nowhere" / "model.npz",
        "file as parent": tmp_path / "plain.txt" / "model.npz",
        "unwritable": _unwritable_folder(tmp_path) / "model.npz",
    }[where]
    trained = []
    monkeypatch.setattr(recipes, "fit", lambda *a, **k: trained.append(1))
    with pytest.raises(OSError) as info:
        train_mnist("mnist-mlp", epochs=1, subset=True, save_path=path, progress=False)
    assert f"cannot save to {path}: " + message.format(tmp=tmp_path) in str(info.value)
    assert not trained and sorted(p.name for p in tmp_path.iterdir()) in (["plain.txt"], ["locked", "plain.txt"])


def test_train_command_checks_the_save_path_before_training(tmp_path):
    run = _train_command("mnist-mlp", "--subset", "--no-progress", "--save", str(tmp_path / "nowhere" / "m.npz"))
    assert run.returncode == 2 and "minigrad train: cannot save to" in run.stderr and "does not exist" in run.stderr
    assert "epoch" not in run.stdout and list(tmp_path.iterdir()) == []
