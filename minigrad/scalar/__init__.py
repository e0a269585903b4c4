"""Stage 1 (chapters 01-02): a scalar autograd engine and neural nets made of scalars.

Reading order
-------------
The files that carry the chapters' ideas, in the order to read them (469 lines in all):

1. ``engine.py`` (208 lines): ``Value``, the local derivative each op records,
   the topological order and ``backward()`` (chapter 01).
2. ``gradcheck.py`` (69 lines): central differences, to check ``backward()`` (chapter 01).
3. ``nn.py`` (192 lines): ``Neuron``, ``Layer``, ``MLP``, the hinge loss, the SGD step
   and the training loop (chapter 02).

Extensions (not on the reading path)
------------------------------------
- ``fused.py`` (44 lines): ``vsum`` and ``dot``, a sum and a weighted sum of many
  Values as one node each (same values and derivatives as chains of ``+`` and ``*``,
  smaller graphs); ``Neuron`` and ``hinge_loss`` use them.
- ``datasets.py`` (49 lines): the two-moons and two-spirals data of chapter 02, generated here.
"""

from minigrad.scalar.datasets import make_moons, make_spirals
from minigrad.scalar.engine import Value, topological_order
from minigrad.scalar.fused import dot, vsum
from minigrad.scalar.gradcheck import GradcheckResult, gradcheck, numerical_gradient
from minigrad.scalar.nn import MLP, Layer, Module, Neuron, hinge_loss, l2_penalty, mse_loss, sgd_step, train

__all__ = [
    "Value", "topological_order", "vsum", "dot",
    "numerical_gradient", "gradcheck", "GradcheckResult",
    "Module", "Neuron", "Layer", "MLP", "hinge_loss", "mse_loss", "l2_penalty", "sgd_step", "train",
    "make_moons", "make_spirals",
]
