"""Training loop pieces built on nn, optim and data: ``fit``, ``evaluate``, ``History``."""

from minigrad.training.fit import evaluate, fit, predict
from minigrad.training.history import EpochRecord, History
from minigrad.training.recipes import RECIPES, check_save_path, mnist_cnn, mnist_loaders, mnist_mlp, train_mnist

__all__ = ["fit", "evaluate", "predict", "History", "EpochRecord", "RECIPES", "mnist_mlp", "mnist_cnn", "mnist_loaders", "train_mnist",
           "check_save_path"]
