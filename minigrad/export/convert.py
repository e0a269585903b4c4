"""``to_torch(model)`` and ``from_torch(module)``: the same network in the other library.

The result is a new, independent model: the same tree of layers under the
same names, the same constructor arguments, copies of every parameter and
buffer (values, dtypes and ``requires_grad`` flags), and each module's
``training`` flag. Its outputs equal the original's up to the two
libraries' rounding (the tests measure it), and its ``state_dict`` has the
same keys.

What converts: the layers of :mod:`minigrad.export.layer_table` and the
containers ``Sequential``, ``ModuleList`` and ``ModuleDict``, nested in any
way, on the CPU. A module of one's own class is refused, with its path: its
``forward`` is Python code no converter can translate. For such a model,
write the same class in the other library and move the weights with
``state_dict_to_torch`` / ``state_dict_from_torch`` (the keys match).

Every check that needs no PyTorch runs before PyTorch is imported, so a
refused model is refused in the same words with or without it.
"""

from __future__ import annotations

from collections import OrderedDict

from minigrad.export.layer_table import CONTAINERS, LAYERS
from minigrad.export.rebuild import Side, rebuild, refuse_unsupported
from minigrad.export.tensors import check_minigrad_tensor, minigrad_to_torch, torch_to_minigrad
from minigrad.export.torch_import import import_torch
from minigrad.nn import Module
from minigrad.tensor import Tensor

__all__ = ["to_torch", "from_torch", "state_dict_to_torch", "state_dict_from_torch"]

_PAIRS = LAYERS + CONTAINERS
_BY_MINIGRAD_CLASS = {pair.minigrad_class: pair for pair in _PAIRS}
# a torch.nn.Module's own hooks that run in a call (its state_dict hooks change no output)
_TORCH_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _is_torch_module(obj) -> bool:
    """Is ``obj`` a ``torch.nn.Module``? Asked without importing PyTorch (if ``obj`` is one, it is imported)."""
    return any(cls.__module__ == "torch.nn.modules.module" and cls.__name__ == "Module" for cls in type(obj).__mro__)


def _to_torch_side(torch) -> Side:
    return Side(
        who="to_torch",
        target="PyTorch",
        pair_of=lambda module: _BY_MINIGRAD_CLASS.get(type(module)),
        target_class=lambda pair: pair.torch_class(torch),
        copy_tensor=lambda value, where: minigrad_to_torch(value, torch, "to_torch", where),
        has_hooks=lambda module: bool(module._hooks),
        state_dict_route="torch_model.load_state_dict(minigrad.export.state_dict_to_torch(model.state_dict()))",
    )


def _from_torch_side(torch) -> Side:
    by_torch_class = {pair.torch_class(torch): pair for pair in _PAIRS}
    return Side(
        who="from_torch",
        target="minigrad",
        pair_of=lambda module: by_torch_class.get(type(module)),
        target_class=lambda pair: pair.minigrad_class,
        copy_tensor=lambda value, where: torch_to_minigrad(value, torch, "from_torch", where),
        has_hooks=lambda module: any(getattr(module, name, None) for name in _TORCH_HOOKS),
        state_dict_route="model.load_state_dict(minigrad.export.state_dict_from_torch(module.state_dict()))",
    )


def to_torch(model: Module):
    """A ``torch.nn.Module`` equal to minigrad ``model``: same layers, weights, buffers and modes (a copy).

    Raises ``TypeError`` if ``model`` is not a minigrad Module,
    :class:`UnsupportedLayerError` naming every module that does not convert,
    ``ValueError`` for a model off the CPU, and ``ImportError`` if PyTorch is
    not installed.
    """
    if not isinstance(model, Module):
        hint = "; it is a PyTorch module already (from_torch goes the other way)" if _is_torch_module(model) else ""
        raise TypeError(f"to_torch: expected a minigrad.nn.Module, got {type(model).__name__}{hint}")
    refuse_unsupported(model, _to_torch_side(torch=None))
    for kind, named in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, value in named:
            check_minigrad_tensor(value, "to_torch", f"{kind} {name!r}")
    torch = import_torch("to_torch")
    return rebuild(model, _to_torch_side(torch))


def from_torch(module) -> Module:
    """A minigrad Module equal to ``torch.nn.Module`` ``module``: same layers, weights, buffers and modes (a copy).

    Raises ``ImportError`` if PyTorch is not installed, ``TypeError`` if
    ``module`` is not a ``torch.nn.Module``, :class:`UnsupportedLayerError`
    naming every module (or layer setting, e.g. ``groups=2``) that minigrad
    lacks, and ``ValueError`` for a module off the CPU.
    """
    torch = import_torch("from_torch")
    if not isinstance(module, torch.nn.Module):
        hint = "; it is a minigrad module already (to_torch goes the other way)" if isinstance(module, Module) else ""
        raise TypeError(f"from_torch: expected a torch.nn.Module, got {type(module).__name__}{hint}")
    side = _from_torch_side(torch)
    refuse_unsupported(module, side)
    return rebuild(module, side)


def _check_state_dict(state_dict, who: str, tensor_type: type, type_name: str, origin: str) -> None:
    if not hasattr(state_dict, "items"):
        raise TypeError(f"{who}: expected a dict of tensors ({origin}.state_dict()), got {type(state_dict).__name__}")
    for key, value in state_dict.items():
        if not isinstance(value, tensor_type):
            raise TypeError(f"{who}: entry {key!r} is a {type(value).__name__}, not a {type_name}; "
                            f"pass {origin}.state_dict()")


def state_dict_to_torch(state_dict) -> OrderedDict:
    """Copies of a minigrad ``state_dict``'s tensors as ``torch.Tensor`` s, under the same keys.

    For a model of one's own class: ``torch_model.load_state_dict(state_dict_to_torch(model.state_dict()))``.
    """
    _check_state_dict(state_dict, "state_dict_to_torch", Tensor, "minigrad Tensor", "model")
    torch = import_torch("state_dict_to_torch")
    return OrderedDict(
        (key, minigrad_to_torch(value.detach(), torch, "state_dict_to_torch", f"entry {key!r}"))
        for key, value in state_dict.items()
    )


def state_dict_from_torch(state_dict) -> OrderedDict:
    """Copies of a PyTorch ``state_dict``'s tensors as minigrad tensors, under the same keys.

    For a model of one's own class: ``model.load_state_dict(state_dict_from_torch(module.state_dict()))``.
    """
    torch = import_torch("state_dict_from_torch")
    _check_state_dict(state_dict, "state_dict_from_torch", torch.Tensor, "torch.Tensor", "module")
    return OrderedDict(
        (key, torch_to_minigrad(value.detach(), torch, "state_dict_from_torch", f"entry {key!r}"))
        for key, value in state_dict.items()
    )
