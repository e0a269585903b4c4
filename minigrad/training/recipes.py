"""Ready-made MNIST runs shared by the CLI, the benchmarks and the chapters.

Each recipe names a model, its optimizer and schedule, and the data pipeline;
``train_mnist`` runs one and returns the trained model with its history.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from minigrad import nn, optim
from minigrad.data import MNIST, DataLoader, Normalize
from minigrad.nn.serialization import save
from minigrad.tensor import manual_seed
from minigrad.training.fit import fit

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


def mnist_mlp() -> nn.Module:
    """784-256-128-10 with ReLU: the chapter-05 network."""
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 256), nn.ReLU(),
        nn.Linear(256, 128), nn.ReLU(),
        nn.Linear(128, 10),
    )


def mnist_cnn() -> nn.Module:
    """conv(1->16, 5x5)-pool-conv(16->32, 5x5)-pool-linear: the chapter-06 network."""
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2),   # 28 -> 24 -> 12
        nn.Conv2d(16, 32, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2),  # 12 -> 8 -> 4
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 10),
    )


@dataclass(frozen=True)
class Recipe:
    build: callable
    epochs: int
    batch_size: int
    lr: float


RECIPES = {
    "mnist-mlp": Recipe(mnist_mlp, epochs=5, batch_size=128, lr=1e-3),
    "mnist-cnn": Recipe(mnist_cnn, epochs=3, batch_size=64, lr=2e-3),
}


def mnist_loaders(batch_size: int, data=None, seed: int = 0, subset: bool = False, download: bool = True):
    """Normalised train (shuffled) and test loaders."""
    transform = Normalize([MNIST_MEAN], [MNIST_STD])
    train = MNIST(root=data, train=True, download=download, subset=subset, transform=transform)
    test = MNIST(root=data, train=False, download=download, subset=subset, transform=transform)
    return (
        DataLoader(train, batch_size=batch_size, shuffle=True, seed=seed),
        DataLoader(test, batch_size=1000),
    )


def train_mnist(name: str, epochs=None, batch_size=None, lr=None, seed: int = 0, data=None,
                save_path=None, subset: bool = False, progress: bool = True, download: bool = True):
    """Train recipe ``name`` with Adam and a cosine schedule; returns ``(model, history)``."""
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    epochs = epochs or recipe.epochs
    manual_seed(seed)
    model = recipe.build()
    train_loader, test_loader = mnist_loaders(batch_size or recipe.batch_size, data, seed, subset, download)
    optimizer = optim.Adam(model.parameters(), lr=lr or recipe.lr)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(train_loader))
    history = fit(model, optimizer, train_loader, nn.CrossEntropyLoss(), epochs,
                  test_loader=test_loader, scheduler=scheduler, scheduler_per_step=True, progress=progress)
    if save_path is not None:
        save({"recipe": name, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
              "test_accuracy": history.last.test_accuracy}, Path(save_path))
    return model, history
