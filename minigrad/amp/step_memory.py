"""One training step's tracked memory, in the figures chapter 09 compares across precisions.

``step_memory(step, model, optimizer)`` runs ``step()`` once inside
``minigrad.memory.track(model, optimizer)`` and returns:

- ``peak`` and ``peak_by_category``: the tracker's (bytes);
- ``activation``: the largest number of activation bytes alive at once
  during the step (the end of the forward pass, for a network trained by
  backpropagation) - the figure that halves in float16;
- ``model_state``: parameter + gradient + optimizer_state bytes alive when
  the step returns (the gradients stay until the next ``zero_grad``).

Casts made by autocast are counted in their source's category (:mod:`.cast_accounting`).
"""

from __future__ import annotations

from minigrad.memory import track
from minigrad.memory.timeline import category_totals

__all__ = ["step_memory"]


def step_memory(step, model=None, optimizer=None) -> dict:
    """The tracked figures of one call of ``step()`` (see the module docstring)."""
    with track(model, optimizer) as mem:
        step()
    totals = category_totals(mem.timeline, mem.baseline_by_category)
    now = mem.by_category()
    return {
        "peak": mem.peak,
        "peak_by_category": dict(mem.peak_by_category),
        "activation": max((t["activation"] for t in totals), default=0),
        "model_state": now["parameter"] + now["gradient"] + now["optimizer_state"],
    }
