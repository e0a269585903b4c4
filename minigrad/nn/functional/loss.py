"""Loss functions: cross-entropy (fused and stable), NLL, MSE, binary cross-entropy with logits.

**Cross-entropy** of logits ``z`` (one row of C class scores) and a target
class ``t`` is ``-log softmax(z)[t]``. Computed naively, ``exp(z)`` overflows
to ``inf`` as soon as a logit passes ~89 in float32. Subtracting the row's
maximum first changes nothing mathematically (it cancels between numerator
and denominator) but keeps every exponent <= 0::

    shifted = z - max(z)
    log softmax(z) = shifted - log(sum(exp(shifted)))

The gradient of the loss with respect to the logits is strikingly simple,
``softmax(z) - one_hot(t)``: push the predicted probabilities towards the
target distribution. Doing log-softmax and the loss in *one* node (a fused
op) gives exactly this, instead of a chain of exp/sum/log/index nodes that
each keep their own tensors.

``reduction`` is ``"mean"`` over the rows, ``"sum"``, or ``"none"`` for one
loss per row. PyTorch's options ``ignore_index`` (rows that do not count,
for padding) and ``label_smoothing`` live in :mod:`.cross_entropy_options`,
an extension: :func:`cross_entropy` hands a call that uses them to
``CrossEntropyWithOptionsFunction`` and keeps :class:`CrossEntropyFunction`,
the node below, the clear fused version. Class weights (``weight=``) and
probability targets are not implemented.

**Binary cross-entropy with logits** uses the same trick for one logit ``x``
and a target ``y`` in [0, 1]: ``max(x, 0) - x*y + log(1 + exp(-|x|))`` never
overflows; its gradient is ``sigmoid(x) - y``.
"""

from __future__ import annotations

from minigrad.nn.functional._utils import check_float, check_tensor
from minigrad.nn.functional.cross_entropy_options import CrossEntropyWithOptionsFunction, reduce_rows, row_weights
from minigrad.tensor import DTypeError, Function, ShapeError, Tensor, array_module, is_floating_point

__all__ = [
    "cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits",
    "CrossEntropyFunction", "NLLLossFunction", "BCEWithLogitsFunction",
]

REDUCTIONS = ("mean", "sum", "none")


class CrossEntropyFunction(Function):
    """Fused log-softmax + negative log-likelihood over (M, C) logits and (M,) class indices.

    Forward: the loss of each row, ``-log softmax(row)[target]``, computed
    without overflow for any logits, then reduced (``"mean"``, ``"sum"`` or
    ``"none"``). Backward: the gradient with respect to the logits, (M, C).
    """

    op = "cross_entropy"

    def forward(ctx, logits, target, reduction):
        xp = array_module(logits)
        rows = xp.arange(logits.shape[0])
        ### BEGIN SOLUTION 5.2 | the stable log-softmax of each row (chapter 05, section 3: shift before exponentiating), keeping it as logp for the backward, and each row's loss as the negative log-probability of its target class
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
        loss = -logp[rows, target]
        ### END SOLUTION
        ctx.reduction = reduction
        ctx.save_for_backward(logp, target)
        if reduction == "none":
            return loss
        total = loss.sum()
        return total if reduction == "sum" else xp.asarray(total / loss.shape[0], dtype=loss.dtype)

    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        xp = array_module(logp)
        rows = xp.arange(logp.shape[0])
        ### BEGIN SOLUTION 5.2 | d(row loss)/d(logits) as a new (M, C) array dlogits, computed from the saved logp alone (chapter 05, section 3: the gradient of the fused loss)
        dlogits = xp.exp(logp)
        dlogits[rows, target] -= 1
        ### END SOLUTION
        if ctx.reduction == "none":  # one loss per row: each row gets its own incoming gradient
            dlogits *= grad[:, None]
        else:
            dlogits *= grad / len(rows) if ctx.reduction == "mean" else grad
        return dlogits, None, None


class NLLLossFunction(Function):
    """``-logp[row, target]`` per row, for log-probabilities (M, C) and class indices (M,)."""

    op = "nll_loss"

    def forward(ctx, logp, target, ignore_index, reduction):
        xp = array_module(logp)
        valid = target != ignore_index
        target = xp.where(valid, target, 0)
        loss = xp.where(valid, -logp[xp.arange(logp.shape[0]), target], 0)
        ctx.reduction, ctx.shape = reduction, logp.shape
        ctx.save_for_backward(target, valid)
        return reduce_rows(xp, loss, valid, reduction)

    def backward(ctx, grad):
        target, valid = ctx.saved_tensors
        xp = array_module(target)
        dlogp = xp.zeros(ctx.shape, dtype=grad.dtype)
        dlogp[xp.arange(ctx.shape[0]), target] = -row_weights(grad, valid, ctx.reduction, ctx.shape[0])
        return dlogp, None, None, None


class BCEWithLogitsFunction(Function):
    op = "binary_cross_entropy_with_logits"

    def forward(ctx, x, y, reduction):
        xp = array_module(x)
        loss = xp.maximum(x, 0) - x * y + xp.log1p(xp.exp(-xp.abs(x)))  # no exp of a positive number
        ctx.reduction = reduction
        ctx.save_for_backward(x, y)
        if reduction == "none":
            return loss
        total = loss.sum()
        return xp.asarray(total / loss.size if reduction == "mean" else total, dtype=loss.dtype)

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        xp = array_module(x)
        if ctx.reduction == "mean":
            grad = grad / x.size
        sig = 0.5 * (1 + xp.tanh(0.5 * x))  # sigmoid(x) without overflow
        need_x, need_y = ctx.needs_input_grad[:2]
        return ((sig - y) * grad if need_x else None), (-x * grad if need_y else None), None


# ----------------------------------------------------------------------------- argument checks


def _check_reduction(reduction: str, op: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")


def _classes_last(input: Tensor, target: Tensor, op: str, what: str):
    """(N, C, d1, ...) scores and (N, d1, ...) targets -> (M, C) rows and (M,) targets, plus the target shape."""
    if isinstance(input, Tensor) and isinstance(target, Tensor):  # the common case, (N, C) and (N,), checked fast
        scores, classes = input._data, target._data
        if (scores.ndim == 2 and classes.ndim == 1 and scores.shape[0] == classes.shape[0]
                and is_floating_point(scores.dtype) and classes.dtype.kind in "iu"):
            return input, target, classes.shape, scores.shape[1]
    check_tensor(input, "input", op)
    check_tensor(target, "target", op)
    check_float(input, "input", op)
    if input.ndim == 0:
        raise ShapeError(f"{op}: input must have a class dimension, (N, C) or (C,), got a 0-d tensor")
    if is_floating_point(target.dtype) and tuple(target.shape) == tuple(input.shape):
        raise NotImplementedError(
            f"{op}: target has the input's shape {tuple(input.shape)} and is floating point, i.e. class "
            f"probabilities; minigrad implements class-index targets only. Pass target.argmax(1) "
            f"(and label_smoothing= for soft targets)"
        )
    if target.dtype.kind not in "iu":
        raise DTypeError(
            f"{op}: target must hold class indices as integers (int64), got {target.dtype}; convert with target.long()"
        )
    C = input.shape[1] if input.ndim > 1 else input.shape[0]
    expected = (input.shape[0],) + tuple(input.shape[2:]) if input.ndim > 1 else ()
    if tuple(target.shape) != expected:
        hint = ""
        if input.ndim == 2 and target.ndim == 2 and target.shape == input.shape:
            hint = " — target looks one-hot; pass the class indices target.argmax(1)"
        elif input.ndim == 2 and target.ndim == 2 and target.shape[1] == 1:
            hint = " — remove the extra dimension with target.squeeze(1)"
        elif input.ndim > 2 and target.ndim == 1:
            hint = f" — for (N, C) {what} flatten the input first with input.flatten(1)"
        raise ShapeError(
            f"{op}: input {tuple(input.shape)} ({what}, classes in dimension {1 if input.ndim > 1 else 0}) "
            f"needs target of shape {expected}, got {tuple(target.shape)}{hint}"
        )
    if input.ndim == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    elif input.ndim > 2:  # move the classes last and list every position as a row
        dims = (0,) + tuple(range(2, input.ndim)) + (1,)
        input, target = input.permute(*dims).reshape(-1, C), target.reshape(-1)
    return input, target, expected, C


def _check_targets(target: Tensor, C: int, ignore_index: int, op: str) -> bool:
    """Raise an IndexError naming the bad class; return True when no row is ignored (every target is a class)."""
    data = target._data if target.device.type == "cpu" else target.detach().cpu().numpy()
    if data.size and 0 <= data.min() and data.max() < C:  # the common case: every target is a class
        return not 0 <= ignore_index < C
    inside = data[data != ignore_index]
    if inside.size and (inside.min() < 0 or inside.max() >= C):
        bad = int(inside.max()) if inside.max() >= C else int(inside.min())
        raise IndexError(
            f"{op}: target contains class {bad} but the input has {C} classes (valid targets: 0 to {C - 1}, "
            f"or ignore_index={ignore_index}); check the labels, or give the last layer "
            f"{max(C, int(inside.max()) + 1)} outputs"
        )
    return False


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy between logits ``input`` (N, C) (or (C,), or (N, C, d1, ...)) and class indices ``target``.

    Equal to ``nll_loss(log_softmax(input, 1), target)`` but computed in one
    stable, fused node (see the module docstring); ``ignore_index`` (when a
    target equals it) and ``label_smoothing`` take the extension's node.
    """
    op = "cross_entropy"
    if weight is not None or size_average is not None or reduce is not None:
        raise NotImplementedError(f"{op}: class weights and the deprecated size_average/reduce are not implemented in minigrad")
    _check_reduction(reduction, op)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    rows, targets, shape, C = _classes_last(input, target, op, "logits")
    none_ignored = _check_targets(targets, C, ignore_index, op)
    if none_ignored and not label_smoothing:
        out = CrossEntropyFunction.apply(rows, targets, reduction)
    else:
        ignore = None if none_ignored else int(ignore_index)  # None: the node skips the masking
        out = CrossEntropyWithOptionsFunction.apply(rows, targets, ignore, float(label_smoothing), reduction)
    return out.reshape(shape) if reduction == "none" else out


def nll_loss(input: Tensor, target: Tensor, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (N, C) (e.g. from log_softmax) and class indices."""
    op = "nll_loss"
    if weight is not None or size_average is not None or reduce is not None:
        raise NotImplementedError(f"{op}: class weights and the deprecated size_average/reduce are not implemented in minigrad")
    _check_reduction(reduction, op)
    rows, targets, shape, C = _classes_last(input, target, op, "log-probabilities")
    _check_targets(targets, C, ignore_index, op)
    out = NLLLossFunction.apply(rows, targets, int(ignore_index), reduction)
    return out.reshape(shape) if reduction == "none" else out


def _same_shape(input: Tensor, target: Tensor, op: str) -> None:
    check_tensor(input, "input", op)
    check_tensor(target, "target", op)
    if tuple(input.shape) != tuple(target.shape):
        hint = ""
        if input.ndim == target.ndim + 1 and input.shape[-1] == 1:
            hint = " — use input.squeeze(-1) (or target.unsqueeze(-1))"
        elif target.ndim == input.ndim + 1 and target.shape[-1] == 1:
            hint = " — use target.squeeze(-1)"
        raise ShapeError(
            f"{op}: input {tuple(input.shape)} and target {tuple(target.shape)} must have the same shape{hint}. "
            f"(PyTorch would broadcast them with a warning, which silently computes the wrong loss)"
        )


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Mean squared error ``(input - target)**2``, averaged (``"mean"``), summed, or per element (``"none"``)."""
    op = "mse_loss"
    _check_reduction(reduction, op)
    _same_shape(input, target, op)
    diff = input - target
    squared = diff * diff
    if reduction == "none":
        return squared
    return squared.mean() if reduction == "mean" else squared.sum()


def binary_cross_entropy_with_logits(
    input: Tensor, target: Tensor, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None
) -> Tensor:
    """Binary cross-entropy of ``sigmoid(input)`` and ``target`` in [0, 1], computed stably from the logits."""
    op = "binary_cross_entropy_with_logits"
    if weight is not None or pos_weight is not None or size_average is not None or reduce is not None:
        raise NotImplementedError(f"{op}: weight, pos_weight and the deprecated size_average/reduce are not implemented in minigrad")
    _check_reduction(reduction, op)
    _same_shape(input, target, op)
    check_float(input, "input", op)
    if not is_floating_point(target.dtype):
        raise DTypeError(f"{op}: target must be floating point (probabilities in [0, 1]), got {target.dtype}; use target.float()")
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    return BCEWithLogitsFunction.apply(input, target, reduction)
