"""Stage 3 (chapter 05): optimizers and learning-rate schedules, as ``torch.optim``.

An optimizer holds a model's parameters and turns their gradients into
updates. The loop is the same for all of them::

    import minigrad.optim as optim
    optimizer = optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = optim.lr_scheduler.warmup_cosine(optimizer, warmup_steps=100, total_steps=5000)
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()

Optimizers take any iterable of tensors that require grad (or of
parameter-group dicts); this stage imports only :mod:`minigrad.tensor`.

Reading order
-------------
The files that carry the chapter's ideas, in the order to read them (1,135 lines in all):

1. ``optimizer.py`` (415 lines): :class:`Optimizer` — parameter groups,
   per-parameter state, ``zero_grad``, ``step``, ``state_dict``.
2. ``functional.py`` (138 lines): the arithmetic of one step of SGD (momentum,
   Nesterov) and Adam, as functions on arrays: the chapter's exercises.
3. ``sgd.py`` (80 lines): :class:`SGD`, the update wired to the bookkeeping.
4. ``adam.py`` (119 lines): :class:`Adam` and :class:`AdamW` (L2 vs decoupled weight decay).
5. ``lr_scheduler.py`` (280 lines): ``LRScheduler`` and the schedules the
   chapter uses: ``StepLR``, ``CosineAnnealingLR``, ``warmup_cosine`` (built on ``LambdaLR``).
6. ``accumulate.py`` (103 lines): :class:`GradientAccumulator`, the update of a
   big batch from micro-batches.

Extensions (not on the reading path)
------------------------------------
- ``update_kernels.py`` (69 lines): the device extension point: which function
  does an optimizer's arithmetic on a device type (``register_update_kernel``;
  ``minigrad.gpu`` plugs fused kernels in here), and the hooks that hear which update ran.
- ``step_hooks.py`` (98 lines): PyTorch's step pre- and post-hooks (per optimizer and
  global), and the hook that hears of each new state array.
- ``rmsprop.py`` (139 lines): :class:`RMSprop` and its ``rmsprop_update``, for PyTorch compatibility.
- ``lr_scheduler_extras.py`` (170 lines): ``MultiStepLR``, ``ExponentialLR``,
  ``LinearLR`` and ``SequentialLR``, for PyTorch compatibility, built on
  ``lr_scheduler.py``'s ``LRScheduler`` (exported here: ``optim.MultiStepLR``).
"""

from minigrad.optim import functional, lr_scheduler
from minigrad.optim.accumulate import GradientAccumulator
from minigrad.optim.adam import Adam, AdamW
from minigrad.optim.lr_scheduler_extras import ExponentialLR, LinearLR, MultiStepLR, SequentialLR
from minigrad.optim.optimizer import Optimizer, required
from minigrad.optim.rmsprop import RMSprop
from minigrad.optim.sgd import SGD
from minigrad.optim.update_kernels import register_update_kernel, run_update, update_kernel

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "GradientAccumulator", "lr_scheduler", "functional",
    "required", "register_update_kernel", "update_kernel", "run_update",
    "MultiStepLR", "ExponentialLR", "LinearLR", "SequentialLR",
]
