"""What rerunning a module call costs, in floating-point operations counted from shapes.

The budget mode (:mod:`.budget`) needs ``c(t)``, the compute to make a
tensor again, for the eviction heuristic. Dynamic Tensor Rematerialization
measures each op's time; this module counts FLOPs from the shapes instead,
so that the same program makes the same eviction choices on every run
(tests and the chapter's figures repeat exactly). The rule:

- ``Linear`` and ``Conv2d``: every output element is a dot product over the
  weights one output channel reads, ``weight[0].size`` multiply-adds, so
  ``2 * output elements * weight[0].size``;
- any other module: one operation per output element (activations,
  pooling, dropout, reshapes: elementwise work);
- at least 1, so that no call is free to remake.
"""

from __future__ import annotations

from minigrad.nn.conv import Conv2d
from minigrad.nn.linear import Linear
from minigrad.tensor import Tensor

__all__ = ["call_flops", "output_tensors"]


def output_tensors(output) -> list[Tensor]:
    """The tensors of a module's output, in order: the output itself, or those in its (nested) tuples and lists."""
    if isinstance(output, Tensor):
        return [output]
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in output_tensors(item)]
    return []


def call_flops(module, output) -> int:
    """The FLOPs of one call of ``module`` that returned ``output`` (see the module docstring)."""
    elements = sum(t.numel() for t in output_tensors(output))
    weight = getattr(module, "weight", None)
    if isinstance(module, (Linear, Conv2d)) and weight is not None:
        return max(1, 2 * elements * (weight.numel() // weight.shape[0]))
    return max(1, elements)
