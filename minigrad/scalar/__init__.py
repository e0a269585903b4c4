"""Stage 1 (chapters 01-02): a scalar autograd engine and neural nets made of scalars."""

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
