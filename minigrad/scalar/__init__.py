"""Stage 1 (chapters 01-02): a scalar autograd engine and neural nets made of scalars.

Reading order
-------------
The files that carry the chapters' ideas, in the order to read them (493 lines in all):

1. ``engine.py`` (266 lines): ``Value``, the local derivative each op records,
   the topological order and ``backward()`` (chapter 01).
2. ``gradcheck.py`` (69 lines): central differences, to check ``backward()`` (chapter 01).
3. ``nn.py`` (158 lines): ``Neuron``, ``Layer``, ``MLP``, the losses and the SGD step (chapter 02).

Extensions (not on the reading path)
------------------------------------
- ``datasets.py`` (49 lines): the two-moons and two-spirals data of chapter 02, generated here.
"""

from minigrad.scalar.datasets import make_moons, make_spirals
from minigrad.scalar.engine import Value, dot, topological_order, vsum
from minigrad.scalar.gradcheck import GradcheckResult, gradcheck, numerical_gradient
from minigrad.scalar.nn import MLP, Layer, Module, Neuron, hinge_loss, l2_penalty, mse_loss, sgd_step

__all__ = [
    "Value", "topological_order", "vsum", "dot",
    "numerical_gradient", "gradcheck", "GradcheckResult",
    "Module", "Neuron", "Layer", "MLP", "hinge_loss", "mse_loss", "l2_penalty", "sgd_step",
    "make_moons", "make_spirals",
]
