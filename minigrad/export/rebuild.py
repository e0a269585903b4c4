"""Rebuilding a module tree on the other side, layer by layer: the walk both conversions share.

A :class:`Side` says what differs between the two directions (which library
the source belongs to, how a tensor crosses); :func:`rebuild` walks the
source tree, depth first, and for each module:

1. finds its row in the layer table (exact class) and builds the other
   library's layer from the same constructor arguments;
2. replaces that new layer's parameters and buffers with copies of the
   source's, under the same names (a name on one side only is an error, so
   the two ``state_dict`` s have the same keys);
3. copies the ``training`` flag (BatchNorm and Dropout depend on it);
4. rebuilds each child and adds it under the same name.

A module or a tensor reachable along two paths is rebuilt once, so sharing
(tied weights, a block used twice) survives the trip. Gradients and ordinary
attributes that are not constructor arguments are not carried.

:func:`refuse_unsupported` runs first, over the whole tree, so that one error
lists every module that will not convert: a class not in the table, or a
module with hooks of its own (a hook can change what ``forward`` returns, and
hooks are Python code too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from minigrad.export.errors import UnsupportedLayerError
from minigrad.export.layer_table import LayerPair, constructor_arguments, supported_names

__all__ = ["Side", "rebuild", "find_unsupported", "describe"]


@dataclass(frozen=True)
class Side:
    """One direction of the conversion."""

    who: str                                       # the public function, for error messages
    target: str                                    # "PyTorch" or "minigrad"
    pair_of: Callable[[object], LayerPair | None]  # the table row of a source module (exact class), or None
    target_class: Callable[[LayerPair], type]      # the class to build on the other side
    copy_tensor: Callable[[object, str], object]   # a source tensor -> its copy on the other side (where: for errors)
    has_hooks: Callable[[object], bool]            # does a source module have hooks of its own (forward or backward)?
    state_dict_route: str                          # how to convert a model of one's own class, for the error message


def class_name(module) -> str:
    """``nn.LSTM`` for a layer of either library's ``nn``, the bare class name otherwise."""
    cls = type(module)
    library_layer = cls.__module__.startswith(("torch.nn.", "minigrad.nn."))
    return ("nn." if library_layer else "") + cls.__name__


def describe(path: str, module) -> str:
    """``features.3 (nn.LSTM)``, or ``the model itself (Net)`` for the root."""
    return f"{path or 'the model itself'} ({class_name(module)})"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def find_unsupported(root, side: Side) -> tuple[list[str], list[str]]:
    """``describe()`` of every module in the tree with no row in the layer table, and of every one with hooks."""
    no_counterpart, hooked = [], []
    for path, module in root.named_modules():  # the same walk in both libraries: depth first, each module once
        if side.pair_of(module) is None:
            no_counterpart.append(describe(path, module))
        if side.has_hooks(module):
            hooked.append(describe(path, module))
    return no_counterpart, hooked


def refuse_unsupported(root, side: Side) -> None:
    """Raise :class:`UnsupportedLayerError` naming every module of ``root`` that does not convert."""
    no_counterpart, hooked = find_unsupported(root, side)
    if no_counterpart:
        raise UnsupportedLayerError(
            f"{side.who}: {len(no_counterpart)} module(s) have no {side.target} counterpart: "
            f"{', '.join(no_counterpart)}. Supported: {supported_names()} (exactly these classes: a subclass may "
            f"change forward, which cannot be translated). For a model of your own class, write the same class "
            f"with {side.target}'s layers and copy the weights, since the state_dict keys match: {side.state_dict_route}"
        )
    if hooked:
        raise UnsupportedLayerError(
            f"{side.who}: {len(hooked)} module(s) have forward or backward hooks, which do not convert: "
            f"{', '.join(hooked)}; remove them (handle.remove()) and register them again on the converted model"
        )


def _copy_tensors(source, target, path: str, side: Side, tensor_memo: dict) -> None:
    """Put copies of ``source``'s own parameters and buffers into ``target``, under the same names."""
    for store, kind in (("_parameters", "parameters"), ("_buffers", "buffers")):
        ours = [name for name, t in getattr(source, store).items() if t is not None]
        theirs = [name for name, t in getattr(target, store).items() if t is not None]
        if sorted(ours) != sorted(theirs):
            raise UnsupportedLayerError(
                f"{side.who}: {describe(path, source)} holds the {kind} {ours}, while the same layer built in "
                f"{side.target} holds {theirs}; remove the extra ones (or register them in a module of your own "
                f"and convert its state_dict)"
            )
        for name in ours:
            value = getattr(source, store)[name]
            if id(value) not in tensor_memo:
                tensor_memo[id(value)] = side.copy_tensor(value, f"{kind[:-1]} {_join(path, name)!r}")
            setattr(target, name, tensor_memo[id(value)])


def rebuild(source, side: Side, path: str = "", memo: dict | None = None, tensor_memo: dict | None = None):
    """The other library's copy of module ``source`` and everything below it (see the module docstring)."""
    memo = {} if memo is None else memo
    tensor_memo = {} if tensor_memo is None else tensor_memo
    if id(source) in memo:
        return memo[id(source)]
    pair = side.pair_of(source)
    try:
        target = side.target_class(pair)(**constructor_arguments(source, pair))
    except (NotImplementedError, ValueError, TypeError) as err:  # a setting the other side lacks, e.g. groups=2
        raise UnsupportedLayerError(f"{side.who}: {describe(path, source)} cannot be built in {side.target}: {err}") from err
    _copy_tensors(source, target, path, side, tensor_memo)
    target.training = source.training
    for name, child in source._modules.items():
        target.add_module(name, None if child is None else rebuild(child, side, _join(path, name), memo, tensor_memo))
    memo[id(source)] = target
    return target
