"""The learning-rate range test: raise the learning rate step by step until the loss blows up, then undo it all.

``lr_range_test(model, optimizer, loader, loss_fn)`` trains for at most
``steps`` steps with a learning rate that grows exponentially from
``start_lr`` to ``end_lr`` (step ``i`` of ``n`` uses
``start_lr * (end_lr / start_lr) ** (i / (n - 1))``, the same factor each
step), recording each step's loss (computed before that step's update) and
its smoothed value (an exponential moving average with weight ``smoothing``
and bias correction, as :func:`minigrad.viz.training_plots.smooth`). It stops
early when the loss is NaN or inf, or when the smoothed loss exceeds
``diverge_factor`` times the lowest smoothed loss so far (losses are taken
to be >= 0, as cross-entropy and MSE are): the learning rate has diverged.

The suggestion: a tenth of the learning rate at which the smoothed loss
was lowest. At the lowest point the rate is already about as large as the
loss tolerates (a little more and it rises); a tenth of it is safely
below, still in the region where the loss fell fast. No suggestion (None)
when the smoothed loss never fell below its first value (start lower) or
no step gave a finite loss.

Invariants
- Afterwards the model (parameters, buffers, gradients, each module's
  training mode), the optimizer (state and param_groups, the learning rates
  included) and the CPU random generator are bitwise as they were before,
  also when a step raised.
- The suggestion, when there is one, lies below the learning rate at which
  the test diverged.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

from minigrad.tensor import get_rng_state, no_grad, set_rng_state

__all__ = ["LRRangeResult", "lr_range_test", "suggest_lr"]


@dataclass(frozen=True)
class LRRangeResult:
    """What the test saw: one learning rate, loss and smoothed loss per step run, and its reading of them.

    ``diverged_at`` is the learning rate of the step that stopped the test
    (None if it ran all its steps); that step is included in the lists.
    """

    lrs: list[float]
    losses: list[float]
    smoothed: list[float]
    suggestion: float | None
    diverged_at: float | None
    reason: str = field(default="")

    def __repr__(self) -> str:
        suggestion = "none" if self.suggestion is None else f"{self.suggestion:.3g}"
        diverged = "" if self.diverged_at is None else f", diverged at lr {self.diverged_at:.3g}"
        return f"LRRangeResult({len(self.lrs)} steps, suggestion {suggestion}{diverged})"


def suggest_lr(lrs, smoothed) -> float | None:
    """A tenth of the learning rate at the lowest finite smoothed loss; None if that lowest point is the first one."""
    finite = [(s, i) for i, s in enumerate(smoothed) if math.isfinite(s)]
    if not finite:
        return None
    lowest, index = min(finite)
    if index == 0 or not lowest < smoothed[0]:
        return None
    return lrs[index] / 10


def _check(start_lr, end_lr, steps, smoothing, diverge_factor) -> None:
    name = "lr_range_test"
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 2:
        raise ValueError(f"{name}: steps={steps!r} must be a whole number >= 2 (the rate grows from start_lr to end_lr "
                         f"over them; 100 is typical)")
    for label, value in (("start_lr", start_lr), ("end_lr", end_lr)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < math.inf:
            raise ValueError(f"{name}: {label}={value!r} must be a finite number > 0")
    if not end_lr > start_lr:
        raise ValueError(f"{name}: end_lr={end_lr!r} must be larger than start_lr={start_lr!r} (the rate increases)")
    if isinstance(smoothing, bool) or not isinstance(smoothing, numbers.Real) or not 0 <= smoothing < 1:
        raise ValueError(f"{name}: smoothing={smoothing!r} must be in [0, 1) (0: no smoothing; 0.9 is typical)")
    if isinstance(diverge_factor, bool) or not isinstance(diverge_factor, numbers.Real) or not diverge_factor > 1:
        raise ValueError(f"{name}: diverge_factor={diverge_factor!r} must be a number > 1 (4 is typical)")


def _batches(loader):
    """The loader's batches, again from its start each time it runs out; an empty loader is an error."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise ValueError("lr_range_test: the loader gave no batch; pass a loader with at least one (x, y) batch")


class _Snapshot:
    """A copy of everything the test changes, put back bitwise by ``restore()``."""

    def __init__(self, model, optimizer) -> None:
        self.model, self.optimizer = model, optimizer
        self.tensors = {key: t.detach().clone() for key, t in model.state_dict().items()}
        self.grads = [(p, None if p.grad is None else p.grad.detach().clone()) for p in model.parameters()]
        self.modes = [(m, m.training) for m in model.modules()]
        saved = optimizer.state_dict()
        self.optimizer_state = {
            "state": {i: {k: v.detach().clone() if hasattr(v, "detach") else v for k, v in s.items()}
                      for i, s in saved["state"].items()},
            "param_groups": [dict(group, params=list(group["params"])) for group in saved["param_groups"]],
        }
        self.rng = get_rng_state()

    def restore(self) -> None:
        with no_grad():
            self.model.load_state_dict(self.tensors)
            for p, grad in self.grads:
                p.grad = None if grad is None else grad.clone()
        for m, training in self.modes:
            m.training = training
        self.optimizer.load_state_dict(self.optimizer_state)
        set_rng_state(self.rng)


def lr_range_test(model, optimizer, loader, loss_fn, *, start_lr: float = 1e-7, end_lr: float = 10.0,
                  steps: int = 100, smoothing: float = 0.9, diverge_factor: float = 4.0) -> LRRangeResult:
    """Train with an exponentially growing learning rate until the loss diverges; restore everything; suggest a rate."""
    _check(start_lr, end_lr, steps, smoothing, diverge_factor)
    ratio = end_lr / start_lr
    snapshot = _Snapshot(model, optimizer)
    lrs, losses, smoothed = [], [], []
    diverged_at, reason = None, f"ran all {steps} steps without diverging"
    try:
        model.train()
        batches = _batches(loader)
        average, best = 0.0, math.inf
        for i in range(steps):
            lr = start_lr * ratio ** (i / (steps - 1))
            for group in optimizer.param_groups:
                group["lr"] = lr
            x, y = next(batches)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            value = float(loss.item())
            lrs.append(lr)
            losses.append(value)
            if not math.isfinite(value):
                smoothed.append(math.nan)
                diverged_at, reason = lr, f"the loss was {value} at step {i + 1} (lr {lr:.3g})"
                break
            average = smoothing * average + (1 - smoothing) * value
            current = average / (1 - smoothing ** (i + 1))
            smoothed.append(current)
            if current > diverge_factor * best:
                diverged_at = lr
                reason = (f"the smoothed loss {current:.4g} passed {diverge_factor:g} x its lowest {best:.4g} at step "
                          f"{i + 1} (lr {lr:.3g})")
                break
            best = min(best, current)
            loss.backward()
            optimizer.step()
    finally:
        snapshot.restore()
    suggestion = suggest_lr(lrs, smoothed)
    if suggestion is None:
        reason += "; no suggestion: the smoothed loss never fell below its first value (try a lower start_lr)"
    return LRRangeResult(lrs, losses, smoothed, suggestion, diverged_at, reason)
