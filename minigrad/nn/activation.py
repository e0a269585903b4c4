"""Activation layers: ``ReLU``, ``LeakyReLU``, ``GELU``, ``Sigmoid``, ``Tanh``, ``Softmax``, ``LogSoftmax``.

They hold no parameters; each calls its function in ``minigrad.nn.functional``.
``inplace=True`` is accepted for PyTorch compatibility but minigrad always
returns a new tensor.
"""

from __future__ import annotations

from minigrad.nn import functional as F
from minigrad.nn.module import Module
from minigrad.tensor import Tensor

__all__ = ["ReLU", "LeakyReLU", "GELU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax"]


class ReLU(Module):
    """max(x, 0)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x for x > 0, negative_slope * x otherwise."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x), Phi the standard normal CDF (``approximate="tanh"``: the tanh approximation)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Softmax(Module):
    """exp(x) / sum(exp(x)) along ``dim``."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log(softmax(x)) along ``dim``, computed stably."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)
