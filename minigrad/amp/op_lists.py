"""Which ops autocast runs in which dtype: PyTorch's op lists, per device type, in minigrad's op names.

PyTorch's autocast documentation sorts ops into three lists per device:

- **lower precision** (float16/bfloat16): the matrix products and
  convolutions, which tensor cores run fast and whose sums accumulate in
  float32 anyway;
- **float32**: ops whose range or precision float16 cannot carry
  (``exp`` overflows past 11, ``log`` of a float16 number near 0, sums, norms,
  softmax, the losses);
- **promote**: ops with several inputs that run in the widest of their
  floating dtypes (``cat`` of a float16 and a float32 tensor is float32).

Every other op runs in its inputs' dtype. The CPU lists are shorter than
CUDA's: on the CPU, ``exp``, ``softmax`` and ``sum`` of bfloat16 stay bfloat16
(PyTorch's CPU kernels compute them in float32 internally, as minigrad's do);
only the losses go to float32.

The names are ``Function.op`` values (``cross_entropy`` is PyTorch's
``cross_entropy_loss``, ``vector_norm`` its ``norm``); :data:`TORCH_NAMES`
says which PyTorch entry each one stands for. ``div`` with a number on the
left is PyTorch's ``__rtruediv__`` (``2 / x``), listed as ``rdiv``.
Composite functions (``mse_loss`` is a subtraction, a product and a mean)
are not ops and cannot be listed: their parts follow the lists.
"""

from __future__ import annotations

__all__ = ["LOWER_PRECISION", "FLOAT32", "PROMOTE", "TORCH_NAMES", "category"]

_MATRIX_PRODUCTS = frozenset({"matmul", "linear", "conv2d"})

#: device type -> ops computed in autocast's dtype
LOWER_PRECISION = {"cpu": _MATRIX_PRODUCTS, "cuda": _MATRIX_PRODUCTS}

#: device type -> ops computed in float32
FLOAT32 = {
    "cpu": frozenset({"cross_entropy", "nll_loss", "binary_cross_entropy_with_logits"}),
    "cuda": frozenset({
        "exp", "log", "pow", "rdiv", "softmax", "log_softmax", "logsumexp", "sum", "vector_norm",
        "cross_entropy", "nll_loss", "binary_cross_entropy_with_logits",
    }),
}

#: device type -> ops computed in the widest floating dtype of their inputs
PROMOTE = {"cpu": frozenset({"cat", "stack"}), "cuda": frozenset({"cat", "stack"})}

#: minigrad op -> the entries of PyTorch's lists it corresponds to
TORCH_NAMES = {
    "matmul": ("matmul", "mm", "bmm", "__matmul__"),
    "linear": ("linear", "addmm"),
    "conv2d": ("conv2d",),
    "cross_entropy": ("cross_entropy_loss", "cross_entropy"),
    "nll_loss": ("nll_loss",),
    "binary_cross_entropy_with_logits": ("binary_cross_entropy_with_logits",),
    "exp": ("exp",), "log": ("log",), "pow": ("pow", "__pow__", "__rpow__"), "rdiv": ("__rdiv__", "__rtruediv__"),
    "softmax": ("softmax",), "log_softmax": ("log_softmax",), "logsumexp": ("logsumexp",), "sum": ("sum",),
    "vector_norm": ("norm", "linalg_vector_norm"),
    "cat": ("cat",), "stack": ("stack",),
}


def category(device_type: str, op: str, args: tuple) -> str | None:
    """``"lower"``, ``"float32"``, ``"promote"`` or None (inputs' dtype) for op ``op`` called with ``args``."""
    if op == "div" and args and isinstance(args[0], (int, float)):
        op = "rdiv"
    if op in LOWER_PRECISION.get(device_type, ()):
        return "lower"
    if op in FLOAT32.get(device_type, ()):
        return "float32"
    if op in PROMOTE.get(device_type, ()):
        return "promote"
    return None
