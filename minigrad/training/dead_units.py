"""Dead ReLUs: the units of each ReLU layer that output 0 for every example seen.

A ReLU unit whose input is negative for every example outputs 0 and gets a
zero gradient, so no step can revive it: the layer trains with fewer units
than it has. ``count_dead_units(model, batches)`` runs the batches through
the model (without a graph, in the model's current mode) with a forward hook
on every ``nn.ReLU`` module and reports, per ReLU, the units whose output was
exactly 0 for every example of every batch::

    for name, layer in count_dead_units(model, [x]).items():
        print(name, layer.dead, "of", layer.units, f"({layer.fraction:.0%})")

A unit is one index of dimension 1 (a feature of a ``(N, F)`` output, a
channel of a ``(N, C, H, W)`` one: dead when 0 at every position). A ReLU
applied as a function (``x.relu()``) has no module, so no hook sees it.

Invariants
- Exact zeros only: a unit that output 1e-30 once is alive.
- The hooks are removed afterwards, also when a forward raised; the model's
  parameters, buffers and mode are as they were (BatchNorm in training mode
  still counts the batches, as any forward does).
"""

from __future__ import annotations

from dataclasses import dataclass

from minigrad.nn.activation import ReLU
from minigrad.tensor import Tensor, no_grad
from minigrad.tensor.backend import array_module

__all__ = ["DeadUnits", "count_dead_units"]


@dataclass(frozen=True)
class DeadUnits:
    """One ReLU layer: how many of its ``units`` output exact 0 on all ``examples``, and which."""

    units: int
    dead: int
    examples: int
    dead_indices: tuple[int, ...]

    @property
    def fraction(self) -> float:
        return self.dead / self.units if self.units else 0.0


def _inputs(batches):
    """The model inputs of ``batches``: a tensor (one batch), or an iterable of tensors or of ``(x, y)`` pairs."""
    if isinstance(batches, Tensor):
        yield batches
        return
    for batch in batches:
        yield batch[0] if isinstance(batch, (tuple, list)) else batch


def count_dead_units(model, batches) -> dict[str, DeadUnits]:
    """Per ``nn.ReLU`` of ``model`` (by its ``named_modules`` name): the units that output 0 for every example."""
    relus = [(name, m) for name, m in model.named_modules() if isinstance(m, ReLU)]
    if not relus:
        raise ValueError(f"count_dead_units: {type(model).__name__} has no nn.ReLU module to watch (a ReLU applied as "
                         f"a function, x.relu(), has no module a hook can see); build the model with nn.ReLU()")
    alive: dict[str, object] = {}  # name -> boolean array over the units: nonzero at least once
    examples: dict[str, int] = {name: 0 for name, _ in relus}

    def hook_for(name: str):
        def hook(module, args, output) -> None:
            a = output._data
            if a.ndim < 2:
                raise ValueError(f"count_dead_units: ReLU {name!r} gave an output of shape {tuple(a.shape)}; units "
                                 f"are counted along dimension 1 of a batched (N, units, ...) output")
            xp = array_module(a)
            seen = (a != 0).any(axis=tuple(d for d in range(a.ndim) if d != 1))
            if name in alive and alive[name].shape != seen.shape:
                raise ValueError(f"count_dead_units: ReLU {name!r} had {alive[name].shape[0]} units in one batch and "
                                 f"{seen.shape[0]} in another; pass batches of one model input shape")
            alive[name] = seen if name not in alive else xp.logical_or(alive[name], seen)
            examples[name] += a.shape[0]

        return hook

    handles = [m.register_forward_hook(hook_for(name)) for name, m in relus]
    batches_seen = 0
    try:
        with no_grad():
            for x in _inputs(batches):
                model(x)
                batches_seen += 1
    finally:
        for handle in handles:
            handle.remove()
    if batches_seen == 0:
        raise ValueError("count_dead_units: no batch was given; pass a tensor, or a list (or loader) of batches")
    report = {}
    for name, _ in relus:
        if name not in alive:
            raise ValueError(f"count_dead_units: ReLU {name!r} never ran in the model's forward; is it used?")
        dead = [int(i) for i in array_module(alive[name]).flatnonzero(~alive[name]).tolist()]
        report[name] = DeadUnits(units=int(alive[name].shape[0]), dead=len(dead), examples=examples[name],
                                 dead_indices=tuple(dead))
    return report
