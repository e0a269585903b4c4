"""Watch every layer while a model trains: its gradient norm per step, its output's statistics per forward.

::

    with LayerMonitor(model, optimizer) as monitor:
        fit(model, optimizer, loader, loss_fn, epochs=1)
    monitor.grad_norms["fc1"]            # [|grad| of fc1's own parameters at step 1, 2, ...]
    monitor.activations["relu1"][-1]     # ActivationStats(step=..., mean, std, zero_fraction, max_abs)

On entry a forward hook goes on every module of ``model.named_modules()``
(the root included, under its name ``""``); after each forward of a module
in training mode it records the :class:`ActivationStats` of the module's
output (a tensor output; other outputs are skipped). Forwards in eval mode
(``evaluate``) are not recorded. After each backward, ``record_gradients()``
records, for every module that owns parameters itself, the norm
``sqrt(sum of g**2)`` over its own parameters (``recurse=False``: a
``Sequential``'s norm is not its layers' norms again). Given an optimizer,
an optimizer step pre-hook calls it before each ``step()``, so ``fit`` needs
no change; without one, call it yourself after ``backward()``. A layer none
of whose parameters has a gradient at that moment (frozen, or unused)
records None. A block that ``checkpoint()`` recomputes in backward runs
its modules' forwards again: they are recorded again, with the same step.

Invariants
- Every number is a Python float computed from the arrays (in float64) inside
  the hook: no tensor is kept, no graph is built, nothing outlives the hook.
- Every hook registered on entry is removed on exit, also when the block
  raised; the model then runs exactly as it did before.
- One monitor is active at most once: entering it while it is active raises.
  Entering it again after it exited resumes the records (step numbers go on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from minigrad.tensor import Tensor
from minigrad.tensor.backend import array_module

__all__ = ["ActivationStats", "LayerMonitor", "activation_stats", "gradient_norm"]


@dataclass(frozen=True)
class ActivationStats:
    """One forward's output of one module: mean, population std, share of exact zeros, largest magnitude.

    ``step`` is the number of gradient records before this forward (0 for the
    first step's forward). An empty output has NaN statistics.
    """

    step: int
    mean: float
    std: float
    zero_fraction: float
    max_abs: float


def activation_stats(array, step: int = 0) -> ActivationStats:
    """The statistics of ``array`` (any float dtype, any device) in float64; ``zero_fraction`` counts exact zeros."""
    ### BEGIN SOLUTION 11.3 | what the forward hook records of an output: four floats computed now in float64 (mean, population std, the share of elements exactly 0, no tolerance: a dead ReLU outputs exact zeros; the largest absolute value), so the array itself can be let go; an empty output has NaN statistics
    xp = array_module(array)
    x = xp.asarray(array).astype(np.float64)
    if x.size == 0:
        return ActivationStats(step, math.nan, math.nan, math.nan, math.nan)
    return ActivationStats(step, float(x.mean()), float(x.std()), float(xp.count_nonzero(x == 0)) / x.size,
                           float(xp.abs(x).max()))
    ### END SOLUTION


def gradient_norm(parameters) -> float | None:
    """``sqrt(sum of g**2)`` over the gradients of ``parameters`` that have one (float64); None when none has."""
    ### BEGIN SOLUTION 11.3 | the norm of one layer is taken over that layer's own parameters only (not the whole model's): the square root of the sum of the squares of every element of every gradient present, in float64; None (not 0) when no parameter has a gradient, since nothing reached the layer
    total, seen = 0.0, False
    for p in parameters:
        if p.grad is not None:
            g = p.grad._data
            total += float(array_module(g).sum(g.astype(np.float64) ** 2))
            seen = True
    return math.sqrt(total) if seen else None
    ### END SOLUTION


class LayerMonitor:
    """Per-layer gradient norms and activation statistics of ``model`` while the ``with`` block runs.

    ``grad_norms[name]``: one float (or None) per ``record_gradients()``;
    ``activations[name]``: one :class:`ActivationStats` per recorded forward;
    ``steps``: how many gradient records so far. Names are those of
    ``model.named_modules()``.
    """

    def __init__(self, model, optimizer=None) -> None:
        if not hasattr(model, "named_modules") or not hasattr(model, "register_forward_hook"):
            raise TypeError(f"LayerMonitor: expected a minigrad Module, got {type(model).__name__}")
        if optimizer is not None and not hasattr(optimizer, "register_step_pre_hook"):
            raise TypeError(f"LayerMonitor: optimizer must be a minigrad optimizer (with register_step_pre_hook), "
                            f"got {type(optimizer).__name__}; or pass none and call record_gradients() after backward")
        self.model, self.optimizer = model, optimizer
        self.modules = dict(model.named_modules())
        self.layers = {name: list(m.parameters(recurse=False)) for name, m in self.modules.items()}
        self.layers = {name: params for name, params in self.layers.items() if params}
        self.grad_norms: dict[str, list[float | None]] = {name: [] for name in self.layers}
        self.activations: dict[str, list[ActivationStats]] = {name: [] for name in self.modules}
        self.steps = 0
        self.handles: list = []
        self.active = False

    def __enter__(self) -> LayerMonitor:
        if self.active:
            raise RuntimeError("LayerMonitor: this monitor is already active (its hooks are on the model); leave its "
                               "with block first, or make a second LayerMonitor")
        self.active = True
        try:
            self._register_hooks()
        except BaseException:
            if self.handles:  # the hooks registered before the error come off again
                self._remove_hooks()
            self.active = False
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._remove_hooks()
        self.active = False

    def _register_hooks(self) -> None:
        """A forward hook on every module (recording its output's statistics), and the optimizer's pre-step hook."""
        ### BEGIN SOLUTION 11.3 | on entry: one forward hook per module of self.modules, made by self._forward_hook(name) (a closure made in the loop itself would see the last name only); given an optimizer, a step pre-hook that calls record_gradients; keep every handle in self.handles so exit can remove them all
        for name, module in self.modules.items():
            self.handles.append(module.register_forward_hook(self._forward_hook(name)))
        if self.optimizer is not None:
            self.handles.append(self.optimizer.register_step_pre_hook(lambda optimizer, args, kwargs: self.record_gradients()))
        ### END SOLUTION

    def _forward_hook(self, name: str):
        """The forward hook of the module named ``name``: it appends its output's statistics to its records."""
        ### BEGIN SOLUTION 11.3 | the hook for one module: when the module is in training mode and its output is a Tensor, append to self.activations[name] the activation_stats of the output's array (output._data) at step self.steps; keep no reference to the output, and return None so the output passes unchanged
        records = self.activations[name]

        def hook(module, args, output) -> None:
            if module.training and isinstance(output, Tensor):
                records.append(activation_stats(output._data, self.steps))

        return hook
        ### END SOLUTION

    def record_gradients(self) -> None:
        """Record each layer's gradient norm now (after ``backward()``, before the optimizer step) and count a step."""
        ### BEGIN SOLUTION 11.3 | after backward: for each layer of self.layers (a module and its own parameters, not its children's), append the gradient_norm of those parameters to that layer's list in self.grad_norms; then count the step (self.steps), which the activations recorded from now on carry
        for name, params in self.layers.items():
            self.grad_norms[name].append(gradient_norm(params))
        self.steps += 1
        ### END SOLUTION

    def _remove_hooks(self) -> None:
        """Take off every hook this monitor put on (each once); the model is as it was before entry."""
        ### BEGIN SOLUTION 11.3 | on exit (also when the block raised): remove every handle registered on entry, forward hooks and the optimizer's hook alike, and forget them, so that a second exit or a re-entry starts clean
        while self.handles:
            self.handles.pop().remove()
        ### END SOLUTION

    def summary(self) -> str:
        """One line per layer: its last gradient norm and its last activation statistics."""
        lines = [f"LayerMonitor: {self.steps} step(s) recorded"]
        for name in self.modules:
            parts = []
            if name in self.layers and self.grad_norms[name]:
                g = self.grad_norms[name][-1]
                parts.append("no gradient" if g is None else f"|grad| {g:.3g}")
            if self.activations[name]:
                a = self.activations[name][-1]
                parts.append(f"mean {a.mean:.3g}, std {a.std:.3g}, zeros {a.zero_fraction:.1%}, max|x| {a.max_abs:.3g}")
            if parts:
                lines.append(f"  {name or '(model)'}: " + "; ".join(parts))
        return "\n".join(lines)

    def __repr__(self) -> str:
        state = "active" if self.active else "inactive"
        return f"LayerMonitor({len(self.modules)} modules, {len(self.layers)} with parameters, {self.steps} steps, {state})"
