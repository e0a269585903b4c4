"""Learning-rate schedules, as in ``torch.optim.lr_scheduler``.

A scheduler changes ``group["lr"]`` of an optimizer's parameter groups as
training goes on. Call ``scheduler.step()`` once per epoch (or per batch, for
per-step schedules such as warmup), *after* ``optimizer.step()``::

    optimizer = SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=30, gamma=0.1)
    for epoch in range(100):
        train_one_epoch(...)          # calls optimizer.step() many times
        scheduler.step()              # lr: 0.1 for 30 epochs, then 0.01, ...

Every scheduler here is a *closed form*: the learning rate of each group is a
function of the number of ``step()`` calls so far (``last_epoch``) and of the
group's learning rate when the scheduler was created (``base_lrs``)::

    lr = get_lr()[i] = f(base_lrs[i], last_epoch)

The values equal PyTorch's, step for step. Deviation: PyTorch computes most
schedules *recursively* from the current ``group["lr"]`` ("chainable"), so
two schedulers on one optimizer multiply; here the one that stepped last sets
the learning rate. Combine schedules with :class:`LambdaLR` (or
``SequentialLR``) instead. ``step(epoch)`` (deprecated in PyTorch) is not
supported.

This file holds the schedules chapter 05 uses (``StepLR``,
``CosineAnnealingLR``, ``warmup_cosine`` on ``LambdaLR``). The rest of
PyTorch's set (``MultiStepLR``, ``ExponentialLR``, ``LinearLR``,
``SequentialLR``) lives in :mod:`minigrad.optim.lr_scheduler_extras`, built
on this file's ``LRScheduler``; import them from there or from
:mod:`minigrad.optim` (``optim.MultiStepLR``).
"""

from __future__ import annotations

import math
import numbers
import types
from typing import Any, Callable

from minigrad.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "CosineAnnealingLR", "warmup_cosine"]


def _check_int(scheduler: str, name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{scheduler}: invalid {name}={value!r}; it must be an integer >= {low}")


def _check_real(scheduler: str, name: str, value, low: float, high: float | None = None, low_open: bool = False) -> None:
    ok = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low) and (high is None or value <= high)
    if not ok:
        bound = f"in {'(' if low_open else '['}{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise ValueError(f"{scheduler}: invalid {name}={value!r}; it must be a number {bound}")


def _check_scheduled_lr(scheduler: "LRScheduler", group: int, lr) -> None:
    """A learning rate a schedule produced must be a finite number >= 0: a nan or negative one ruins the weights."""
    if not isinstance(lr, bool) and isinstance(lr, numbers.Real) and math.isfinite(lr) and lr >= 0:
        return
    raise ValueError(
        f"{type(scheduler).__name__}: at step (last_epoch) {scheduler.last_epoch} the schedule gives "
        f"lr={lr!r} for parameter group {group} (base lr {scheduler.base_lrs[group]!r}); a learning rate must "
        f"be a finite number >= 0. Check the schedule's formula (e.g. lr_lambda) at this step; nothing was changed"
    )


class LRScheduler:
    """Base class: keeps ``last_epoch`` and ``base_lrs``, and writes ``get_lr()`` into the optimizer.

    Subclasses set their own attributes, call ``super().__init__(optimizer,
    last_epoch)``, and implement :meth:`get_lr`. Creating a scheduler already
    sets each group's lr to its value at step 0 (``last_epoch`` becomes 0).

    ``last_epoch=-1`` starts a new schedule; another value resumes one, and
    needs ``"initial_lr"`` in every group (the optimizer's ``load_state_dict``
    brings it back), as in PyTorch.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        name = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: expected an optimizer (SGD, Adam, ...), got {type(optimizer).__name__}")
        _check_int(name, "last_epoch", last_epoch, -1)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{name}: param_groups[{i}] has no 'initial_lr', needed to resume a schedule with "
                        f"last_epoch={last_epoch}; load the optimizer's state_dict first, or use last_epoch=-1"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list[float]:
        """The learning rate of each group at step ``last_epoch`` (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr()")

    def step(self) -> None:
        """Advance the schedule by one step and write the new learning rates into the optimizer.

        A schedule that produces a negative or non-finite learning rate (or one
        too large for a float, e.g. ``gamma > 1`` for long enough) raises
        ``ValueError`` and changes nothing (neither the optimizer nor ``last_epoch``).
        """
        self.last_epoch += 1
        try:
            try:
                lrs = self.get_lr()
            except OverflowError:
                raise ValueError(
                    f"{type(self).__name__}.step: the learning rate at step {self.last_epoch} is too large to "
                    f"represent (it overflowed a float); a learning rate must be a finite number >= 0. Check the "
                    f"schedule (a gamma above 1 grows the rate every step); nothing was changed"
                ) from None
            self._apply(lrs)
        except BaseException:
            self.last_epoch -= 1
            raise

    def _apply(self, lrs: list[float]) -> None:
        groups = self.optimizer.param_groups
        if len(lrs) != len(groups):
            raise ValueError(
                f"{type(self).__name__}: the optimizer has {len(groups)} parameter groups but the scheduler "
                f"was made for {len(lrs)}; create the scheduler after the last add_param_group()"
            )
        for i, lr in enumerate(lrs):
            _check_scheduled_lr(self, i, lr)
        for group, lr in zip(groups, lrs):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Everything the scheduler keeps except the optimizer (save it along with the optimizer's)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s result; the next ``step()`` continues the saved schedule."""
        self.__dict__.update(state_dict)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, last_lr={self._last_lr})"


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(step)``: any schedule you can write as a function.

    ``lr_lambda`` is one function for all groups or a list with one per group::

        LambdaLR(optimizer, lambda step: 0.95 ** step)

    ``state_dict`` keeps the attributes of callable objects but not plain
    functions or lambdas (they cannot be saved); recreate those.
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list, last_epoch: int = -1) -> None:
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"LambdaLR: got {len(lr_lambda)} lr_lambdas for an optimizer with "
                    f"{len(optimizer.param_groups)} parameter groups; give one function per group (or a single one)"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"LambdaLR: lr_lambda must be a function of the step number, got {fn!r}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(fn.__dict__) for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state)
        for fn, attrs in zip(self.lr_lambdas, saved):
            if attrs is not None:
                fn.__dict__.update(attrs)


class StepLR(LRScheduler):
    """``lr = base_lr * gamma ** (step // step_size)``: decay by ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        _check_int("StepLR", "step_size", step_size, 1)
        _check_real("StepLR", "gamma", gamma, 0.0)
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from ``base_lr`` down to ``eta_min`` over ``T_max`` steps::

        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * step / T_max)) / 2

    After ``T_max`` steps the cosine climbs back up (as in PyTorch); stop
    training at ``T_max`` or use :func:`warmup_cosine`, which stays at the minimum.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        _check_int("CosineAnnealingLR", "T_max", T_max, 1)
        _check_real("CosineAnnealingLR", "eta_min", eta_min, 0.0)
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base_lr - self.eta_min) * cosine for base_lr in self.base_lrs]


class _WarmupCosineFactor:
    """The factor ``lr(step) / base_lr`` of :func:`warmup_cosine` for one group (a callable object, so it saves)."""

    def __init__(self, base_lr: float, warmup_steps: int, total_steps: int, min_lr: float) -> None:
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.min_lr = min_lr

    def __call__(self, step: int) -> float:
        if self.base_lr == 0:
            return 0.0
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        progress = min(step - self.warmup_steps, self.total_steps - self.warmup_steps) / (self.total_steps - self.warmup_steps)
        lr = self.min_lr + (self.base_lr - self.min_lr) * (1 + math.cos(math.pi * progress)) / 2
        return lr / self.base_lr


def warmup_cosine(optimizer: Optimizer, warmup_steps: int, total_steps: int, min_lr: float = 0.0) -> LambdaLR:
    """Linear warmup, then a cosine decay to ``min_lr``: the usual schedule for training with Adam(W).

    Call ``step()`` once per optimizer step. For each group, with ``base_lr``
    its learning rate when this is called, ``W = warmup_steps`` and
    ``T = total_steps``::

        step < W:        lr = base_lr * (step + 1) / W          (reaches base_lr at step W - 1)
        W <= step <= T:  lr = min_lr + (base_lr - min_lr) * (1 + cos(pi * (step - W) / (T - W))) / 2
        step > T:        lr = min_lr

    Returns a :class:`LambdaLR` (any schedule is a function of the step).
    """
    _check_int("warmup_cosine", "warmup_steps", warmup_steps, 0)
    _check_int("warmup_cosine", "total_steps", total_steps, 1)
    if total_steps <= warmup_steps:
        raise ValueError(
            f"warmup_cosine: total_steps={total_steps} must be larger than warmup_steps={warmup_steps} "
            f"(total_steps counts the warmup too)"
        )
    _check_real("warmup_cosine", "min_lr", min_lr, 0.0)
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"warmup_cosine: expected an optimizer (SGD, Adam, ...), got {type(optimizer).__name__}")
    factors = []
    for i, group in enumerate(optimizer.param_groups):
        base_lr = group.get("initial_lr", group["lr"])
        if min_lr > base_lr:
            raise ValueError(
                f"warmup_cosine: min_lr={min_lr!r} is larger than the learning rate {base_lr!r} of parameter "
                f"group {i}; the schedule would rise instead of decay"
            )
        factors.append(_WarmupCosineFactor(base_lr, warmup_steps, total_steps, min_lr))
    return LambdaLR(optimizer, factors)

