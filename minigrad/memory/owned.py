"""The tensors a model or an optimizer owns, each with the allocation tag it is counted under.

A model or optimizer built before a tracker (or a simulated card) starts
listening allocated its memory unseen; both register it from these lists when
they first meet it. Invariant: every tensor is paired with one of the tags
``parameter``, ``gradient``, ``buffer`` or ``optimizer_state``; a missing
gradient (``None``) is listed too and skipped by the caller.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["module_tensors", "optimizer_tensors"]


def module_tensors(module) -> Iterator[tuple[object, str]]:
    """A module's parameters, their gradients and its buffers (nothing for an object that is not a module)."""
    if not hasattr(module, "parameters"):
        return
    for p in module.parameters():
        yield p, "parameter"
        yield p.grad, "gradient"
    for b in module.buffers():
        yield b, "buffer"


def optimizer_tensors(optimizer) -> Iterator[tuple[object, str]]:
    """An optimizer's parameters, their gradients and its per-parameter state tensors."""
    for group in getattr(optimizer, "param_groups", ()):
        for p in group["params"]:
            yield p, "parameter"
            yield p.grad, "gradient"
            for value in optimizer.state.get(p, {}).values():
                if hasattr(value, "_data"):
                    yield value, "optimizer_state"
