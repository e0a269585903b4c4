"""``Linear`` (a fully connected layer), and the shape helpers ``Flatten`` and ``Identity``."""

from __future__ import annotations

from minigrad.nn import init
from minigrad.nn.functional.linear import affine, check_linear_input
from minigrad.nn.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor, empty

__all__ = ["Linear", "Flatten", "Identity"]


class Linear(Module):
    """``y = x @ W.T + b`` with ``W`` of shape (out_features, in_features), as ``torch.nn.Linear``.

    ``x`` is (..., in_features); every leading dimension is kept. Initialised
    like PyTorch: ``W`` with ``kaiming_uniform_(a=sqrt(5))``, i.e. uniform in
    +-1/sqrt(in_features), and ``b`` uniform in the same range.
    ``generator=`` (a numpy Generator or an int seed) is a minigrad addition;
    by default the weights come from minigrad.tensor's default generator.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None, generator=None):
        super().__init__()
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Linear: {name} must be a non-negative int, got {value!r}")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        """Draw fresh weights (PyTorch's default initialisation)."""
        init.default_layer_init_(self.weight, self.bias, generator)

    def forward(self, x: Tensor) -> Tensor:
        check_linear_input(x, self.in_features, f"Linear({self.in_features}, {self.out_features})")
        return affine(x, self.weight, self.bias)  # x @ W.T + b as one graph node, as PyTorch's Linear does

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Flatten(Module):
    """Merge dimensions ``start_dim..end_dim`` into one: (N, C, H, W) -> (N, C*H*W) with the defaults."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. to remove a layer); ignores any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x
