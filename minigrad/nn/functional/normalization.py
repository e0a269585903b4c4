"""Batch normalisation, with a fused backward pass.

For each channel ``c``, over every other dimension (the batch, and the
pixels of an image)::

    mean_c, var_c = the batch's mean and (biased) variance of channel c
    xhat = (x - mean_c) / sqrt(var_c + eps)        zero mean, unit variance
    y    = weight_c * xhat + bias_c                a learned scale and shift

In training mode the statistics come from the batch, and the layer keeps
running averages of them (``running = (1 - momentum) * running + momentum *
batch``, the variance unbiased, as PyTorch does); in eval mode it normalises
with those running averages instead, so one example's output no longer
depends on the rest of its batch.

Backward. Built from elementary ops, the graph would hold half a dozen
intermediate tensors; working the chain rule out by hand gives one closed
form for the input gradient (exercise 6.4), from ``dxhat = dy * weight``,
``xhat``, ``1 / sqrt(var + eps)`` and two sums per channel. The sums are there
because every ``x`` also moved the mean and the variance of its channel, and
through them every other output of that channel; ``M``, how many values each
channel's statistics average over, counts the batch *and* the pixels. In eval
mode the statistics are constants and ``dx = dxhat / sqrt(running_var + eps)``.
"""

from __future__ import annotations

from minigrad.nn.functional._utils import check_float, check_same_dtype, check_tensor
from minigrad.tensor import Function, ShapeError, Tensor, array_module

__all__ = ["batch_norm", "BatchNormFunction"]


class BatchNormFunction(Function):
    op = "batch_norm"

    def forward(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
        xp = array_module(x)
        axes = (0,) + tuple(range(2, x.ndim))  # every dimension but the channels
        shape = (1, -1) + (1,) * (x.ndim - 2)  # a per-channel (C,) array, broadcastable against x
        if training:
            mean = x.mean(axis=axes)
            var = x.var(axis=axes)  # biased: divides by M, what normalises this batch
            if running_mean is not None:  # the buffers are updated in place, as PyTorch's kernel does
                m = x.size // x.shape[1]
                running_mean *= 1 - momentum
                running_mean += momentum * mean
                running_var *= 1 - momentum
                running_var += momentum * var * (m / (m - 1))  # the running variance is unbiased
        else:
            mean, var = running_mean, running_var
        inv_std = 1.0 / xp.sqrt(var + eps)
        xhat = (x - mean.reshape(shape)) * inv_std.reshape(shape)
        out = xhat
        if weight is not None:
            out = xhat * weight.reshape(shape)
        if bias is not None:
            out += bias.reshape(shape)
        ctx.training = training
        ctx.save_for_backward(xhat, inv_std, weight)
        return out

    def backward(ctx, grad):
        xhat, inv_std, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        axes = (0,) + tuple(range(2, grad.ndim))
        shape = (1, -1) + (1,) * (grad.ndim - 2)
        dw = (grad * xhat).sum(axis=axes) if need_w else None
        db = grad.sum(axis=axes) if need_b else None
        dx = None
        if need_x:
            dxhat = grad * weight.reshape(shape) if weight is not None else grad
            if ctx.training:
                ### BEGIN SOLUTION 6.4 | the closed-form input gradient of section 6: dxhat, corrected for the mean and for the variance by one per-channel sum each (over axes, kept broadcastable), and scaled by inv_std
                M = xhat.size // xhat.shape[1]
                sum_dxhat = dxhat.sum(axis=axes, keepdims=True)
                sum_dxhat_xhat = (dxhat * xhat).sum(axis=axes, keepdims=True)
                dx = (inv_std.reshape(shape) / M) * (M * dxhat - sum_dxhat - xhat * sum_dxhat_xhat)
                ### END SOLUTION
            else:
                dx = dxhat * inv_std.reshape(shape)
        return dx, dw, db, None, None, None, None, None


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
    *,
    _who: str = "batch_norm",
) -> Tensor:
    """Normalise each channel (dimension 1) of ``input`` (N, C, ...); see the module docstring.

    As ``torch.nn.functional.batch_norm``: with ``training=True`` the batch's
    statistics are used and ``running_mean``/``running_var`` (if given) are
    updated in place; with ``training=False`` the running statistics are used.
    """
    op = _who
    check_tensor(input, "input", op)
    check_float(input, "input", op)
    if input.ndim < 2:
        raise ShapeError(f"{op}: expected input (N, C) or (N, C, ...), got shape {tuple(input.shape)}")
    C = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None:
            check_tensor(t, name, op)
            if tuple(t.shape) != (C,):
                raise ShapeError(
                    f"{op}: input {tuple(input.shape)} has {C} channels in dimension 1 but {name} has shape "
                    f"{tuple(t.shape)}; build the layer with num_features={C}, or check which dimension holds the channels"
                )
    check_same_dtype(op, input=input, weight=weight, bias=bias)
    if (running_mean is None) != (running_var is None):
        raise ValueError(f"{op}: pass both running_mean and running_var, or neither")
    if not training and running_mean is None:
        raise ValueError(f"{op}: training=False needs running_mean and running_var (or use training=True)")
    if training and input.numel() // max(C, 1) <= 1:
        raise ValueError(
            f"{op}: expected more than 1 value per channel when training, got input of shape {tuple(input.shape)}; "
            f"use a batch of more than one example, or call model.eval() for single examples"
        )
    return BatchNormFunction.apply(input, weight, bias, running_mean, running_var, bool(training), float(momentum), float(eps))
