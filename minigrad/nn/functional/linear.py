"""``linear(x, W, b) = x @ W.T + b``: the affine map of a fully connected layer, as a function.

``W`` is stored (out_features, in_features), PyTorch's convention: row ``o``
holds the weights of output ``o``. ``x`` may have any number of leading
dimensions; only its last one is mixed. The backward pass is chapter 04's
matmul and broadcast-add rules, with every leading dimension of ``x`` treated
as more rows of the batch (exercise 5.5 writes both passes).

:func:`linear` computes it as **one** graph node, :class:`LinearFunction` (what
PyTorch's ``addmm`` does), rather than three (transpose, matmul, add): fewer
nodes to record and visit, and the bias is added in place instead of into a
new array. The result and the gradients are the same as the composite's.
"""

from __future__ import annotations

from minigrad.nn.functional._utils import check_tensor
from minigrad.tensor import Function, ShapeError, Tensor, get_dtype_policy
from minigrad.tensor.fast_float16 import product

__all__ = ["linear", "check_linear_input", "affine", "LinearFunction"]


class LinearFunction(Function):
    """``x @ W.T + b`` as one node; ``x`` is (..., in_features), ``W`` (out_features, in_features), ``b`` (out_features,) or None.

    The arguments are the raw arrays (chapter 04's Function protocol);
    ``product(a, b)`` is ``a @ b`` (in float16 it accumulates in float32).
    Backward returns one gradient per input, each of that input's shape
    (None where ``ctx.needs_input_grad`` says it is not needed); every
    leading dimension of ``x`` is a batch dimension.
    """

    op = "linear"

    def forward(ctx, x, weight, bias):
        ### BEGIN SOLUTION 5.5 | save what the backward needs, then the affine map of chapter 05, section 2 (the weight is stored (out, in), so mind its orientation); add the bias only when there is one
        ctx.save_for_backward(x, weight)
        out = product(x, weight.T)
        if bias is not None:
            out += bias
        return out
        ### END SOLUTION

    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        ### BEGIN SOLUTION 5.5 | the matmul and broadcast-add rules of chapter 04 with the batch dimensions flattened into rows: the input's gradient keeps x's shape, the weight's gradient has W's (out, in) layout, the bias's gradient sums over every row
        rows = grad.reshape(-1, grad.shape[-1])  # every leading dimension is a batch dimension
        dx = product(grad, weight) if need_x else None
        dw = product(rows.T, x.reshape(-1, x.shape[-1])) if need_w else None  # (out, in): W's layout
        db = rows.sum(axis=0) if need_b else None
        return dx, dw, db
        ### END SOLUTION


def affine(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``x @ weight.T + bias`` without argument checks: one :class:`LinearFunction` node.

    Operands of different dtypes take the composite path, whose ops promote
    them (unless a dtype policy is installed: it casts the node's operands).
    """
    dtype = weight._data.dtype
    if (x._data.dtype == dtype and (bias is None or bias._data.dtype == dtype)) or get_dtype_policy() is not None:
        return LinearFunction.apply(x, weight, bias)
    out = x @ weight.T
    return out if bias is None else out + bias


def check_linear_input(x: Tensor, in_features: int, who: str) -> None:
    """Raise a ShapeError naming the layer, the shapes and a fix when x's last dimension is not ``in_features``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: the input must be a Tensor, got {type(x).__name__}; wrap it with minigrad.tensor.tensor(...)")
    shape = x._data.shape
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
    if bias is not None:
        check_tensor(bias, "bias", "linear")
    return affine(input, weight, bias)
