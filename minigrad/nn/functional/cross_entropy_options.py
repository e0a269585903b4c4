"""Cross-entropy with PyTorch's options ``ignore_index`` and ``label_smoothing`` (an extension).

:class:`~minigrad.nn.functional.loss.CrossEntropyFunction` is the fused,
stable loss of chapter 05. :func:`~minigrad.nn.functional.loss.cross_entropy`
sends a call here only when it uses an option:

- ``ignore_index``: rows whose target equals it contribute 0 and are not
  counted in the mean (padding in sequence models);
- ``label_smoothing`` ``eps``: the target distribution becomes
  ``(1 - eps) * one_hot + eps / C``, so the loss adds ``-eps * mean(logp)``
  per row and the gradient is ``softmax`` minus that distribution.

Without options the node here gives the same values and gradients as the
clear one (tested). :func:`reduce_rows` and :func:`row_weights` reduce
per-row losses that may have ignored rows; ``nll_loss`` uses them too.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor import Function, array_module

__all__ = ["CrossEntropyWithOptionsFunction", "reduce_rows", "row_weights"]


def reduce_rows(xp, loss, valid, reduction: str):
    """Reduce per-row losses (already 0 at ignored rows) the way ``reduction`` asks; ``valid`` None: no row ignored."""
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    if valid is None:
        return xp.asarray(total / loss.shape[0], dtype=loss.dtype)
    count = valid.sum()
    if xp is np and count == 0:  # every row ignored: 0/0 = nan, as in PyTorch (CuPy gives nan without a warning)
        return xp.asarray(np.nan, dtype=loss.dtype)
    return xp.asarray(total / count, dtype=loss.dtype)


def row_weights(grad, valid, reduction: str, rows: int):
    """d(reduced loss)/d(loss of each row), times the incoming gradient: 1/N for "mean", 0 on ignored rows.

    ``valid`` None (no row ignored) gives a scalar for "mean" and "sum".
    """
    if valid is None:
        return grad / rows if reduction == "mean" else grad
    if reduction == "none":
        return grad * valid
    if reduction == "mean":
        return valid * (grad / valid.sum())
    return valid * grad


class CrossEntropyWithOptionsFunction(Function):
    """Cross-entropy over (M, C) logits and (M,) targets with ``ignore_index`` (None: no row ignored) and smoothing."""

    op = "cross_entropy"

    def forward(ctx, logits, target, ignore_index, label_smoothing, reduction):
        xp = array_module(logits)
        rows = xp.arange(logits.shape[0])
        valid = None
        if ignore_index is not None:
            valid = target != ignore_index
            target = xp.where(valid, target, 0)  # ignored rows point at class 0; they are masked out below
        peak = logits.max(axis=1, keepdims=True)
        logp = logits - (peak + xp.log(xp.exp(logits - peak).sum(axis=1, keepdims=True)))  # log-sum-exp, shifted
        loss = -logp[rows, target]
        eps = label_smoothing
        if eps:  # the target distribution is (1 - eps) * one_hot + eps / C
            loss = (1 - eps) * loss - eps * logp.mean(axis=1)
        if valid is not None:
            loss = xp.where(valid, loss, 0)
        ctx.smoothing, ctx.reduction = eps, reduction
        ctx.save_for_backward(logp, target, valid)
        return reduce_rows(xp, loss, valid, reduction)

    def backward(ctx, grad):
        logp, target, valid = ctx.saved_tensors
        xp = array_module(logp)
        M, C = logp.shape
        rows = xp.arange(M)
        probabilities = xp.exp(logp)
        probabilities[rows, target] -= 1 - ctx.smoothing  # softmax - (1 - eps) * one_hot ...
        if ctx.smoothing:
            probabilities -= ctx.smoothing / C  # ... - eps / C
        weights = row_weights(grad, valid, ctx.reduction, M)  # 1/N for the mean; 0 on ignored rows
        probabilities *= weights[:, None] if weights.ndim else weights
        return probabilities, None, None, None, None
