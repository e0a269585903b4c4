"""``TrainingRun``: a model trained step by step as a :class:`TrainConfig` says, on a simulated card if named.

::

    run = TrainingRun(model, optimizer, train_loader, TrainConfig(64, amp="float16", accumulate=4,
                      card="gtx1050"), nn.CrossEntropyLoss(), scheduler=scheduler, test_loader=test_loader)
    while run.epoch < 3:
        run.step()
        if run.step_count % 100 == 0:
            run.save("run.npz")          # TrainingRun.resume("run.npz", ...) continues it, bitwise

One ``step()`` is one optimizer step on one batch of the train loader (the
effective batch, ``config.batch_size``), run as micro-batches of
``config.micro_batch`` whose losses are weighted by their share of the batch
(``1/K`` for K equal ones) so that the gradients add up to the whole batch's.
Each forward runs under ``autocast`` when ``config.amp`` names a dtype, and
is checkpointed as :mod:`.step_forward` says; float16 scales the loss with a
:class:`GradScaler` (an overflowing step is skipped and the scale backed
off). With ``config.card`` the step runs inside a fresh ``simulated_gpu`` of
that card and a memory tracker: an out-of-memory error is the card's report,
and ``memory`` keeps the run's peaks (reserved, allocated, by category); the
loader then makes its batches in the step's thread (``prefetch = 0``: the
card and the tracker count one thread's allocations). The
scheduler, if any, steps once per optimizer step; at the end of each epoch
the test loader, if any, is evaluated (``history.epochs``).

Invariants: the step's loss is the mean of the batch's per-example loss,
whatever ``accumulate`` (up to rounding); the run draws its random numbers
(dropout) only from minigrad's generators and its data order only from the
loader's, so that :mod:`.run_state` can save and restore all of it.
"""

from __future__ import annotations

import gc
import time
from contextlib import ExitStack, nullcontext

import numpy as np

from minigrad.amp import GradScaler, autocast
from minigrad.capstone.run_history import RunHistory, RunMemory
from minigrad.capstone.run_state import load_run, load_run_state, run_state_dict, save_run
from minigrad.capstone.step_forward import CheckpointedForward
from minigrad.memory import simulated_gpu, track
from minigrad.tensor import bfloat16, float16
from minigrad.training import evaluate

__all__ = ["TrainingRun"]

AMP_DTYPE = {"float16": float16, "bfloat16": bfloat16}


class TrainingRun:
    """One training run: model, optimizer, data, configuration, and where it stands (see the module docstring).

    ``scaler``: the GradScaler to use with float16 (default: PyTorch's defaults).
    ``step_count``: optimizer steps taken; ``epoch``: epochs finished;
    ``position``: batches of the current epoch consumed.
    """

    def __init__(self, model, optimizer, train_loader, config, loss_fn, *, scheduler=None, test_loader=None,
                 scaler=None) -> None:
        loader_batch = getattr(train_loader, "batch_size", None)
        if loader_batch != config.batch_size:
            raise ValueError(
                f"TrainingRun: the train loader hands out batches of {loader_batch} but config.batch_size is "
                f"{config.batch_size} (the effective batch of one step); make the loader with "
                f"batch_size={config.batch_size} (accumulate={config.accumulate} splits it into micro-batches)")
        self.model, self.optimizer, self.train_loader = model, optimizer, train_loader
        self.config, self.loss_fn = config, loss_fn
        self.scheduler, self.test_loader = scheduler, test_loader
        self.device_type = next((p.device.type for p in model.parameters()), "cpu")
        if scaler is not None and scaler.is_enabled() and not config.scaled:
            raise ValueError(f"TrainingRun: a GradScaler was given but config.amp={config.amp!r} needs none "
                             f"(only float16 scales its loss); drop scaler= or use amp='float16'")
        self.scaler = scaler if scaler is not None else GradScaler(self.device_type, enabled=config.scaled)
        if config.card is not None and getattr(train_loader, "prefetch", 0) > 0:
            train_loader.prefetch = 0  # the card and its tracker count allocations from the step's thread only
        self.forward = CheckpointedForward(model, config)
        self.step_count = self.epoch = self.position = 0
        self.history = RunHistory()
        self.memory = RunMemory()
        self._batches = None  # the loader's iterator over the current epoch
        self._collected = False

    # ------------------------------------------------------------------ one step

    def _next_batch(self):
        if self._batches is None:
            self._batches = iter(self.train_loader)
        try:
            return next(self._batches)
        except StopIteration:
            raise RuntimeError(
                f"TrainingRun.step: the train loader has no batch left, but the run is at batch {self.position} of "
                f"{len(self.train_loader)} in its epoch: the run's position and the loader's disagree (restore both "
                f"from the same state, or iterate the loader only through the run)") from None

    def step(self) -> float:
        """One optimizer step on the next batch; returns its loss (a float, also ``history.losses[-1]``)."""
        x, y = self._next_batch()
        self.forward.prepare(x[: self.config.micro_batch])
        start = time.perf_counter()
        scale = self.scaler.get_scale()
        if self.config.card is not None and not self._collected:
            gc.collect()  # garbage of earlier work would be on the card (it counts every live buffer): not this run's
            self._collected = True
        with ExitStack() as stack:
            if self.config.card is not None:
                gpu = stack.enter_context(simulated_gpu(self.config.card, model=self.model, optimizer=self.optimizer))
                mem = stack.enter_context(track(self.model, self.optimizer, timeline=False))
            loss = self._accumulate(x, y)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        if self.config.card is not None:
            self.memory.record(gpu, mem)
        if self.scheduler is not None:
            self.scheduler.step()
        self.step_count += 1
        self.position += 1
        self.history.record_step(loss, scale, self.scaler.get_scale() < scale, time.perf_counter() - start)
        if self.position == len(self.train_loader):
            self._finish_epoch()
        return loss

    def _accumulate(self, x, y) -> float:
        """Forward and backward of each micro-batch of ``(x, y)``; the batch's loss."""
        self.optimizer.zero_grad()
        n, micro = len(x), self.config.micro_batch
        total = 0.0
        with self.forward.around_step():
            for start in range(0, n, micro):
                xs, ys = x[start:start + micro], y[start:start + micro]
                with autocast(self.device_type, dtype=AMP_DTYPE.get(self.config.amp), enabled=self.config.amp is not None):
                    loss = self.loss_fn(self.forward(xs), ys)
                share = len(xs) / n
                with np.errstate(over="ignore", invalid="ignore") if self.scaler.is_enabled() else nullcontext():
                    self.scaler.scale(loss * share if share != 1 else loss).backward()  # the scaler checks for inf
                total += loss.item() * share
        return total

    def drop_batches(self) -> None:
        """Forget the epoch's iterator: the next step asks the loader again (after its state was restored)."""
        self._batches = None

    def _finish_epoch(self) -> None:
        self.epoch += 1
        self.position = 0
        if next(self._batches, None) is not None:
            raise RuntimeError(f"TrainingRun: the train loader handed out more than its len() = "
                               f"{len(self.train_loader)} batches in one epoch")
        self._batches = None
        steps = len(self.train_loader)
        test_loss = test_accuracy = None
        if self.test_loader is not None:
            test_loss, test_accuracy = evaluate(self.model, self.test_loader, self.loss_fn)
        self.history.record_epoch(self.epoch, sum(self.history.losses[-steps:]) / steps, test_loss, test_accuracy)

    # ------------------------------------------------------------------ saving and resuming (see run_state)

    def state_dict(self) -> dict:
        """A snapshot of everything the run's future depends on (:func:`.run_state.run_state_dict`)."""
        return run_state_dict(self)

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`'s result; refused, with what differs, for another model or config."""
        load_run_state(self, state)

    def save(self, path):
        """Write :meth:`state_dict` to ``path`` with ``minigrad.save`` (atomic: the previous file stays until the new
        one is complete)."""
        return save_run(self, path)

    @classmethod
    def resume(cls, path, model, optimizer, train_loader, config, loss_fn, *, scheduler=None,
               test_loader=None, scaler=None) -> "TrainingRun":
        """A run made from these pieces (as when it started) and continued from the checkpoint at ``path``."""
        run = cls(model, optimizer, train_loader, config, loss_fn, scheduler=scheduler, test_loader=test_loader,
                  scaler=scaler)
        run.load_state_dict(load_run(path))
        return run

    def __repr__(self) -> str:
        return (f"TrainingRun({type(self.model).__name__}, {self.config.label()}, step {self.step_count}, "
                f"epoch {self.epoch} + {self.position}/{len(self.train_loader)} batches)")
