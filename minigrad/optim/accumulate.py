"""Gradient accumulation: the update of a big batch, computed in small pieces.

When a batch of ``B`` examples does not fit in memory, split it into ``k``
*micro-batches* of ``B / k`` examples and let the gradients add up in
``.grad`` (``backward()`` accumulates into leaves) before one optimizer step::

    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches, start=1):
        loss = loss_fn(model(x), y)       # the mean over this micro-batch
        (loss / k).backward()             # scale by 1/k: the sum of k means / k = the mean of the batch
        if i % k == 0:
            optimizer.step()
            optimizer.zero_grad()

Why ``1/k``: the full-batch loss is the mean over ``B`` examples, which is the
mean of the ``k`` micro-batch means (when they have equal sizes), and the
gradient of a sum is the sum of the gradients. Without the scaling the
accumulated gradient is ``k`` times too large, as if the learning rate were
``k`` times larger. Only activations for one micro-batch are alive at a time;
the price is ``k`` smaller, slower passes. Layers that look across the batch
(BatchNorm) see micro-batches, so they do not match exactly.

:class:`GradientAccumulator` packages the pattern::

    acc = GradientAccumulator(optimizer, steps=4)
    for x, y in loader:                   # micro-batches
        if acc.backward(loss_fn(model(x), y)):
            scheduler.step()              # True right after an optimizer step
    acc.flush()                           # step on a last, incomplete group
"""

from __future__ import annotations

import numbers

from minigrad.optim.optimizer import Optimizer, _bump
from minigrad.tensor import Tensor, no_grad

__all__ = ["GradientAccumulator"]


class GradientAccumulator:
    """Call ``optimizer.step()`` once every ``steps`` micro-batches, with the full-batch gradient.

    ``backward(loss)`` runs ``(loss / steps).backward()``; on every
    ``steps``-th call it also steps the optimizer and zeroes the gradients
    (``zero_grad(set_to_none)``), and returns True. Zero the gradients once
    before the first micro-batch (a fresh model has none).

    ``flush()`` finishes a group of fewer than ``steps`` micro-batches (the
    end of an epoch): it rescales the gradients to the mean over the ``m``
    micro-batches seen (multiplies by ``steps / m``) and steps. This assumes
    micro-batches of equal size, like the 1/steps scaling itself.
    """

    def __init__(self, optimizer: Optimizer, steps: int, set_to_none: bool = True) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"GradientAccumulator: expected an optimizer (SGD, Adam, ...), got {type(optimizer).__name__}")
        if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
            raise ValueError(f"GradientAccumulator: invalid steps={steps!r}; it must be an integer >= 1 (micro-batches per update)")
        self.optimizer = optimizer
        self.steps = int(steps)
        self.set_to_none = set_to_none
        self.pending = 0  # micro-batches whose gradients are in .grad but not yet used

    def scale(self, loss: Tensor) -> Tensor:
        """``loss / steps``: the micro-batch's share of the full-batch loss."""
        return loss * (1.0 / self.steps)

    def backward(self, loss: Tensor) -> bool:
        """Accumulate the gradient of ``loss / steps``; step and zero the gradients every ``steps`` calls.

        Returns True when this call stepped the optimizer.
        """
        self.scale(loss).backward()
        self.pending += 1
        if self.pending == self.steps:
            self._step()
            return True
        return False

    def flush(self) -> bool:
        """Step on the micro-batches accumulated so far (fewer than ``steps``); False if there were none."""
        if self.pending == 0:
            return False
        if self.pending != self.steps:
            factor = self.steps / self.pending
            with no_grad():
                for group in self.optimizer.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad._data *= factor
                            _bump(p.grad)
        self._step()
        return True

    def _step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=self.set_to_none)
        self.pending = 0

    def __repr__(self) -> str:
        return f"GradientAccumulator({type(self.optimizer).__name__}, steps={self.steps}, pending={self.pending})"
