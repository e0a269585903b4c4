"""Training loop pieces built on nn, optim and data: ``fit``, ``evaluate``, ``History``; and the tools
that tell what went wrong in a run (chapter 11): ``LayerMonitor`` (per-layer gradient norms and activation
statistics, from module hooks), ``count_dead_units`` (dead ReLUs) and ``lr_range_test`` (a learning rate
from the loss's response to a growing one)."""

from minigrad.training.dead_units import DeadUnits, count_dead_units
from minigrad.training.fit import evaluate, fit, predict
from minigrad.training.history import EpochRecord, History
from minigrad.training.layer_monitor import ActivationStats, LayerMonitor, activation_stats, gradient_norm
from minigrad.training.lr_range import LRRangeResult, lr_range_test, suggest_lr
from minigrad.training.recipes import RECIPES, check_save_path, mnist_cnn, mnist_loaders, mnist_mlp, train_mnist

__all__ = ["fit", "evaluate", "predict", "History", "EpochRecord", "RECIPES", "mnist_mlp", "mnist_cnn", "mnist_loaders", "train_mnist",
           "check_save_path", "LayerMonitor", "ActivationStats", "activation_stats", "gradient_norm", "count_dead_units",
           "DeadUnits", "lr_range_test", "LRRangeResult", "suggest_lr"]
