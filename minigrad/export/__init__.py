"""The way out to PyTorch: ``to_torch(model)`` and ``from_torch(module)`` (outside the stages).

A model built and trained with minigrad becomes the same ``torch.nn.Module``
(same layers, weights, buffers and modes), so a learner who outgrows one
machine carries on with PyTorch's distributed training; ``from_torch`` goes
the other way for the layers minigrad has. ``state_dict`` keys are the same
in both libraries, so ``state_dict_to_torch`` / ``state_dict_from_torch``
move the weights of a model of one's own class. PyTorch is an optional extra
(``pip install minigrad[torch]``): this package imports without it, and the
conversions say how to install it. No stage imports this package.

Reading order
-------------
The files that carry the idea, in the order to read them (418 lines in all):

1. ``layer_table.py`` (85 lines): which minigrad layer is which ``torch.nn`` layer,
   and the constructor arguments, read as attributes on either side, that rebuild it.
2. ``tensors.py`` (68 lines): one tensor across, as a copy through NumPy (dtype,
   ``requires_grad``, CPU only; bfloat16's detour).
3. ``rebuild.py`` (127 lines): the walk both directions share: build each layer on the
   other side, copy its tensors under the same names, its ``training`` flag, its children.
4. ``convert.py`` (138 lines): ``to_torch``, ``from_torch`` and the state-dict converters,
   with their checks.

Extensions (not on the reading path)
------------------------------------
Support:

- ``errors.py`` (11 lines): ``UnsupportedLayerError``.
- ``torch_import.py`` (24 lines): PyTorch imported on first use, or an ImportError naming ``pip install torch``.

Typical use::

    from minigrad.export import to_torch, from_torch

    torch_model = to_torch(model)   # a torch.nn.Module: same layers, weights, buffers, train/eval mode
    back = from_torch(torch_model)  # and back to minigrad

This package imports ``minigrad.nn`` and ``minigrad.tensor`` (and PyTorch, only when a conversion runs).
"""

from minigrad.export.convert import from_torch, state_dict_from_torch, state_dict_to_torch, to_torch
from minigrad.export.errors import UnsupportedLayerError
from minigrad.export.layer_table import supported_names

__all__ = ["to_torch", "from_torch", "state_dict_to_torch", "state_dict_from_torch", "UnsupportedLayerError",
           "supported_names"]
