"""The training loop, the MNIST recipes and the `minigrad train` command."""

import subprocess
import sys

import numpy as np
import pytest

import minigrad
from minigrad import nn, optim
from minigrad.data import DataLoader, TensorDataset
from minigrad.tensor import manual_seed, tensor
from minigrad.training import evaluate, fit, mnist_mlp, train_mnist


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
