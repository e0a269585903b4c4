"""The card's own answer: one training step of a copy of the model on a simulated card, to check the estimate by.

``train_on_card(model, input_shape, batch_size, card)`` is the experiment
every fit answer of :func:`minigrad.memory.estimate` must agree with: a copy
of the model and its optimizer train one warm-up step off the card (so the
optimizer's state exists, as in every step after the first), are put on a
fresh ``simulated_gpu(card, model=, optimizer=)``, and train the step
:func:`~minigrad.memory.estimate_recording.training_step` runs - the loop of
``fit`` - at ``batch_size``. It fits when no ``OutOfMemoryError`` is raised.
The garbage collector is paused during the step, as while estimating.

Buffers already known to the memory registry and alive when the card is
entered are on the card too (``simulated_gpu`` counts them): the result
gives their bytes (``foreign``), 0 in a clean process.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

import numpy as np

import minigrad.tensor as mt
from minigrad.memory import buffers
from minigrad.memory.estimate import OPTIMIZERS, _call, _default_loss, example_shape
from minigrad.memory.estimate_recording import BatchMaker, private_copy, training_step
from minigrad.memory.oom_report import OutOfMemoryError
from minigrad.memory.profiles import get_profile
from minigrad.memory.simulated_gpu import SIMULATED_DEVICES, simulated_gpu

__all__ = ["CardRun", "train_on_card", "warmed_up_copy"]


def _foreign() -> int:
    """Bytes of the live buffers the registry knows on the devices a card simulates."""
    return sum(nbytes for nbytes, _tag, dev in buffers.live_buffers().values() if dev.split(":", 1)[0] in SIMULATED_DEVICES)


@dataclass(frozen=True)
class CardRun:
    """What one step did on the simulated card."""

    batch_size: int
    fits: bool
    peak_reserved: int
    peak_allocated: int  # blocks, rounded up to 512 bytes
    foreign: int  # bytes of buffers already on the card when it was entered


def train_on_card(model, input_shape, batch_size: int, card, optimizer="adam", dtype=None, loss_fn=None,
                  checkpoint=None, set_to_none: bool = True, accumulation_steps: int = 1, mode: str = "train",
                  policy: str = "best_fit") -> CardRun:
    """Train one step of a copy of ``model`` at ``batch_size`` on a fresh simulated ``card`` (see the module)."""
    profile = get_profile(card)
    make_optimizer = OPTIMIZERS[optimizer] if isinstance(optimizer, str) else optimizer
    input_shape = example_shape(input_shape)
    dtype = mt.dtypes.as_dtype(dtype) if dtype is not None else None
    loss_fn, forward = loss_fn or _default_loss, checkpoint or _call
    was_enabled = gc.isenabled()
    if _foreign():
        gc.collect()  # garbage a collection frees is no part of the card
    with mt.fork_rng(), np.errstate(all="ignore"):
        work, optim, make_batch = warmed_up_copy(model, input_shape, make_optimizer, loss_fn, forward, dtype, mode,
                                                 set_to_none)
        foreign = _foreign()
        gc.disable()
        fits = True
        try:
            with simulated_gpu(profile, model=work, optimizer=optim, policy=policy) as gpu:
                training_step(work, optim, make_batch, int(batch_size), loss_fn, forward, accumulation_steps,
                              set_to_none, default_loss=_default_loss)
        except OutOfMemoryError:
            fits = False
        finally:
            if was_enabled:
                gc.enable()
        stats = gpu.stats()
        del work, optim
    return CardRun(int(batch_size), fits, stats["reserved_bytes.all.peak"], stats["allocated_bytes.all.peak"], foreign)


def warmed_up_copy(model, input_shape: tuple, make_optimizer, loss_fn, forward, dtype=None, mode: str = "train",
                   set_to_none: bool = True):
    """``(copy, optimizer, make_batch)``: a private copy of ``model`` and its optimizer after one warm-up step at
    batch 2 off any card, so that the optimizer's state exists (as in every step after the first) and
    ``make_batch`` knows the number of classes. Call it inside ``mt.fork_rng()``: it draws random numbers."""
    device = next((p.device for p in model.parameters()), None)
    work = private_copy(model, dtype, mode)
    x_dtype = dtype or next((p.dtype for p in work.parameters() if mt.is_floating_point(p.dtype)), None)
    make_batch = BatchMaker(input_shape, x_dtype, device)
    optim = make_optimizer(list(work.parameters()))
    optim.zero_grad(set_to_none=set_to_none)

    def classes(micro, output, y):
        if make_batch.classes is None and isinstance(output, mt.Tensor) and output.ndim == 2:
            make_batch.classes = int(output.shape[1])
            y = make_batch(output.shape[0])[1]
        return y

    training_step(work, optim, make_batch, 2, loss_fn, forward, 1, set_to_none, after_forward=classes,
                  default_loss=_default_loss)
    return work, optim, make_batch
