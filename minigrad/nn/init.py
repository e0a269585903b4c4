"""Weight initialisation (``torch.nn.init``): fill a tensor in place with well-scaled random numbers.

Why the scale matters: a layer's output ``y = W x`` sums ``fan_in`` products;
if every weight has variance ``v``, ``y``'s variance is about ``fan_in * v``
times ``x``'s. Choose ``v = 1 / fan_in`` and signals keep their size through
many layers, instead of exploding or vanishing. The rules differ only in the
constant:

- Xavier/Glorot: ``v = gain**2 * 2 / (fan_in + fan_out)`` (balances forward and backward);
- Kaiming/He: ``v = gain**2 / fan`` with ``gain = sqrt(2)`` for ReLU, which
  zeroes half its inputs and so halves the variance.

A uniform distribution on ``[-b, b]`` has variance ``b**2 / 3``, hence the
``sqrt(3)`` in the ``*_uniform_`` versions. ``fan_in`` of a conv weight
``(O, C, kh, kw)`` is ``C*kh*kw``: what one output sums over.

Randomness: every function takes ``generator=`` (a ``numpy.random.Generator``
or an int seed); by default it draws from minigrad.tensor's default
generator, so ``minigrad.tensor.manual_seed(0)`` makes model construction
reproducible. All functions modify the tensor in place (the trailing ``_``),
without recording a graph, and return it.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.tensor import Tensor, default_generator, from_numpy, no_grad

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "default_layer_init_",
]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for an activation: 1 (linear, conv, sigmoid), 5/3 (tanh), sqrt(2) (relu), ..."""
    linear_like = ("linear", "identity", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid")
    if nonlinearity in linear_like:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _generator(generator) -> np.random.Generator:
    if generator is None:
        return default_generator()
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    raise TypeError(f"generator must be a numpy.random.Generator or an int seed, got {type(generator).__name__}")


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Write ``values`` into ``tensor`` in place (any device), outside the graph."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"init: expected a Tensor (e.g. layer.weight), got {type(tensor).__name__}")
    with no_grad():
        tensor.copy_(from_numpy(np.ascontiguousarray(values, dtype=tensor.dtype)))
    return tensor


def _fans(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): dimension 1 (inputs) and 0 (outputs), times the receptive field of conv kernels."""
    if tensor.ndim < 2:
        raise ValueError(
            f"init: fan in and fan out cannot be computed for a tensor with fewer than 2 dimensions "
            f"(shape {tuple(tensor.shape)}); use uniform_/normal_/zeros_ for biases"
        )
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of U(a, b)."""
    return _fill(tensor, _generator(generator).uniform(a, b, size=tuple(tensor.shape)))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of N(mean, std**2)."""
    return _fill(tensor, _generator(generator).normal(mean, std, size=tuple(tensor.shape)))


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _fill(tensor, np.full(tuple(tensor.shape), val))


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015); ``a`` is the leaky_relu slope.

    ``nn.Linear`` and ``nn.Conv2d`` use ``a=sqrt(5)``, which makes b = 1/sqrt(fan_in) (PyTorch's default).
    """
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """N(0, std**2) with std = gain / sqrt(fan)."""
    gain = calculate_gain(nonlinearity, a)
    return normal_(tensor, 0.0, gain / math.sqrt(_fan(tensor, mode)), generator)


def default_layer_init_(weight: Tensor, bias: Tensor | None, generator=None) -> None:
    """PyTorch's default for Linear and Conv layers: kaiming_uniform_(a=sqrt(5)) weights
    (U(+-1/sqrt(fan_in))) and a bias drawn from U(+-1/sqrt(fan_in)) (0 when fan_in is 0)."""
    kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
    if bias is not None:
        fan_in = _fans(weight)[0]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        uniform_(bias, -bound, bound, generator)
