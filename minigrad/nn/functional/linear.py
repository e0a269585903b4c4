"""``linear(x, W, b) = x @ W.T + b``: the affine map of a fully connected layer, as a function.

``W`` is stored (out_features, in_features), PyTorch's convention: row ``o``
holds the weights of output ``o``. ``x`` may have any number of leading
dimensions; only its last one is mixed. The backward pass is the matmul's and
the broadcast add's (chapter 04): ``dx = dy @ W``, ``dW = dy.T @ x``,
``db = dy`` summed over the rows.
"""

from __future__ import annotations

from minigrad.nn.functional._utils import check_tensor
from minigrad.tensor import ShapeError, Tensor

__all__ = ["linear", "check_linear_input"]


def check_linear_input(x: Tensor, in_features: int, who: str) -> None:
    """Raise a ShapeError naming the layer, the shapes and a fix when x's last dimension is not ``in_features``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: the input must be a Tensor, got {type(x).__name__}; wrap it with minigrad.tensor.tensor(...)")
    shape = tuple(x.shape)
    if shape and shape[-1] == in_features:
        return
    if not shape:
        raise ShapeError(f"{who}: input is a 0-d tensor; expected (..., {in_features})")
    text = f"{who}: input has {shape[-1]} features in its last dimension (shape {shape}); expected {in_features}"
    flat = 1
    for s in shape[1:]:
        flat *= s
    if len(shape) > 2 and flat == in_features:
        text += f" — flatten each example first with x.flatten(1) (or nn.Flatten()), giving ({shape[0]}, {flat})"
    elif len(shape) == 2 and shape[0] == in_features:
        text += " — the input looks transposed; use x.T"
    raise ShapeError(text)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` with weight (out_features, in_features); the same computation as ``nn.Linear``."""
    check_tensor(input, "input", "linear")
    check_tensor(weight, "weight", "linear")
    if weight.ndim != 2:
        raise ShapeError(f"linear: weight must be (out_features, in_features), got shape {tuple(weight.shape)}")
    check_linear_input(input, weight.shape[1], f"linear (weight {tuple(weight.shape)})")
    out = input @ weight.T
    if bias is not None:
        out = out + bias
    return out
