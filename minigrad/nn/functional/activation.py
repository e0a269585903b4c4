"""Activations and softmax with ``torch.nn.functional``'s signatures.

The computations (and their backward passes) live in the tensor core
(``minigrad.tensor``, chapter 04); these functions only add the PyTorch
argument names. ``inplace=True`` is accepted so PyTorch code runs unchanged,
but minigrad always returns a new tensor (in-place activations would save
memory but complicate autograd's version checks; see chapter 08).
"""

from __future__ import annotations

import minigrad.tensor as mt
from minigrad.nn.functional._utils import check_tensor
from minigrad.tensor import Tensor

__all__ = ["relu", "leaky_relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax"]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    return mt.relu(check_tensor(input, "input", "relu"))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, negative_slope * x otherwise."""
    return mt.leaky_relu(check_tensor(input, "input", "leaky_relu"), negative_slope)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (Phi: the standard normal CDF); ``approximate="tanh"`` uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return mt.gelu(check_tensor(input, "input", "gelu"), approximate)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x)), computed without overflow."""
    return mt.sigmoid(check_tensor(input, "input", "sigmoid"))


def tanh(input: Tensor) -> Tensor:
    return mt.tanh(check_tensor(input, "input", "tanh"))


def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (required, as recent PyTorch versions insist)."""
    check_tensor(input, "input", "softmax")
    if dtype is not None:
        input = input.to(dtype)
    return mt.softmax(input, dim)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably."""
    check_tensor(input, "input", "log_softmax")
    if dtype is not None:
        input = input.to(dtype)
    return mt.log_softmax(input, dim)
