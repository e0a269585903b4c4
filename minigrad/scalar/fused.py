"""Many-input ops as one node each: ``vsum`` (a sum) and ``dot`` (a dot product).

A sum of n Values written with ``+`` makes n - 1 nodes; ``vsum`` makes one,
with the same value and the same derivatives (1 for every input). ``dot`` does
the same for ``sum_i w_i * x_i``. They keep chapter 02's graphs small (one
node per weighted sum instead of about 2n) and add no new idea to the engine.
"""

from __future__ import annotations

import math

from minigrad.scalar.engine import Value, _as_value

__all__ = ["vsum", "dot"]


def vsum(values) -> Value:
    """Sum of many Values as one node: d(sum)/d(v_i) = 1 for every input."""
    values = tuple(_as_value(v, "vsum", Value(0.0)) for v in values)
    if not values:
        raise ValueError("vsum: needs at least one value; got an empty sequence")
    return Value(math.fsum(v.data for v in values), values, (1.0,) * len(values), "sum")


def dot(weights, inputs) -> Value:
    """sum_i w_i * x_i as one node: d/dw_i = x_i and d/dx_i = w_i.

    ``inputs`` may mix Values and plain numbers; only Values join the graph.
    """
    weights, inputs = tuple(weights), tuple(inputs)
    if len(weights) != len(inputs):
        raise ValueError(f"dot: {len(weights)} weights but {len(inputs)} inputs; they must have the same length")
    total, children, local = 0.0, [], []
    for w, x in zip(weights, inputs):
        w = _as_value(w, "dot", x)
        x_data = x.data if isinstance(x, Value) else _as_value(x, "dot", w).data
        total += w.data * x_data
        children.append(w)
        local.append(x_data)
        if isinstance(x, Value):
            children.append(x)
            local.append(w.data)
    return Value(total, tuple(children), tuple(local), "dot")
