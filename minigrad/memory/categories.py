"""The memory categories of a training step, and which allocation tag falls into which.

The core labels every buffer it reports with a *tag* (:mod:`minigrad.memory.buffers`);
the tracker sorts tags into the seven categories a learner reasons with:

- ``parameter``: the model's weights (``nn.Parameter``);
- ``gradient``: ``.grad`` buffers;
- ``optimizer_state``: what the optimizer keeps between steps (Adam's two moments);
- ``activation``: buffers a node of the graph keeps alive for backward;
- ``temporary``: op outputs nobody saved, gradients in flight, scratch arrays;
- ``input``: tensors made from data (``from_numpy``, factories): the batches and targets;
- ``other``: everything else (module buffers such as BatchNorm's running statistics, custom tags).

Invariant: every tag maps to exactly one category, so the categories always sum to the total.
"""

from __future__ import annotations

__all__ = ["CATEGORIES", "CATEGORY_OF_TAG", "PARAMETER", "GRADIENT", "OPTIMIZER_STATE", "ACTIVATION", "TEMPORARY", "INPUT", "OTHER",
           "category_of"]

PARAMETER, GRADIENT, OPTIMIZER_STATE = "parameter", "gradient", "optimizer_state"
ACTIVATION, TEMPORARY, INPUT, OTHER = "activation", "temporary", "input", "other"
CATEGORIES = (PARAMETER, GRADIENT, OPTIMIZER_STATE, ACTIVATION, TEMPORARY, INPUT, OTHER)

CATEGORY_OF_TAG = {
    "parameter": PARAMETER,
    "gradient": GRADIENT,
    "optimizer_state": OPTIMIZER_STATE,
    "activation": ACTIVATION,
    "output": TEMPORARY,
    "temporary": TEMPORARY,
    "tensor": INPUT,
    "input": INPUT,
}


def category_of(tag: str) -> str:
    """The category of a buffer with allocation tag ``tag`` (``"other"`` for tags it does not know)."""
    return CATEGORY_OF_TAG.get(tag, OTHER)
