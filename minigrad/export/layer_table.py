"""Which minigrad layer is which PyTorch layer, and the constructor arguments that rebuild it.

minigrad's layers follow PyTorch's names, so one table serves both
directions: each row names a minigrad class, the ``torch.nn`` class of the
same name, and the constructor arguments that define the layer. Both
libraries keep each argument as an attribute of the same name
(``conv.stride``, ``bn.momentum``...), so the arguments are read off a layer
of either side with ``getattr`` and passed to the other side's constructor.
One exception: ``bias`` is a flag in the constructor and a tensor (or None)
on the layer; :func:`constructor_arguments` turns it back into the flag.

A layer converts only when its class *is* the row's class: a subclass may
override ``forward``, which no table can see. The parameter and buffer names
are the same on both sides (checked by the tests, layer by layer), so
``state_dict`` keys need no mapping.
"""

from __future__ import annotations

from dataclasses import dataclass

from minigrad import nn

__all__ = ["LayerPair", "LAYERS", "CONTAINERS", "constructor_arguments", "supported_names"]


@dataclass(frozen=True)
class LayerPair:
    """A minigrad class, its ``torch.nn`` namesake and the constructor arguments both read as attributes."""

    minigrad_class: type
    arguments: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The class name, the same in both libraries (``torch.nn.<name>``)."""
        return self.minigrad_class.__name__

    def torch_class(self, torch) -> type:
        return getattr(torch.nn, self.name)


_POOL = ("kernel_size", "stride", "padding")
_BATCH_NORM = ("num_features", "eps", "momentum", "affine", "track_running_stats")

LAYERS = (
    LayerPair(nn.Linear, ("in_features", "out_features", "bias")),
    LayerPair(nn.Conv2d, ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                          "groups", "bias", "padding_mode")),
    LayerPair(nn.MaxPool2d, _POOL + ("dilation", "return_indices", "ceil_mode")),
    LayerPair(nn.AvgPool2d, _POOL + ("ceil_mode", "count_include_pad", "divisor_override")),
    LayerPair(nn.BatchNorm1d, _BATCH_NORM),
    LayerPair(nn.BatchNorm2d, _BATCH_NORM),
    LayerPair(nn.Dropout, ("p", "inplace")),
    LayerPair(nn.Flatten, ("start_dim", "end_dim")),
    LayerPair(nn.Identity),
    LayerPair(nn.ReLU, ("inplace",)),
    LayerPair(nn.LeakyReLU, ("negative_slope", "inplace")),
    LayerPair(nn.GELU, ("approximate",)),
    LayerPair(nn.Sigmoid),
    LayerPair(nn.Tanh),
    LayerPair(nn.Softmax, ("dim",)),
    LayerPair(nn.LogSoftmax, ("dim",)),
)

# Modules that only hold other modules: rebuilt empty, then each child is converted and added under its name.
CONTAINERS = (
    LayerPair(nn.Sequential),
    LayerPair(nn.ModuleList),
    LayerPair(nn.ModuleDict),
)


def constructor_arguments(layer, pair: LayerPair) -> dict:
    """The keyword arguments that rebuild ``layer`` (of either library) on the other side."""
    arguments = {}
    for name in pair.arguments:
        value = getattr(layer, name)
        arguments[name] = (value is not None) if name == "bias" else value
    return arguments


def supported_names() -> str:
    """``"Linear, Conv2d, ..."``: what error messages list as convertible."""
    return ", ".join(pair.name for pair in LAYERS + CONTAINERS)
