"""A small, readable training loop: the recipe every chapter repeats, written once.

One step is: forward, loss, backward, (clip), optimizer step, zero the grads.
With ``accumulation_steps = k`` the gradient of k micro-batches is summed (each
loss scaled by 1/k) before one optimizer step: the same update as one batch k
times larger, in the memory of one micro-batch.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Iterable

import numpy as np
from tqdm.auto import tqdm

from minigrad.nn.utils import clip_grad_norm_
from minigrad.tensor import no_grad
from minigrad.training.history import EpochRecord, History


def _correct(logits, targets) -> int:
    """How many predictions hit their target; counted on the tensors' device, one number comes back."""
    return int((logits.detach().argmax(dim=-1) == targets).sum().item())


def evaluate(model, loader: Iterable, loss_fn: Callable) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` over ``loader``, in eval mode and without a graph."""
    was_training = model.training
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with no_grad():
        for x, y in loader:
            logits = model(x)
            total_loss += loss_fn(logits, y).item() * len(y)
            correct += _correct(logits, y)
            count += len(y)
    model.train(was_training)
    return total_loss / count, correct / count


def fit(
    model,
    optimizer,
    train_loader,
    loss_fn: Callable,
    epochs: int,
    *,
    test_loader=None,
    scheduler=None,
    scheduler_per_step: bool = False,
    clip_norm: float | None = None,
    accumulation_steps: int = 1,
    progress: bool = True,
    print_epochs: bool = True,
    on_epoch_end: Callable[[History], None] | None = None,
    on_step_end: Callable[[History], None] | None = None,
) -> History:
    """Train ``model`` for ``epochs`` and return its :class:`History`.

    ``scheduler.step()`` runs once per epoch, or once per optimizer step with
    ``scheduler_per_step``. ``clip_norm`` clips the global gradient norm before
    each step. Callbacks receive the history so far (e.g. a live plot).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral) or epochs < 0:
        raise ValueError(f"fit: epochs={epochs!r} must be a whole number >= 0")
    if accumulation_steps < 1:
        raise ValueError(f"fit: accumulation_steps must be >= 1, got {accumulation_steps}")
    history = History()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for epoch in range(1, epochs + 1):
        model.train()
        start = time.perf_counter()
        total_loss, correct, count = 0.0, 0, 0
        batches = tqdm(train_loader, desc=f"epoch {epoch}/{epochs}", leave=False, disable=not progress)
        optimizer.zero_grad()
        for i, (x, y) in enumerate(batches, start=1):
            logits = model(x)
            loss = loss_fn(logits, y)
            (loss * (1.0 / accumulation_steps) if accumulation_steps > 1 else loss).backward()
            if i % accumulation_steps == 0 or i == len(train_loader):
                if clip_norm is not None:
                    clip_grad_norm_(params, clip_norm)
                optimizer.step()
                optimizer.zero_grad()
                if scheduler is not None and scheduler_per_step:
                    scheduler.step()
            value = loss.item()
            history.step_losses.append(value)
            total_loss += value * len(y)
            correct += _correct(logits, y)
            count += len(y)
            if progress:
                batches.set_postfix(loss=f"{value:.3f}", refresh=False)
            if on_step_end is not None:
                on_step_end(history)
        if scheduler is not None and not scheduler_per_step:
            scheduler.step()
        record = EpochRecord(epoch, total_loss / count, correct / count, time.perf_counter() - start,
                             lr=float(optimizer.param_groups[0]["lr"]))
        if test_loader is not None:
            record.test_loss, record.test_accuracy = evaluate(model, test_loader, loss_fn)
        history.epochs.append(record)
        if print_epochs:
            print(record.line(), flush=True)
        if on_epoch_end is not None:
            on_epoch_end(history)
    return history


def predict(model, loader) -> np.ndarray:
    """Predicted class of every sample in ``loader``, in order (a NumPy array on the host)."""
    model.eval()
    with no_grad():
        return np.concatenate([model(x).argmax(dim=-1).cpu().numpy() for x, _ in loader])
