"""What rerunning a module call costs, in floating-point operations counted from shapes.

The budget mode (:mod:`.budget`) needs ``c(t)``, the compute to make a
tensor again, for the eviction heuristic. Dynamic Tensor Rematerialization
measures each op's time; this module counts FLOPs from the shapes instead
(the stage's one rule, :func:`.chain_costs.count_flops`), so that the same
program makes the same eviction choices on every run (tests and the
chapter's figures repeat exactly); at least 1, so that no call is free to
remake.
"""

from __future__ import annotations

from minigrad.checkpoint.chain_costs import count_flops
from minigrad.tensor import Tensor

__all__ = ["call_flops", "output_tensors"]


def output_tensors(output) -> list[Tensor]:
    """The tensors of a module's output, in order: the output itself, or those in its (nested) tuples and lists."""
    if isinstance(output, Tensor):
        return [output]
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in output_tensors(item)]
    return []


def call_flops(module, args, output) -> int:
    """The FLOPs of one call of ``module`` on ``args`` that returned ``output`` (see the module docstring)."""
    outputs = output_tensors(output)
    inputs = output_tensors(list(args))
    if not outputs:
        return 1
    input_shape = tuple(inputs[0].shape) if inputs else tuple(outputs[0].shape)
    return max(1, sum(count_flops(module, input_shape, tuple(t.shape)) for t in outputs))
