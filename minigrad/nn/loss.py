"""Loss layers: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``BCEWithLogitsLoss`` (maths in ``functional.loss``).

Call them as ``loss_fn(prediction, target)``. ``reduction`` is ``"mean"``
(the default), ``"sum"`` or ``"none"`` (one loss per element/row).
"""

from __future__ import annotations

from minigrad.nn import functional as F
from minigrad.nn.module import Module
from minigrad.tensor import Tensor

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "BCEWithLogitsLoss"]


class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction


def _no_weights(cls: str, **given) -> None:
    for name, value in given.items():
        if value is not None:
            raise NotImplementedError(f"{cls}: {name}= is not implemented in minigrad")


class CrossEntropyLoss(_Loss):
    """Cross-entropy of logits (N, C) and class indices (N,): softmax and negative log-likelihood in one stable step.

    ``ignore_index``: rows with this target are skipped (and not counted in
    the mean). ``label_smoothing``: mix the one-hot target with the uniform
    distribution. Class ``weight`` is not implemented.
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(reduction)
        _no_weights("CrossEntropyLoss", weight=weight, size_average=size_average, reduce=reduce)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, ignore_index=self.ignore_index, reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (N, C) (e.g. from ``LogSoftmax(dim=1)``) and class indices (N,)."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(reduction)
        _no_weights("NLLLoss", weight=weight, size_average=size_average, reduce=reduce)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, ignore_index=self.ignore_index, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error; prediction and target must have the same shape."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(reduction)
        _no_weights("MSELoss", size_average=size_average, reduce=reduce)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits (sigmoid included, computed without overflow); targets in [0, 1]."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(reduction)
        _no_weights("BCEWithLogitsLoss", weight=weight, pos_weight=pos_weight, size_average=size_average, reduce=reduce)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, reduction=self.reduction)
