"""Checkpointing by configuration: wrap submodules so that their forward is checkpointed.

::

    model = apply(model, which=nn.Linear)             # every Linear (by type)
    model = apply(model, which=["encoder.2", "head"])  # by name
    model = apply(model, which=lambda name, m: name.startswith("blocks."))
    layer = CheckpointWrapper(block)                  # one module by hand

As PyTorch's ``checkpoint_wrapper`` and ``apply_activation_checkpointing``
(``torch.distributed.algorithms._checkpoint.checkpoint_wrapper``).

Invariants
- ``CheckpointWrapper(m)(*args)`` is ``checkpoint(m, *args)``: the same
  values and gradients as ``m(*args)``, computed again in backward.
- The wrapped module is the wrapper's child ``_checkpoint_wrapped_module``
  (PyTorch's name), so ``parameters()``, ``train()``, ``to()`` reach it;
  ``state_dict`` leaves that level out, so the keys are those of the
  unwrapped model and a state dict loads into either. (``named_parameters``
  shows the extra level, as in PyTorch.) Attributes the wrapper lacks are
  looked up on the wrapped module (``wrapper.weight``).
- :func:`apply` replaces each chosen submodule in place, at the same position
  in its parent (a Sequential keeps its order), never wraps a module twice
  nor one inside a chosen one, and returns the model.
"""

from __future__ import annotations

from minigrad.checkpoint.recompute import checkpoint
from minigrad.nn import Module

__all__ = ["CheckpointWrapper", "apply"]

_WRAPPED = "_checkpoint_wrapped_module"


class CheckpointWrapper(Module):
    """A module whose forward is ``checkpoint(module, *args, **kwargs)``; ``checkpoint_kwargs`` go to each call."""

    def __init__(self, module: Module, **checkpoint_kwargs) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"CheckpointWrapper: expected an nn.Module, got {type(module).__name__}")
        self.add_module(_WRAPPED, module)
        self.checkpoint_kwargs = checkpoint_kwargs

    @property
    def module(self) -> Module:
        return self._modules[_WRAPPED]

    def forward(self, *args, **kwargs):
        return checkpoint(self.module, *args, **self.checkpoint_kwargs, **kwargs)

    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        return self.module.state_dict(destination, prefix, keep_vars)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules")
            if modules is None or _WRAPPED not in modules:
                raise
            return getattr(modules[_WRAPPED], name)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.checkpoint_kwargs.items())


def apply(model: Module, which, **checkpoint_kwargs) -> Module:
    """``model`` with the submodules ``which`` selects replaced by :class:`CheckpointWrapper`\\ s of them.

    ``which``: a predicate ``which(name, module) -> bool``, a list of dotted names (``"layers.3"``), or a
    module type (or tuple of types). The model itself is never wrapped (use ``CheckpointWrapper(model)``).
    """
    if not isinstance(model, Module):
        raise TypeError(f"checkpoint.apply: expected an nn.Module to configure, got {type(model).__name__}")
    chosen = _chooser(model, which)
    wrapped = [name for name, m in model.named_modules() if name and isinstance(m, CheckpointWrapper)]
    for name, module in list(model.named_modules()):
        if not name or name in wrapped or _inside(name, wrapped) or not chosen(name, module):
            continue
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        parent._modules[child] = CheckpointWrapper(module, **checkpoint_kwargs)  # same place in the order
        wrapped.append(name)
    return model


def _chooser(model: Module, which):
    if isinstance(which, type) or (isinstance(which, tuple) and which and all(isinstance(t, type) for t in which)):
        return lambda name, module: isinstance(module, which)
    if isinstance(which, (list, tuple, set)):
        names = set(which)
        known = {name for name, _ in model.named_modules() if name}
        unknown = sorted(n for n in names if n not in known)
        if unknown:
            raise KeyError(
                f"checkpoint.apply: no submodule named {', '.join(map(repr, unknown))} in "
                f"{type(model).__name__}; its submodules are: {', '.join(sorted(known)) or '(none)'}"
            )
        return lambda name, module: name in names
    if callable(which):
        return which
    raise TypeError(
        f"checkpoint.apply: which must be a predicate (name, module) -> bool, a list of submodule names "
        f"or a module type, got {type(which).__name__}"
    )


def _inside(name: str, prefixes) -> bool:
    return any(name.startswith(p + ".") for p in prefixes)
