"""``Optimizer``: the bookkeeping every optimizer shares, as in ``torch.optim.Optimizer``.

An optimizer owns

- ``param_groups``: a list of dicts. Each has ``"params"`` (a list of
  tensors) and one entry per hyperparameter (``"lr"``, ``"momentum"``...), so
  different groups can train with different settings (a smaller learning rate
  for a pretrained backbone, no weight decay for biases...). Hyperparameters
  a group does not set come from ``defaults``.
- ``state``: a dict from parameter to a dict of what the optimizer remembers
  about it between steps (a momentum buffer, Adam's moment estimates, a step
  count). It is filled lazily, on a parameter's first step.

Subclasses implement ``step()`` by walking the groups and calling an update
rule (from :mod:`minigrad.optim.functional`, looked up through
:mod:`minigrad.optim.update_kernels`) on the raw arrays of each parameter
that has a gradient. Updates happen in place, under ``no_grad()``, and bump
the version counters of what they change, exactly as in-place tensor ops do
(so autograd can still catch a saved tensor that an optimizer step changed).

State buffers live on their parameter's device: created there, moved there
by ``step()`` if the parameter moved since (``model.to("cuda")`` after some
steps; PyTorch would fail), and copied there by ``load_state_dict`` whatever
device saved them. Each new state array is shown to the state-init hooks
(``step_hooks.register_state_init_hook``) before it becomes a tensor.

Step hooks, as in PyTorch (``register_step_pre_hook``, ``register_step_post_hook``
and the global ones): see :mod:`minigrad.optim.step_hooks`.

Deviations from PyTorch, all for teaching or simplicity:

- every parameter must require grad (PyTorch silently accepts frozen ones):
  pass ``[p for p in model.parameters() if p.requires_grad]`` when fine-tuning;
- ``state["step"]`` is a Python ``int`` (PyTorch keeps a 0-d tensor);
- ``load_state_dict`` copies the loaded state into fresh tensors (PyTorch may
  alias them), and checks shapes and hyperparameter names;
- a parameter listed twice is an error (PyTorch warns).
"""

from __future__ import annotations

import math
import numbers
from collections import defaultdict
from typing import Any, Callable, Iterable

import numpy as np

from minigrad.tensor import Tensor, enable_grad, no_grad
from minigrad.tensor.backend import array_module, cpu, transfer
from minigrad.optim import step_hooks as _hooks
from minigrad.optim.step_hooks import (
    RemovableHandle,
    new_state as _new_state,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
    register_state_init_hook,
)

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "register_state_init_hook"]

class _Required:
    """Marks a hyperparameter that has no default: every group must set it."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


# ---------------------------------------------------------------------------------- helpers


def _bump(*tensors) -> None:
    """Record an in-place change, as in-place tensor ops do (skips ``None``)."""
    for t in tensors:
        if t is not None:
            t._version_counter.value += 1


def _describe(p: Tensor) -> str:
    return f"shape {tuple(p.shape)}, {p.dtype}"


def check_number(optimizer: str, name: str, value, low: float = 0.0, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, hint: str = "") -> None:
    """Raise ``ValueError("<optimizer>: invalid <name>=...")`` unless ``value`` is a finite number in range."""
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    interval = f"{lo}{low:g}, {high:g}{hi}" if high is not None else (f"> {low:g}" if low_open else f">= {low:g}")
    advice = f" (typical: {hint})" if hint else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{optimizer}: invalid {name}={value!r}; it must be a finite number {interval}{advice}")
    bad = value < low or (low_open and value == low)
    if high is not None:
        bad = bad or value > high or (high_open and value == high)
    if bad:
        raise ValueError(f"{optimizer}: invalid {name}={value!r}; it must be {'in ' if high is not None else ''}{interval}{advice}")


def _check_current_lr(optimizer: "Optimizer", index: int, lr) -> None:
    """Refuse a nan, infinite or negative ``lr`` set by editing ``param_groups`` after construction."""
    if type(lr) is float and 0.0 <= lr < math.inf:  # the usual case, checked in nanoseconds
        return
    if not isinstance(lr, bool) and isinstance(lr, numbers.Real) and math.isfinite(lr) and lr >= 0:
        return
    raise ValueError(
        f"{type(optimizer).__name__}.step: parameter group {index} has lr={lr!r}; a learning rate must be a "
        f"finite number >= 0 (was param_groups[{index}]['lr'] set to it after the optimizer was created?)"
    )


def _as_state_tensor(optimizer, value, param: Tensor) -> Tensor:
    """A fresh state tensor with ``value``'s numbers, ``param``'s dtype and device."""
    host = value._host() if isinstance(value, Tensor) else np.asarray(value)
    host = np.array(host, dtype=param.dtype, copy=True)
    return _new_state(optimizer, param, transfer(host, cpu, param.device))


def _follow_parameter(optimizer, p: Tensor, state: dict[str, Any]) -> None:
    """Move ``p``'s state tensors to ``p``'s device if ``p`` moved (``model.to("cuda")`` after some steps)."""
    for key, value in state.items():
        if isinstance(value, Tensor) and value._device is not p._device:
            state[key] = _new_state(optimizer, p, transfer(value._data, value._device, p._device))


class Optimizer:
    """Base class of all optimizers (``SGD``, ``Adam``, ``AdamW``, ``RMSprop``).

    ``params`` is an iterable of tensors (``model.parameters()``) or of dicts
    (*parameter groups*), each with a ``"params"`` entry and any
    hyperparameters that should differ from ``defaults`` in that group::

        Adam([{"params": backbone, "lr": 1e-4},
              {"params": head}], lr=1e-3)        # head uses the default 1e-3

    Every tensor must be a leaf that requires grad. The typical loop::

        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        name = type(self).__name__
        self.defaults = dict(defaults)
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                f"{name}: params must be an iterable of tensors or of dicts (parameter groups), got a single "
                f"tensor ({_describe(params)}); wrap it in a list: {name}([p], ...)"
            )
        if isinstance(params, dict):
            raise TypeError(f"{name}: params must be an iterable of parameter-group dicts; wrap the dict in a list: [group]")
        if isinstance(params, (set, frozenset)):
            raise TypeError(_set_message(name))
        try:
            params = list(params)
        except TypeError:
            raise TypeError(
                f"{name}: params must be an iterable of tensors or of dicts (parameter groups), "
                f"got {type(params).__name__}"
            ) from None
        if not params:
            raise ValueError(
                f"{name}: got an empty parameter list, so there is nothing to optimize. Pass "
                f"model.parameters() (after the model has layers) or a list of tensors created with "
                f"requires_grad=True"
            )
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    # ------------------------------------------------------------------------------ groups

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (e.g. layers unfrozen during fine-tuning) with its own hyperparameters."""
        name = type(self).__name__
        where = f"parameter group {len(self.param_groups)}"
        if not isinstance(param_group, dict):
            raise TypeError(
                f"{name}: a parameter group must be a dict with a 'params' entry, got "
                f"{type(param_group).__name__}; mix either tensors or dicts in params, not both"
            )
        if "params" not in param_group:
            raise ValueError(f"{name}: {where} has no 'params' entry; write {{'params': tensors, 'lr': ...}}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(_set_message(name))
        else:
            params = list(params)
        if not params:
            raise ValueError(f"{name}: {where} has an empty 'params' list; there is nothing to optimize in it")
        seen: set[int] = set()
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"{name}: can only optimize tensors, but parameter {i} of {where} is a "
                    f"{type(p).__name__}; pass tensors created with requires_grad=True"
                )
            if p.grad_fn is not None:
                raise ValueError(
                    f"{name}: parameter {i} of {where} ({_describe(p)}) is not a leaf: it was computed by "
                    f"{p.grad_fn.name}, so an update to it would be lost. Optimize the tensor(s) it was "
                    f"computed from, or make a leaf with x.detach().requires_grad_()"
                )
            if not p.requires_grad:
                raise ValueError(
                    f"{name}: parameter {i} of {where} ({_describe(p)}) does not require grad, so it would "
                    f"never get a gradient. Create it with requires_grad=True (or call p.requires_grad_()), "
                    f"or leave it out: [p for p in model.parameters() if p.requires_grad]"
                )
            if id(p) in seen:
                raise ValueError(f"{name}: parameter {i} of {where} ({_describe(p)}) is listed twice in the group")
            seen.add(id(p))
        for g, group in enumerate(self.param_groups):
            if any(id(q) in seen for q in group["params"]):
                raise ValueError(
                    f"{name}: some parameters of {where} are already in parameter group {g}; "
                    f"each parameter may appear in one group only"
                )
        group = dict(param_group)
        group["params"] = params
        for key, default in self.defaults.items():
            if default is required and key not in group:
                raise ValueError(
                    f"{name}: {where} does not set {key!r}, which has no default; pass {key}=... to "
                    f"{name}(...) or put it in the group dict"
                )
            group.setdefault(key, default)
        self._check_group(group)
        self.param_groups.append(group)

    def _check_group(self, group: dict[str, Any]) -> None:
        """Validate a group's hyperparameters; subclasses raise ValueError naming the bad one."""

    # ------------------------------------------------------------------------------ the step

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of all parameters: drop them (default, frees memory) or fill them with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    with no_grad():
                        p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if a closure is given.

        ``closure`` re-evaluates the model and returns the loss (it should
        zero the gradients and call ``backward()``); it runs with gradients
        enabled before the update.
        """
        if _hooks.pre or _hooks.post or self._step_hooks is not None:
            return _hooks.step_with_hooks(self, closure)
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._update_all()
        return loss

    _step_hooks = None  # this optimizer's own (pre-hooks, post-hooks), once one is registered

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` before each ``step``; it may return ``(new_args, new_kwargs)``."""
        return _hooks.register(self._own_step_hooks()[0], hook, f"{type(self).__name__}.register_step_pre_hook")

    def register_step_post_hook(self, hook: Callable, *, always_call: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return _hooks.register(self._own_step_hooks()[1], hook, f"{type(self).__name__}.register_step_post_hook",
                               always_call)

    def _own_step_hooks(self) -> tuple[dict, dict]:
        if self._step_hooks is None:
            self._step_hooks = ({}, {})
        return self._step_hooks

    def _update_all(self) -> None:
        with no_grad():
            for i, group in enumerate(self.param_groups):
                _check_current_lr(self, i, group.get("lr", 0.0))
                for p in group["params"]:
                    if p.grad is not None:
                        state = self.state[p]
                        if state:
                            _follow_parameter(self, p, state)
                        self._update(p, state, group)

    def _update(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        """Update one parameter ``p`` (whose ``.grad`` is set) in place; subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__} does not implement _update(p, state, group)")

    def _zeros_state(self, p: Tensor) -> Tensor:
        """A zero state buffer like ``p``."""
        return _new_state(self, p, array_module(p._data).zeros_like(p._data))

    def _wrap_state(self, array, p: Tensor) -> Tensor:
        """Wrap an array made during a step (e.g. a first momentum buffer) as a state tensor."""
        return _new_state(self, p, array)

    # ------------------------------------------------------------------------------ saving

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout, with parameters replaced by their position.

        ``{"state": {index: {"step": ..., "exp_avg": tensor, ...}},
        "param_groups": [{"lr": ..., ..., "params": [index, ...]}]}``: indices
        count the parameters through all groups in order. As in PyTorch, the
        state tensors are the optimizer's own (not copies): save the dict, or
        ``copy.deepcopy`` it, before training on if you want a snapshot.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index and s}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (for an optimizer built over the same parameters).

        The groups must match in number and size; hyperparameters are taken
        from the saved groups. State tensors are copied, converted to each
        parameter's dtype and device. Nothing changes if an error is raised.
        String keys ("0") are accepted for the indices, as JSON-based formats
        write them.
        """
        name = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(f"{name}: expected a dict with 'state' and 'param_groups' (from optimizer.state_dict()), got {got}")
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"{name}: the saved state has {len(saved_groups)} parameter group(s) but this optimizer has "
                f"{len(self.param_groups)}; build the optimizer with the same groups, in the same order, "
                f"as the one that was saved"
            )
        by_index: dict[int, Tensor] = {}
        new_groups = []
        for g, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"{name}: parameter group {g} has {len(saved['params'])} parameter(s) in the saved state "
                    f"but {len(group['params'])} in this optimizer; was it saved for a different model?"
                )
            missing = [k for k in self.defaults if k not in saved]
            if missing:
                raise ValueError(
                    f"{name}: saved parameter group {g} has no {', '.join(map(repr, missing))}; was it saved "
                    f"by a different kind of optimizer (this one is {type(self).__name__})?"
                )
            for index, p in zip(saved["params"], group["params"]):
                by_index[int(index)] = p
            new_group = {k: v for k, v in saved.items() if k != "params"}
            new_group["params"] = group["params"]
            self._check_group(new_group)
            new_groups.append(new_group)
        new_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for key, values in state_dict["state"].items():
            try:
                p = by_index[int(key)]
            except (KeyError, ValueError):
                raise ValueError(
                    f"{name}: the saved state has an entry for parameter {key!r}, which is in none of the "
                    f"saved parameter groups"
                ) from None
            restored = {}
            for k, v in values.items():
                if k == "step":
                    restored[k] = int(v.item() if hasattr(v, "item") else v)
                elif isinstance(v, (Tensor, np.ndarray)):
                    if tuple(v.shape) != tuple(p.shape):
                        raise ValueError(
                            f"{name}: state {k!r} of parameter {key} has shape {tuple(v.shape)} but the "
                            f"parameter has shape {tuple(p.shape)}; was it saved for a different model?"
                        )
                    restored[k] = _as_state_tensor(self, v, p)
                else:
                    restored[k] = v
            new_state[p] = restored
        self.param_groups = new_groups
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _set_message(name: str) -> str:
    return (
        f"{name}: parameters must come in an ordered collection (a list), not a set: the order of a set "
        f"changes between runs, and state_dict() refers to parameters by position. Use list(...) "
    )
