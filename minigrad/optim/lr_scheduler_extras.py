"""The schedules of ``torch.optim.lr_scheduler`` that chapter 05 does not use, for PyTorch compatibility.

``MultiStepLR``, ``ExponentialLR``, ``LinearLR`` and ``SequentialLR``, built
on :class:`minigrad.optim.lr_scheduler.LRScheduler` with the same closed-form
rule (``lr = f(base_lr, step)``). Import them from here or from
:mod:`minigrad.optim` (``optim.LinearLR`` is this module's class); where code
written for PyTorch says ``torch.optim.lr_scheduler.LinearLR``, use one of
those.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Iterable

from minigrad.optim.lr_scheduler import LRScheduler, _check_int, _check_real
from minigrad.optim.optimizer import Optimizer

__all__ = ["MultiStepLR", "ExponentialLR", "LinearLR", "SequentialLR"]


class MultiStepLR(LRScheduler):
    """``lr = base_lr * gamma ** (number of milestones <= step)``: decay by ``gamma`` at each milestone.

    ``MultiStepLR(opt, milestones=[30, 80], gamma=0.1)``: lr for steps 0-29,
    lr/10 for 30-79, lr/100 from 80 on. A milestone listed twice decays twice.
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1) -> None:
        milestones = list(milestones)
        for m in milestones:
            _check_int("MultiStepLR", "milestone", m, 0)
        if milestones != sorted(milestones):
            raise ValueError(f"MultiStepLR: milestones must be increasing, got {milestones}")
        _check_real("MultiStepLR", "gamma", gamma, 0.0)
        self.milestones = milestones
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        passed = bisect_right(self.milestones, self.last_epoch)
        return [base_lr * self.gamma**passed for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr = base_lr * gamma ** step``: decay by ``gamma`` every step."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        _check_real("ExponentialLR", "gamma", gamma, 0.0)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr by a factor that moves linearly from ``start_factor`` to ``end_factor`` in ``total_iters`` steps::

        lr = base_lr * (start_factor + (end_factor - start_factor) * min(step, total_iters) / total_iters)

    The usual *linear warmup*: ``LinearLR(opt, start_factor=0.01, total_iters=500)``.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        _check_real("LinearLR", "start_factor", start_factor, 0.0, 1.0, low_open=True)
        _check_real("LinearLR", "end_factor", end_factor, 0.0, 1.0)
        _check_int("LinearLR", "total_iters", total_iters, 1)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        progress = min(self.last_epoch, self.total_iters) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * progress
        return [base_lr * factor for base_lr in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at the ``milestones`` (step numbers).

    Each scheduler restarts from its own step 0 when its turn comes::

        warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
        decay = CosineAnnealingLR(opt, T_max=95)
        SequentialLR(opt, [warmup, decay], milestones=[5])   # 5 warmup steps, then 95 cosine steps

    All the schedulers must belong to ``optimizer``; there is one milestone
    fewer than schedulers.
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int], last_epoch: int = -1) -> None:
        schedulers, milestones = list(schedulers), list(milestones)
        if not schedulers:
            raise ValueError("SequentialLR: needs at least one scheduler, got none")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler):
                raise TypeError(f"SequentialLR: schedulers[{i}] is a {type(s).__name__}, not a learning-rate scheduler")
            if s.optimizer is not optimizer:
                raise ValueError(
                    f"SequentialLR: schedulers[{i}] ({type(s).__name__}) belongs to a different optimizer; "
                    f"every scheduler must be created for the optimizer given to SequentialLR"
                )
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestone(s) (the steps "
                f"where the next one takes over), got {len(milestones)}"
            )
        for m in milestones:
            _check_int("SequentialLR", "milestone", m, 1)
        if milestones != sorted(milestones):
            raise ValueError(f"SequentialLR: milestones must be increasing, got {milestones}")
        _check_int("SequentialLR", "last_epoch", last_epoch, -1)
        self.optimizer = optimizer
        self._schedulers = schedulers
        self._milestones = milestones
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch + 1
        idx = bisect_right(milestones, self.last_epoch)
        start = milestones[idx - 1] if idx > 0 else 0
        self._start(idx, self.last_epoch - start)

    def _start(self, idx: int, epoch: int) -> None:
        """Make scheduler ``idx`` the active one, at its own step ``epoch``."""
        scheduler = self._schedulers[idx]
        previous, scheduler.last_epoch = scheduler.last_epoch, epoch
        try:
            scheduler._apply(scheduler.get_lr())
        except BaseException:
            scheduler.last_epoch = previous
            raise
        self._last_lr = scheduler.get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        try:
            if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
                self._start(idx, 0)
            else:
                self._schedulers[idx].step()
        except BaseException:
            self.last_epoch -= 1
            raise
        self._last_lr = self._schedulers[idx].get_last_lr()

    def get_lr(self) -> list[float]:
        return self._schedulers[bisect_right(self._milestones, self.last_epoch)].get_lr()

    def state_dict(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, s in zip(self._schedulers, saved):
            scheduler.load_state_dict(s)
