"""Stage 3 (chapters 05-06): neural-network layers on the tensor core, with PyTorch's names.

Reading order
-------------
The files that carry the chapters' ideas, in the order to read them (2,188 lines in all):

Chapter 05 (training on MNIST):

1. ``parameter.py`` (64 lines): :class:`Parameter`, a leaf tensor a module learns.
2. ``module.py`` (588 lines): :class:`Module` — attributes registered in
   ``__setattr__``, the tree walk behind ``parameters()``, ``state_dict``
   (exercise 5.1), ``train``/``eval``, ``to`` — and :class:`Sequential`.
3. ``functional/linear.py`` (99 lines): ``x @ W.T + b`` as one node, forward
   and backward (exercise 5.5).
4. ``linear.py`` (72 lines): :class:`Linear` and its initial scale; ``Flatten``.
5. ``init.py`` (154 lines): why the initial scale is ``1 / fan_in``; Kaiming and Xavier.
6. ``functional/loss.py`` (283 lines): the fused, stable cross-entropy and its
   backward (exercise 5.2), its argument checks; NLL, MSE and BCE-with-logits follow.
7. ``utils.py`` (92 lines): gradient clipping.

Chapter 06 (convolutions):

8. ``functional/conv.py`` (238 lines): convolution as one matrix product —
   im2col forward, col2im backward, in the clear version the exercises use.
9. ``conv.py`` (146 lines): the :class:`Conv2d`, :class:`MaxPool2d` and :class:`AvgPool2d` layers.
10. ``functional/pooling.py`` (166 lines): max and average pooling over strided windows.
11. ``functional/normalization.py`` (130 lines): batch normalisation and its fused backward.
12. ``normalization.py`` (103 lines): :class:`BatchNorm2d`, running statistics, train vs eval.
13. ``functional/dropout.py`` (53 lines): dropout and its scale ``1 / (1 - p)``.

Extensions (not on the reading path)
------------------------------------
Layers with PyTorch's names and signatures over functions you have read:

- ``activation.py`` (90 lines): ``ReLU``, ``GELU``, ``Softmax``... as modules.
- ``functional/activation.py`` (58 lines): the activations with ``torch.nn.functional``'s
  signatures (the maths is in the tensor core; GELU's ``erf`` approximation there).
- ``loss.py`` (79 lines): the loss functions as modules (``CrossEntropyLoss``...).
- ``containers.py`` (103 lines): :class:`ModuleList` and :class:`ModuleDict`, modules
  that register a list or dict of modules.
- ``functional/cross_entropy_options.py`` (91 lines): cross-entropy with PyTorch's
  ``ignore_index`` and ``label_smoothing`` (tested equal to the clear version without them).
- ``dropout.py`` (36 lines): :class:`Dropout` as a module.

PyTorch's module hooks, as features (forward pre/post, full backward, global ones, registration):

- ``module_hooks.py`` (264 lines): the hooks, their order, handles, and the identity nodes of backward hooks.
- ``modules/module.py`` (12 lines) and ``modules/__init__.py`` (5 lines): PyTorch's import path
  ``nn.modules.module.register_module_forward_hook`` and its siblings.

Support:

- ``serialization.py`` (236 lines): ``save``/``load``, checkpoints as ``.npz`` without pickle.
- ``functional/_utils.py`` (116 lines): argument checks, strided views, the
  channels-last memory format, and ``library_defines`` (when a speed path may run).

Speed paths, tested equal to the clear versions and run by the library
whenever the exercise functions are its own (a learner's always run as written):

- ``functional/conv_fast.py`` (225 lines): conv2d with im2col's taps-first
  memory order and channels-last buffers.
- ``functional/pooling_fast.py`` (86 lines): max pooling on contiguous copies of the taps.
- ``functional/__init__.py`` (34 lines): the index of ``minigrad.nn.functional``.

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

from minigrad.nn import functional, init, modules, utils
from minigrad.nn.activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from minigrad.nn.conv import AvgPool2d, Conv2d, MaxPool2d
from minigrad.nn.dropout import Dropout
from minigrad.nn.linear import Flatten, Identity, Linear
from minigrad.nn.loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from minigrad.nn.containers import ModuleDict, ModuleList
from minigrad.nn.module import IncompatibleKeys, Module, Sequential
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
