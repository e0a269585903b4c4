"""Ready-made MNIST runs shared by the CLI, the benchmarks and the chapters.

Each recipe names a model, its optimizer and schedule, and the data pipeline;
``train_mnist`` runs one and returns the trained model with its history.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from pathlib import Path

from minigrad import nn, optim
from minigrad.data import MNIST, DataLoader, Normalize
from minigrad.files import temporary_name
from minigrad.nn.serialization import save
from minigrad.tensor import device as as_device, manual_seed
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


def mnist_loaders(batch_size: int, data=None, seed: int = 0, subset: bool = False, download: bool = True,
                  device=None):
    """Normalised train (shuffled) and test loaders, handing batches over on ``device`` (default: the CPU)."""
    transform = Normalize([MNIST_MEAN], [MNIST_STD])
    train = MNIST(root=data, train=True, download=download, subset=subset, transform=transform)
    test = MNIST(root=data, train=False, download=download, subset=subset, transform=transform)
    return (
        DataLoader(train, batch_size=batch_size, shuffle=True, seed=seed, device=device),
        DataLoader(test, batch_size=1000, device=device),
    )


@dataclass(frozen=True)
class RecipeSetup:
    """What a recipe trains with: the model, Adam, its cosine schedule (per step), the loaders, the loss."""

    model: nn.Module
    optimizer: optim.Optimizer
    scheduler: object
    train_loader: DataLoader
    test_loader: DataLoader
    loss_fn: nn.Module
    epochs: int
    batch_size: int
    lr: float


def build_recipe(name: str, epochs=None, batch_size=None, lr=None, seed: int = 0, data=None, subset: bool = False,
                 download: bool = True, device=None) -> RecipeSetup:
    """Recipe ``name``'s model, optimizer, schedule and loaders, seeded with ``seed`` (see :func:`train_mnist`)."""
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    epochs = recipe.epochs if epochs is None else _positive_int("epochs", epochs, recipe.epochs)
    batch_size = recipe.batch_size if batch_size is None else _positive_int("batch_size", batch_size, recipe.batch_size)
    lr = recipe.lr if lr is None else _positive_number("lr", lr, recipe.lr)
    device = None if device is None else as_device(device)  # an unusable device fails before any work
    manual_seed(seed)
    model = recipe.build()
    if device is not None:
        model.to(device)
    train_loader, test_loader = mnist_loaders(batch_size, data, seed, subset, download, device)
    optimizer = optim.Adam(model.parameters(), lr=lr)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(train_loader))
    return RecipeSetup(model, optimizer, scheduler, train_loader, test_loader, nn.CrossEntropyLoss(), epochs,
                       batch_size, lr)


def train_mnist(name: str, epochs=None, batch_size=None, lr=None, seed: int = 0, data=None,
                save_path=None, subset: bool = False, progress: bool = True, download: bool = True, device=None):
    """Train recipe ``name`` with Adam and a cosine schedule; returns ``(model, history)``.

    ``device`` (``"cuda"`` once ``minigrad.gpu`` is imported): where the model
    and the batches live; default the CPU.
    ``epochs``, ``batch_size`` and ``lr`` default to the recipe's (``None``);
    a given value must be positive. ``save_path`` is checked before any
    training (a folder, a missing folder or one without write permission is
    an error up front), so that a long run never ends unable to save.
    """
    if save_path is not None:
        check_save_path(save_path)
    setup = build_recipe(name, epochs, batch_size, lr, seed, data, subset, download, device)
    model, optimizer = setup.model, setup.optimizer
    history = fit(model, optimizer, setup.train_loader, setup.loss_fn, setup.epochs, test_loader=setup.test_loader,
                  scheduler=setup.scheduler, scheduler_per_step=True, progress=progress)
    if save_path is not None:
        save({"recipe": name, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
              "test_accuracy": history.last.test_accuracy}, Path(save_path))
    return model, history


def _positive_int(name: str, value, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"train_mnist: {name}={value!r} must be a whole number >= 1 (the recipe uses {default})")
    return int(value)


def _positive_number(name: str, value, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0 < value < math.inf):
        raise ValueError(f"train_mnist: {name}={value!r} must be a finite number > 0 (the recipe uses {default:g})")
    return float(value)


def check_save_path(path) -> Path:
    """Raise a clear ``OSError`` now, not after training, if a checkpoint cannot be written to ``path``.

    ``path`` must not be a folder, its folder must exist, and a file must be
    creatable there (tried with a temporary file, removed at once).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot save to {path}: it is a folder; give a file name, e.g. {path / 'model.npz'}")
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"cannot save to {path}: {folder} is a file, not a folder; choose another path")
    if not folder.is_dir():
        raise FileNotFoundError(
            f"cannot save to {path}: the folder {folder} does not exist; create it first or choose another path"
        )
    probe = temporary_name(path)
    try:
        with open(probe, "xb"):
            pass
    except OSError as err:
        raise PermissionError(
            f"cannot save to {path}: no file can be written in {folder} ({err.strerror or err}); choose a "
            f"folder you can write to"
        ) from None
    probe.unlink()
    return path
