"""``Dropout``: randomly zero activations while training (see ``functional.dropout``)."""

from __future__ import annotations

import numpy as np

from minigrad.nn import functional as F
from minigrad.nn.module import Module
from minigrad.tensor import Tensor

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero each element with probability ``p`` in training mode and scale the rest by 1/(1-p); identity in eval mode.

    ``generator=`` (a ``numpy.random.Generator`` or an int seed) is a minigrad
    addition; by default the masks come from the generator of the input's
    device (seeded by ``manual_seed``).
    """

    def __init__(self, p: float = 0.5, inplace: bool = False, generator=None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p is the probability of zeroing an element, it must be in [0, 1], got {p}")
        if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
            generator = np.random.default_rng(int(generator))
        self.p = p
        self.inplace = inplace
        self.generator = generator

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training, generator=self.generator)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
