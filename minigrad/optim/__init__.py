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

- :class:`Optimizer`: parameter groups, per-parameter state, ``zero_grad``,
  ``step``, ``add_param_group``, ``state_dict`` / ``load_state_dict``;
- :class:`SGD` (momentum, Nesterov), :class:`Adam`, :class:`AdamW`,
  :class:`RMSprop`; the arithmetic of each is a function on arrays in
  :mod:`.functional` (exercises 5.3 and 5.4);
- :mod:`.lr_scheduler`: ``StepLR``, ``MultiStepLR``, ``ExponentialLR``,
  ``CosineAnnealingLR``, ``LinearLR``, ``LambdaLR``, ``SequentialLR``,
  ``warmup_cosine``;
- :class:`GradientAccumulator`: the update of a big batch from micro-batches.

Optimizers take any iterable of tensors that require grad (or of
parameter-group dicts); this stage imports only :mod:`minigrad.tensor`.
"""

from minigrad.optim import functional, lr_scheduler
from minigrad.optim.accumulate import GradientAccumulator
from minigrad.optim.adam import Adam, AdamW
from minigrad.optim.optimizer import Optimizer, register_update_kernel, required, update_kernel
from minigrad.optim.rmsprop import RMSprop
from minigrad.optim.sgd import SGD

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "GradientAccumulator", "lr_scheduler", "functional",
    "required", "register_update_kernel", "update_kernel",
]
