"""AccumulateGrad: the graph node of a leaf that requires grad.

Backward ends at these nodes: the gradient that reaches one is added into
its leaf's ``.grad`` (see :mod:`.backward_steps`). It sits below ``tensor.py``
because a leaf makes its own node on first use (``Tensor._accumulate_grad_node``).
"""

from __future__ import annotations

import weakref

__all__ = ["AccumulateGrad"]


class AccumulateGrad:
    """The graph node of a leaf that requires grad: backward adds the incoming gradient to ``variable.grad``.

    A leaf keeps its node for life (``leaf._accum``); the node refers back to the
    leaf weakly (no reference cycle), so ``variable`` is None once the leaf is gone.
    """

    __slots__ = ("_variable", "output_shape", "output_dtype", "__weakref__")
    name = "AccumulateGrad"
    op = "accumulate_grad"
    _parents = ()
    next_functions = ()

    def __init__(self, variable) -> None:
        self._variable = weakref.ref(variable)
        self.output_shape = variable.shape
        self.output_dtype = variable.dtype

    @property
    def variable(self):
        """The leaf, or None once it is gone."""
        return self._variable()

    def __repr__(self) -> str:
        return f"<AccumulateGrad for a leaf of shape {self.output_shape}>"
