"""Elementwise ops: arithmetic, activations, comparisons.

Binary ops broadcast their operands the NumPy way: a ``(128, 256)`` matrix
plus a ``(256,)`` bias adds the bias to every row. In backward, the gradient
arrives with the *output's* shape, ``(128, 256)``; the bias was read 128
times, so its gradient is the sum of those 128 rows. ``grad_rules.unbroadcast``
does exactly that for any pair of shapes.

Each op's backward multiplies the incoming gradient by the local derivative:
``d(a*b)/da = b``, ``d(exp a)/da = exp a`` (so Exp saves its *output*),
``d(relu a)/da = 1 if a > 0 else 0`` (0 at exactly 0, as in PyTorch).
Comparisons produce bool tensors and are not differentiable.
"""

from __future__ import annotations

import math
from numbers import Number

import numpy as np

from minigrad.tensor import grad_rules
from minigrad.tensor.dtypes import bool_, default_float, is_floating_point, result_type, tensors_result_type
from minigrad.tensor.errors import DTypeError, ShapeError, describe
from minigrad.tensor.function import Function
from minigrad.tensor.op_table import register
from minigrad.tensor.ops.convert import cast
from minigrad.tensor.strides import broadcast_shapes
from minigrad.tensor.tensor import Tensor, make_tensor

__all__ = [
    "add", "sub", "mul", "div", "pow", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
    "leaky_relu", "gelu", "abs", "clamp", "clip", "maximum", "minimum", "where",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
]


# --------------------------------------------------------------------------- operands

_PLAIN_NUMBERS = (int, float, bool)


def _as_operand(x, like: Tensor, op: str):
    """A Python number stays a number; arrays and lists become tensors on ``like``'s device."""
    if type(x) in _PLAIN_NUMBERS:
        return x
    if isinstance(x, (np.ndarray, list, tuple)):
        return Tensor(x, device=like.device)
    if isinstance(x, (Number, np.generic)) and not isinstance(x, complex):
        return x.item() if isinstance(x, np.generic) else (float(x) if not isinstance(x, int) else int(x))
    raise TypeError(
        f"{op}: unsupported operand type {type(x).__name__} with a tensor {describe(like)}; "
        f"use a Tensor, a Python number or a NumPy array"
    )


def _binary_operands(a, b, op: str):
    """Line the operands up: two tensors of one dtype (PyTorch's promotion, 0-d tensors ranking below the
    others), or a tensor and a number."""
    if type(a) in _PLAIN_NUMBERS and isinstance(b, Tensor):  # 2 * x
        dt = result_type(b._data.dtype, a)
        return a, (b if dt is b._data.dtype else cast(b, dt))
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            da, db = a._data.dtype, b._data.dtype
            if da is not db and da != db:
                dt = tensors_result_type(da, a._data.ndim, db, b._data.ndim)
                a, b = cast(a, dt), cast(b, dt)
            return a, b
        b = _as_operand(b, a, op)
        if isinstance(b, Tensor):
            return _binary_operands(a, b, op)
        dt = result_type(a._data.dtype, b)
        return (a if dt is a._data.dtype else cast(a, dt)), b
    if isinstance(b, Tensor):
        b, a = _binary_operands(b, a, op)
        return a, b
    raise TypeError(f"{op}: needs at least one tensor operand, got {type(a).__name__} and {type(b).__name__}")


def _shape_of(x):
    return getattr(x, "shape", None)


class _Broadcasting(Function):
    """Binary ops: name both shapes and the offending dimension when they do not broadcast."""

    def explain_error(ctx, exc, args, kwargs):
        shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)]
        if isinstance(exc, ValueError) and len(shapes) >= 2:
            try:
                broadcast_shapes(*shapes)
            except ValueError as why:
                return ShapeError(
                    f"{ctx.op}: {why}. Fix: make the sizes match, e.g. add a size-1 dimension with "
                    f".unsqueeze(dim) or reshape one operand"
                )
        return Function.explain_error(ctx, exc, args, kwargs)


# --------------------------------------------------------------------------- arithmetic


class Add(_Broadcasting):
    def forward(ctx, a, b):
        ctx.a_shape, ctx.b_shape = getattr(a, "shape", None), getattr(b, "shape", None)
        return a + b

    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return (
            grad_rules.unbroadcast(grad, ctx.a_shape) if need_a else None,
            grad_rules.unbroadcast(grad, ctx.b_shape) if need_b else None,
        )


class Sub(_Broadcasting):
    def forward(ctx, a, b):
        ctx.a_shape, ctx.b_shape = getattr(a, "shape", None), getattr(b, "shape", None)
        return a - b

    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return (
            grad_rules.unbroadcast(grad, ctx.a_shape) if need_a else None,
            grad_rules.unbroadcast(-grad, ctx.b_shape) if need_b else None,
        )


class Mul(_Broadcasting):
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (
            grad_rules.unbroadcast(grad * b, a.shape) if need_a else None,
            grad_rules.unbroadcast(grad * a, b.shape) if need_b else None,
        )


class Div(_Broadcasting):
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = grad / b
        return (
            grad_rules.unbroadcast(ga, a.shape) if need_a else None,
            grad_rules.unbroadcast(-ga * a / b, b.shape) if need_b else None,
        )


class Pow(_Broadcasting):
    """``a ** b``; either side may be a Python number. d/da = b a^(b-1), d/db = a^b log a."""

    def forward(ctx, a, b):
        out = a**b
        ctx.save_for_backward(a, b, out)
        return out

    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if need_a:
            ga = grad_rules.unbroadcast(grad * b * a ** (b - 1), a.shape)
        if need_b:
            gb = grad_rules.unbroadcast(grad * out * np.log(a), b.shape)
        return ga, gb


class Neg(Function):
    def forward(ctx, a):
        return -a

    def backward(ctx, grad):
        return -grad


def add(a, b) -> Tensor:
    if type(a) is Tensor and type(b) is Tensor and a._data.dtype is b._data.dtype:  # the common case, fast
        return Add.apply(a, b)
    return Add.apply(*_binary_operands(a, b, "add"))


def sub(a, b) -> Tensor:
    if type(a) is Tensor and type(b) is Tensor and a._data.dtype is b._data.dtype:  # the common case, fast
        return Sub.apply(a, b)
    return Sub.apply(*_binary_operands(a, b, "sub"))


def mul(a, b) -> Tensor:
    if type(a) is Tensor and type(b) is Tensor and a._data.dtype is b._data.dtype:  # the common case, fast
        return Mul.apply(a, b)
    return Mul.apply(*_binary_operands(a, b, "mul"))


def div(a, b) -> Tensor:
    """True division; integer operands give ``float32`` as in PyTorch."""
    a, b = _binary_operands(a, b, "div")
    if isinstance(a, Tensor) and not is_floating_point(a._data.dtype):
        a = cast(a, default_float)
        if isinstance(b, Tensor):
            b = cast(b, default_float)
    elif isinstance(b, Tensor) and not is_floating_point(b._data.dtype):
        b = cast(b, default_float)
    return Div.apply(a, b)


def pow(a, b) -> Tensor:
    return Pow.apply(*_binary_operands(a, b, "pow"))


def neg(a: Tensor) -> Tensor:
    if a._data.dtype is bool_:
        raise DTypeError("neg: negation of a bool tensor is not defined; use ~x (logical not)")
    return Neg.apply(a)


# --------------------------------------------------------------------------- unary functions


def _floating(x: Tensor) -> Tensor:
    return x if is_floating_point(x._data.dtype) else cast(x, default_float)


class Exp(Function):
    def forward(ctx, a):
        out = np.exp(a)
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class Log(Function):
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log(a)

    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / a


class Sqrt(Function):
    def forward(ctx, a):
        out = np.sqrt(a)
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (0.5 * grad) / out


class Tanh(Function):
    def forward(ctx, a):
        out = np.tanh(a)
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (1 - out * out)


class Sigmoid(Function):
    """1 / (1 + e^-a), computed as (1 + tanh(a/2)) / 2, which never overflows."""

    def forward(ctx, a):
        out = np.tanh(a * 0.5)
        out += 1
        out *= 0.5
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out * (1 - out)


class Relu(Function):
    def forward(ctx, a):
        out = np.maximum(a, 0)
        ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (out > 0)


class LeakyRelu(Function):
    def forward(ctx, a, negative_slope):
        ctx.slope = negative_slope
        ctx.save_for_backward(a)
        return np.where(a > 0, a, a * negative_slope)

    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return np.where(a > 0, grad, grad * ctx.slope), None


# erfc(z) for z >= 0 as t*exp(-z^2 + P(t)): Numerical Recipes' Chebyshev fit (about 1e-16,
# used for float64) and its short form erfcc (relative error < 1.2e-7, used for float32/16).
_ERFC_CHEBYSHEV = (
    -1.3026537197817094, 6.4196979235649026e-1, 1.9476473204185836e-2, -9.561514786808631e-3,
    -9.46595344482036e-4, 3.66839497852761e-4, 4.2523324806907e-5, -2.0278578112534e-5,
    -1.624290004647e-6, 1.303655835580e-6, 1.5626441722e-8, -8.5238095915e-8, 6.529054439e-9,
    5.059343495e-9, -9.91364156e-10, -2.27365122e-10, 9.6467911e-11, 2.394038e-12,
    -6.886027e-12, 8.94487e-13, 3.13092e-13, -1.12708e-13, 3.81e-16, 7.106e-15, -1.523e-15,
    -9.4e-17, 1.21e-16, -2.8e-17,
)
_ERFCC = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)


def erf(x):
    """The error function of an array, vectorised (NumPy has none); float64 to ~1e-16."""
    z = np.abs(x)
    if x.dtype == np.float64:
        t = 2.0 / (2.0 + z)
        ty = 4.0 * t - 2.0
        d = dd = 0.0
        for c in _ERFC_CHEBYSHEV[:0:-1]:
            d, dd = ty * d - dd + c, d
        erfc = t * np.exp(-z * z + 0.5 * (_ERFC_CHEBYSHEV[0] + ty * d) - dd)
    else:
        t = 1.0 / (1.0 + 0.5 * z)
        poly = _ERFCC[-1]
        for c in _ERFCC[-2::-1]:
            poly = poly * t + c
        erfc = t * np.exp(-z * z + poly)
    return np.copysign(1.0 - erfc, x).astype(x.dtype, copy=False)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class Gelu(Function):
    """x * Phi(x) (``approximate="none"``, via erf) or PyTorch's tanh approximation."""

    def forward(ctx, a, approximate):
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        if approximate == "tanh":
            return 0.5 * a * (1 + np.tanh(_SQRT_2_OVER_PI * (a + 0.044715 * a**3)))
        return 0.5 * a * (1 + erf(a * (1 / math.sqrt(2.0))))

    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            t = np.tanh(_SQRT_2_OVER_PI * (a + 0.044715 * a**3))
            local = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * a * a)
        else:
            cdf = 0.5 * (1 + erf(a * (1 / math.sqrt(2.0))))
            local = cdf + a * np.exp(-0.5 * a * a) * (1 / math.sqrt(2 * math.pi))
        return grad * local, None


class Abs(Function):
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.abs(a)

    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * np.sign(a)


class Clamp(Function):
    """Clip to [min, max]; the gradient passes where min <= a <= max (PyTorch's choice at the edges)."""

    def forward(ctx, a, low, high):
        ctx.save_for_backward(a)
        ctx.low, ctx.high = low, high
        if low is None:
            return np.minimum(a, high)
        if high is None:
            return np.maximum(a, low)
        return np.clip(a, low, high)

    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        inside = True
        if ctx.low is not None:
            inside = a >= ctx.low
        if ctx.high is not None:
            inside = inside & (a <= ctx.high)
        return grad * inside, None, None


class Maximum(_Broadcasting):
    """Elementwise max; at ties the gradient is split evenly, as in PyTorch."""

    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.maximum(a, b)

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _split_grad(ctx, grad, a > b, a == b, a, b)


class Minimum(_Broadcasting):
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.minimum(a, b)

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _split_grad(ctx, grad, a < b, a == b, a, b)


def _split_grad(ctx, grad, a_wins, tie, a, b):
    share = grad * a_wins
    if tie.any():
        share = share + (0.5 * grad) * tie
    need_a, need_b = ctx.needs_input_grad
    return (
        grad_rules.unbroadcast(share, _shape_of(a)) if need_a else None,
        grad_rules.unbroadcast(grad - share, _shape_of(b)) if need_b else None,
    )


class Where(_Broadcasting):
    def forward(ctx, condition, a, b):
        ctx.save_for_backward(condition)
        ctx.a_shape, ctx.b_shape = _shape_of(a), _shape_of(b)
        return np.where(condition, a, b)

    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        _, need_a, need_b = ctx.needs_input_grad
        zero = grad.dtype.type(0)
        return (
            None,
            grad_rules.unbroadcast(np.where(condition, grad, zero), ctx.a_shape) if need_a else None,
            grad_rules.unbroadcast(np.where(condition, zero, grad), ctx.b_shape) if need_b else None,
        )


def exp(x: Tensor) -> Tensor:
    return Exp.apply(_floating(x))


def log(x: Tensor) -> Tensor:
    return Log.apply(_floating(x))


def sqrt(x: Tensor) -> Tensor:
    return Sqrt.apply(_floating(x))


def tanh(x: Tensor) -> Tensor:
    return Tanh.apply(_floating(x))


def sigmoid(x: Tensor) -> Tensor:
    return Sigmoid.apply(_floating(x))


def relu(x: Tensor) -> Tensor:
    return Relu.apply(x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    return LeakyRelu.apply(_floating(x), float(negative_slope))


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(_floating(x), approximate)


def abs(x: Tensor) -> Tensor:  # noqa: A001 - the PyTorch name
    return Abs.apply(x)


def clamp(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """Limit values to [min, max] (either may be None)."""
    if min is None and max is None:
        raise ValueError("clamp: give at least one of min and max")
    for bound in (min, max):
        if bound is not None and type(bound) not in _PLAIN_NUMBERS:
            raise TypeError(f"clamp: min and max must be Python numbers, got {type(bound).__name__}")
    if not is_floating_point(x._data.dtype) and any(isinstance(v, float) for v in (min, max)):
        x = cast(x, default_float)
    return Clamp.apply(x, min, max)


clip = clamp


def maximum(a, b) -> Tensor:
    return Maximum.apply(*_binary_operands(a, b, "maximum"))


def minimum(a, b) -> Tensor:
    return Minimum.apply(*_binary_operands(a, b, "minimum"))


def where(condition, a, b) -> Tensor:
    """Elements of ``a`` where ``condition`` is true, else of ``b`` (all three broadcast)."""
    if not isinstance(condition, Tensor):
        like = a if isinstance(a, Tensor) else b
        condition = Tensor(condition, device=like.device if isinstance(like, Tensor) else None)
    if condition._data.dtype is not bool_:
        raise DTypeError(
            f"where: condition must be a bool tensor, got {describe(condition)}; build it with a "
            f"comparison such as x > 0"
        )
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = Tensor(a, device=condition.device)
    a, b = _binary_operands(a, b, "where")
    return Where.apply(condition, a, b)


# --------------------------------------------------------------------------- comparisons (no gradient)


def _compare(a, b, ufunc, op: str):
    if b is None or isinstance(b, str):
        return NotImplemented
    try:
        a, b = _binary_operands(a, b, op)
    except TypeError:
        return NotImplemented
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    device = a._device if ta else b._device
    if ta and tb and a._device is not b._device:
        raise ShapeError(f"{op}: tensors on different devices: {a.device} and {b.device}")
    da = a._data if ta else a
    db = b._data if tb else b
    try:
        out = ufunc(da, db)
    except ValueError as exc:
        try:
            broadcast_shapes(a.shape if ta else (), b.shape if tb else ())
        except ValueError as why:
            raise ShapeError(f"{op}: {why}") from None
        raise ShapeError(f"{op}: {exc}") from None
    return make_tensor(out, device)


def eq(a, b):
    return _compare(a, b, np.equal, "eq")


def ne(a, b):
    return _compare(a, b, np.not_equal, "ne")


def lt(a, b):
    return _compare(a, b, np.less, "lt")


def le(a, b):
    return _compare(a, b, np.less_equal, "le")


def gt(a, b):
    return _compare(a, b, np.greater, "gt")


def ge(a, b):
    return _compare(a, b, np.greater_equal, "ge")


def logical_not(a: Tensor) -> Tensor:
    if a._data.dtype is not bool_:
        raise DTypeError(f"~ (logical_not): needs a bool tensor, got {describe(a)}; compare first (x > 0)")
    return make_tensor(np.logical_not(a._data), a._device)


def logical_and(a, b):
    return _compare(a, b, np.logical_and, "logical_and")


def logical_or(a, b):
    return _compare(a, b, np.logical_or, "logical_or")


# what the Tensor's methods call (see op_table.py)
register(abs, add, clamp, div, eq, exp, ge, gelu, gt, le, leaky_relu, log, logical_and, logical_not,
         logical_or, lt, maximum, minimum, mul, ne, neg, pow, relu, sigmoid, sqrt, sub, tanh, where)
