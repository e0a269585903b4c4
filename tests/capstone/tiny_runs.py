"""Tiny deterministic training runs for the capstone's tests (and their subprocesses): synthetic data, a small MLP."""

from __future__ import annotations

import numpy as np

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.amp import GradScaler
from minigrad.capstone import TrainConfig
from minigrad.capstone.training_run import TrainingRun
from minigrad.data import DataLoader, TensorDataset

EXAMPLES, FEATURES, CLASSES = 48, 12, 4


def dataset(examples: int = EXAMPLES, seed: int = 1) -> TensorDataset:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((examples, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, examples)
    return TensorDataset(mt.tensor(x), mt.tensor(y))


def model(hidden: int = 32, dropout: float = 0.25) -> nn.Sequential:
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, CLASSES))


def make_run(config: TrainConfig | None = None, *, hidden: int = 32, examples: int = EXAMPLES, scheduler: bool = True,
             scaler_kwargs: dict | None = None, seed: int = 0) -> TrainingRun:
    """A fresh run, built exactly the same way every time (as a script that starts over would build it)."""
    config = config or TrainConfig(batch_size=8)
    mt.manual_seed(seed)
    net = model(hidden)
    optimizer = optim.Adam(net.parameters(), lr=1e-2) if config.optimizer == "adam" else optim.SGD(
        net.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(dataset(examples), batch_size=config.batch_size, shuffle=True, seed=seed + 7, prefetch=0)
    schedule = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=50) if scheduler else None
    scaler = GradScaler("cpu", **scaler_kwargs) if scaler_kwargs is not None else None
    return TrainingRun(net, optimizer, loader, config, nn.CrossEntropyLoss(), scheduler=schedule, scaler=scaler)


def parameters(run) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in run.model.parameters()]


def optimizer_moments(run) -> list[np.ndarray]:
    return [v.numpy().copy() for state in run.optimizer.state.values() for v in state.values()
            if isinstance(v, mt.Tensor)]
