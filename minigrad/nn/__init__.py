"""Stage 3 (chapters 05-06): neural-network layers on the tensor core, with PyTorch's names.

Chapter 05 (training on MNIST): :class:`Module`, :class:`Parameter`,
:class:`Sequential`, :class:`Linear`, activations, losses (a fused, stable
cross-entropy), :mod:`.init`, gradient clipping (:mod:`.utils`), and
``save``/``load`` for checkpoints.
Chapter 06 (convolutions): :class:`Conv2d` (im2col), :class:`MaxPool2d`,
:class:`AvgPool2d`, :class:`BatchNorm2d`, :class:`Dropout`.

Typical use, as in PyTorch::

    import minigrad.nn as nn
    import minigrad.nn.functional as F

    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 14 * 14, 10),
    )
    loss = F.cross_entropy(model(images), labels)
    loss.backward()

This stage imports only ``minigrad.tensor`` (and ``minigrad.scalar``).
"""

from minigrad.nn import functional, init, utils
from minigrad.nn.activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from minigrad.nn.conv import AvgPool2d, Conv2d, MaxPool2d
from minigrad.nn.dropout import Dropout
from minigrad.nn.linear import Flatten, Identity, Linear
from minigrad.nn.loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from minigrad.nn.module import IncompatibleKeys, Module, ModuleDict, ModuleList, Sequential
from minigrad.nn.normalization import BatchNorm1d, BatchNorm2d
from minigrad.nn.parameter import Parameter
from minigrad.nn.serialization import CheckpointError, load, save

__all__ = [
    # the building blocks
    "Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "IncompatibleKeys",
    # layers
    "Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Dropout",
    "Flatten", "Identity", "ReLU", "LeakyReLU", "GELU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
    # losses
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "BCEWithLogitsLoss",
    # submodules and checkpoints
    "functional", "init", "utils", "save", "load", "CheckpointError",
]
