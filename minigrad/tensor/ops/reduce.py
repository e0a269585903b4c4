"""Reductions: sum, mean, max/min, var/std, vector norms over some dimensions; argmax/argmin.

``dim`` may be ``None`` (reduce everything), an int or a tuple of ints;
``keepdim=True`` keeps each reduced dimension with size 1, which is handy for
broadcasting the result back (``x - x.mean(1, keepdim=True)``).

Backward of a reduction *spreads* the gradient back over the elements that
were reduced: every element of the input contributed once to a sum, so each
gets the output's gradient (d sum / d x_i = 1); for a mean each gets 1/n of
it; for a max only the winning element gets it (shared at ties). The sum and
mean rules are in :mod:`minigrad.tensor.grad_rules` (exercise 4.3).

On float16 data the ops that add terms up (sum, mean, var, std, vector_norm)
accumulate in float32 and round their result once, as PyTorch's do (see
:mod:`minigrad.tensor.bfloat16_compute`): a float16 norm of 300 is not
``inf`` because its squares passed 65,504 on the way.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from minigrad.tensor import grad_rules
from minigrad.tensor.backend import array_module
from minigrad.tensor.dtypes import default_float, int64, is_floating_point
from minigrad.tensor.errors import DTypeError, describe
from minigrad.tensor.function import Function
from minigrad.tensor.op_table import register
from minigrad.tensor.ops.convert import cast
from minigrad.tensor.tensor import ReduceResult, Tensor, make_tensor

__all__ = [
    "sum", "mean", "max", "min", "amax", "amin", "var", "std", "vector_norm", "argmax", "argmin", "all", "any",
    "normalize_dims",
]


def normalize_dims(ndim: int, dim, op: str):
    """``None`` or a sorted tuple of non-negative dimension indices, with clear errors."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if ndim == 0:
        for d in dims:
            if d not in (0, -1):
                raise IndexError(f"{op}: dimension {d} is out of range for a 0-d tensor (valid: 0 or -1)")
        return None
    out = []
    for d in dims:
        if not isinstance(d, (int, np.integer)):
            raise TypeError(f"{op}: dim must be an int or a tuple of ints, got {dim!r}")
        if not -ndim <= d < ndim:
            raise IndexError(
                f"{op}: dimension {d} is out of range for a tensor with {ndim} dimensions "
                f"(valid: {-ndim} to {ndim - 1})"
            )
        out.append(int(d) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dimension listed twice in dim={dim!r}")
    return tuple(sorted(out))


def _kept_shape(shape: tuple, dims) -> tuple:
    """``shape`` with each reduced dimension replaced by 1 (the keepdim=True result shape)."""
    if dims is None:
        return (1,) * len(shape)
    return tuple(1 if i in dims else size for i, size in enumerate(shape))


def _count(shape: tuple, dims) -> int:
    n = 1
    for i, size in enumerate(shape):
        if dims is None or i in dims:
            n *= size
    return n


class Sum(Function):
    def forward(ctx, a, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        return a.sum(axis=dims, keepdims=keepdim)

    def backward(ctx, grad):
        return grad_rules.sum_backward(grad, ctx.shape, ctx.dims, ctx.keepdim), None, None


class Mean(Function):
    def forward(ctx, a, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        return a.sum(axis=dims, keepdims=keepdim) / _count(a.shape, dims)

    def backward(ctx, grad):
        return grad_rules.mean_backward(grad, ctx.shape, ctx.dims, ctx.keepdim), None, None


class Amax(Function):
    """Largest value over ``dims``; the gradient goes to the maximal elements, split evenly at ties."""

    take = staticmethod(np.max)

    def forward(ctx, a, dims, keepdim):
        best = type(ctx).take(a, axis=dims, keepdims=True)
        ctx.save_for_backward(a, best)
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        return best if keepdim else best.reshape(_reduced_shape(a.shape, dims))

    def backward(ctx, grad):
        a, best = ctx.saved_tensors
        if not ctx.keepdim:
            grad = grad.reshape(_kept_shape(ctx.shape, ctx.dims))
        winners = a == best
        count = winners.sum(axis=ctx.dims, keepdims=True).astype(grad.dtype)
        return grad * winners / count, None, None


class Amin(Amax):
    take = staticmethod(np.min)


def _reduced_shape(shape: tuple, dims) -> tuple:
    if dims is None:
        return ()
    return tuple(size for i, size in enumerate(shape) if i not in dims)


class Var(Function):
    """Variance with Bessel's ``correction`` (1: divide by n - 1, PyTorch's default).

    The divisor is ``max(n - correction, 0)``, as in PyTorch: when ``correction
    >= n`` there are no degrees of freedom left, and the result is ``inf``
    (``nan`` where all the values are equal), with a warning; the gradient is
    then ``+-inf`` (``nan`` at the mean).
    """

    def forward(ctx, a, dims, keepdim, correction):
        return ctx.variance(a, dims, keepdim, correction).astype(a.dtype, copy=False)

    def variance(ctx, a, dims, keepdim, correction):
        """The variance, accumulated in float64 on the CPU (as PyTorch's CPU kernels: squares of 1e20 fit),
        in ``a``'s dtype elsewhere; saves the deviations from the mean in ``a``'s dtype."""
        wide = a.astype(np.float64) if isinstance(a, np.ndarray) else a
        centered = wide - wide.mean(axis=dims, keepdims=True)
        degrees_of_freedom = _count(a.shape, dims) - correction
        ctx.denominator = degrees_of_freedom if degrees_of_freedom > 0 else 0
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        ctx.save_for_backward(centered.astype(a.dtype, copy=False))
        squares = (centered * centered).sum(axis=dims, keepdims=keepdim)
        if ctx.denominator > 0:
            return squares / ctx.denominator
        with np.errstate(divide="ignore", invalid="ignore"):
            return squares / 0.0

    def backward(ctx, grad):
        (centered,) = ctx.saved_tensors
        if not ctx.keepdim:
            grad = grad.reshape(_kept_shape(ctx.shape, ctx.dims))
        if ctx.denominator > 0:
            return grad * centered * (2.0 / ctx.denominator), None, None, None
        with np.errstate(invalid="ignore"):
            return grad * centered * np.inf, None, None, None


class Std(Var):
    """``sqrt(var)`` in one node, so float16 data takes the square root before rounding (as PyTorch does)."""

    def forward(ctx, a, dims, keepdim, correction):
        out = (ctx.variance(a, dims, keepdim, correction) ** 0.5).astype(a.dtype, copy=False)
        ctx.save_for_backward(ctx._saved[0], out)
        return out

    def backward(ctx, grad):
        centered, out = ctx.saved_tensors
        if not ctx.keepdim:
            shape = _kept_shape(ctx.shape, ctx.dims)
            grad, out = grad.reshape(shape), out.reshape(shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            if ctx.denominator > 0:
                return grad * centered / (out * ctx.denominator), None, None, None
            return grad * centered * np.inf, None, None, None


class VectorNorm(Function):
    """``(sum |a|^p)^(1/p)`` over ``dims``; ``p = inf``: the largest ``|a|``.

    Gradients (PyTorch's): ``p = 2``: ``a / norm``; ``p = 1``: ``sign(a)``;
    other p: ``sign(a) |a|^(p-1) / norm^(p-1)``; where the norm is 0 the
    gradient is 0; ``p = inf``: ``sign(a)`` at the largest ``|a|``, split at ties.
    """

    def forward(ctx, a, p, dims, keepdim):
        ctx.p, ctx.shape, ctx.dims, ctx.keepdim = p, a.shape, dims, keepdim
        magnitude = abs(a)
        if p == math.inf:
            out = magnitude.max(axis=dims, keepdims=True)
        elif p == 2:
            out = (a * a).sum(axis=dims, keepdims=True) ** 0.5
        elif p == 1:
            out = magnitude.sum(axis=dims, keepdims=True)
        else:
            out = (magnitude**p).sum(axis=dims, keepdims=True) ** (1.0 / p)
        ctx.save_for_backward(a, out)
        return out if keepdim else out.reshape(_reduced_shape(a.shape, dims))

    def backward(ctx, grad):
        a, norm = ctx.saved_tensors
        if not ctx.keepdim:
            grad = grad.reshape(norm.shape)
        xp = array_module(a)
        p = ctx.p
        if p == math.inf:
            winners = abs(a) == norm
            count = winners.sum(axis=ctx.dims, keepdims=True).astype(grad.dtype)
            return grad * xp.sign(a) * winners / count, None, None, None
        if p == 1:
            return grad * xp.sign(a), None, None, None
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = xp.where(norm == 0, 0, grad / norm ** (p - 1)).astype(grad.dtype)
        local = a if p == 2 else xp.sign(a) * abs(a) ** (p - 1)
        return local * scale, None, None, None


def _float_input(x: Tensor, op: str) -> Tensor:
    return x if is_floating_point(x._data.dtype) else cast(x, default_float)


def sum(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001 - PyTorch's name
    """Sum over ``dim`` (all dimensions when None). bool and int tensors sum to int64."""
    dims = normalize_dims(x._data.ndim, dim, "sum")
    if x._data.dtype.kind == "b":
        x = cast(x, int64)
    return Sum.apply(x, dims, bool(keepdim))


def mean(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Average over ``dim``. Integer tensors are averaged as float32 (PyTorch refuses them)."""
    dims = normalize_dims(x._data.ndim, dim, "mean")
    return Mean.apply(_float_input(x, "mean"), dims, bool(keepdim))


def amax(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    _check_nonempty(x, "amax")
    return Amax.apply(x, normalize_dims(x._data.ndim, dim, "amax"), bool(keepdim))


def amin(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    _check_nonempty(x, "amin")
    return Amin.apply(x, normalize_dims(x._data.ndim, dim, "amin"), bool(keepdim))


def _check_nonempty(x: Tensor, op: str) -> None:
    if x._data.size == 0:
        raise ValueError(f"{op}: the tensor of shape {x.shape} is empty, so it has no largest/smallest element")


def max(x: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """``x.max()``: the largest element. ``x.max(dim)``: ``(values, indices)`` along one dimension."""
    if dim is None:
        return amax(x)
    if not isinstance(dim, (int, np.integer)):
        raise TypeError(f"max: dim must be one int (use amax for several dimensions), got {dim!r}")
    return ReduceResult(amax(x, dim, keepdim), argmax(x, dim, keepdim))


def min(x: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """``x.min()``: the smallest element. ``x.min(dim)``: ``(values, indices)`` along one dimension."""
    if dim is None:
        return amin(x)
    if not isinstance(dim, (int, np.integer)):
        raise TypeError(f"min: dim must be one int (use amin for several dimensions), got {dim!r}")
    return ReduceResult(amin(x, dim, keepdim), argmin(x, dim, keepdim))


def var(x: Tensor, dim=None, keepdim: bool = False, *, correction: float = 1) -> Tensor:
    """Variance over ``dim``: the sum of squared deviations from the mean, divided by ``n - correction``.

    ``correction=1`` (default) is the unbiased sample variance, 0 the
    population variance. ``correction >= n`` gives ``inf`` (``nan`` for
    constant values) and a warning, as in PyTorch.
    """
    return _variance(x, dim, keepdim, correction, "var")


def std(x: Tensor, dim=None, keepdim: bool = False, *, correction: float = 1) -> Tensor:
    """Standard deviation: the square root of :func:`var`, one graph node."""
    return _variance(x, dim, keepdim, correction, "std")


def vector_norm(x: Tensor, ord: float = 2, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A002 - PyTorch's name
    """``torch.linalg.vector_norm``: ``(sum |x|^ord)^(1/ord)`` over ``dim`` (all elements when None).

    ``ord`` is a number > 0 or ``inf`` (the largest ``|x|``). Floating point
    tensors only, as in PyTorch; float16 accumulates in float32.
    """
    if not is_floating_point(x._data.dtype):
        raise DTypeError(
            f"vector_norm: expected a floating point tensor, got {describe(x)}; convert with .float()"
        )
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real) or not ord > 0:
        raise ValueError(
            f"vector_norm: ord must be a number > 0 or inf (2: Euclidean, 1: sum of |x|, inf: largest |x|), "
            f"got {ord!r}"
        )
    dims = normalize_dims(x._data.ndim, dim, "vector_norm")
    if ord == math.inf and x._data.size == 0:
        raise ValueError(f"vector_norm: ord=inf of the empty tensor of shape {x.shape} is not defined")
    return VectorNorm.apply(x, float(ord), dims, bool(keepdim))


def _variance(x: Tensor, dim, keepdim, correction, op: str) -> Tensor:
    if isinstance(correction, bool) or not isinstance(correction, numbers.Real):
        raise TypeError(f"{op}: correction must be a number (1: divide by n - 1, 0: by n), got {correction!r}")
    dims = normalize_dims(x._data.ndim, dim, op)
    n = _count(x.shape, dims)
    if n - correction <= 0:
        warnings.warn(
            f"{op}: correction={correction!r} leaves no degrees of freedom for {n} element(s) per result "
            f"(input shape {tuple(x.shape)}, dim={dim!r}): the divisor n - correction is <= 0, so the result is "
            f"inf (nan where the values are all equal), as in PyTorch. Use correction=0 or reduce over more elements",
            UserWarning,
            stacklevel=3,
        )
    node = Std if op == "std" else Var
    return node.apply(_float_input(x, op), dims, bool(keepdim), correction)


def _arg(x: Tensor, dim, keepdim: bool, op: str, fn) -> Tensor:
    _check_nonempty(x, op)
    dims = normalize_dims(x._data.ndim, dim, op)
    if dims is not None and len(dims) != 1:
        raise TypeError(f"{op}: dim must be a single int, got {dim!r}")
    axis = None if dims is None else dims[0]
    out = fn(x._data, axis=axis, keepdims=bool(keepdim) and axis is not None)
    return make_tensor(array_module(out).asarray(out, dtype=int64), x._device)


def argmax(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the largest element (of the flattened tensor when dim is None); not differentiable."""
    return _arg(x, dim, keepdim, "argmax", np.argmax)


def argmin(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return _arg(x, dim, keepdim, "argmin", np.argmin)


def all(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    dims = normalize_dims(x._data.ndim, dim, "all")
    return make_tensor(np.all(x._data, axis=dims, keepdims=bool(keepdim)), x._device)


def any(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    dims = normalize_dims(x._data.ndim, dim, "any")
    return make_tensor(np.any(x._data, axis=dims, keepdims=bool(keepdim)), x._device)


# what the Tensor's methods call (see op_table.py)
register(all, amax, amin, any, argmax, argmin, max, mean, min, std, sum, var, vector_norm)
