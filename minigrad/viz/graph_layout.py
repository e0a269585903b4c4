"""A layered (Sugiyama-style) layout for small DAGs such as computation graphs.

Four passes, each kept simple enough to read:

1. layers: longest path from the leaves, so every edge goes from a lower
   layer to a higher one (inputs on the left, the output on the right); a leaf
   then moves right to sit just before its first consumer, which keeps
   constants and weights next to the op that uses them;
2. dummies: an edge spanning several layers is split by one dummy node per
   layer it crosses, so every edge joins neighbouring layers;
3. order: sweeps of the barycenter heuristic (each node moves to the mean
   position of its neighbours in the previous layer), keeping the order with
   the fewest crossings;
4. slots: each node is pulled towards its neighbours' mean slot while keeping
   its order and a distance of at least 1 from the next node in its layer.

Invariants
- Deterministic: a node is identified by its position in ``nodes``; ``id()``
  serves only to look nodes up, never to order them; ties keep index order.
- ``layer_of[child] < layer_of[parent]`` for every edge.
- Nodes of one layer (dummies included) have slots at least 1 apart; every
  slot is a multiple of 0.5 and the smallest is 0.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LayoutEdge", "LayeredLayout", "layered_layout"]


@dataclass(frozen=True)
class LayoutEdge:
    """An edge from ``child`` to ``parent`` (indices into the input ``nodes``).

    ``bends`` holds one ``(layer, slot)`` point for each layer strictly
    between the two ends, in increasing layer order.
    """

    child: int
    parent: int
    bends: tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class LayeredLayout:
    """Where each node goes: a layer (the flow axis) and a slot (across it)."""

    layer_of: tuple[int, ...]
    slot_of: tuple[float, ...]
    layers: tuple[tuple[int, ...], ...]  # real nodes of each layer, by increasing slot
    edges: tuple[LayoutEdge, ...]  # distinct (child, parent) pairs, by parent then child order
    crossings: int  # edge crossings between neighbouring layers, dummies included

    @property
    def num_layers(self) -> int:
        return len(self.layers)


def layered_layout(
    nodes: Sequence[Any],
    children_of: Callable[[Any], Iterable[Any]],
    *,
    sweeps: int = 4,
    placement_rounds: int = 4,
) -> LayeredLayout:
    """Lay out ``nodes`` (listed children-first) whose edges are given by ``children_of``.

    A child listed twice by the same parent gives one edge.
    """
    index_of = {id(node): i for i, node in enumerate(nodes)}
    if len(index_of) != len(nodes):
        raise ValueError("layered_layout: a node is listed twice in nodes")
    children = [_child_indices(node, i, index_of, children_of) for i, node in enumerate(nodes)]

    layer_of = _assign_layers(children)
    vertex_layer, up, down, chains = _split_long_edges(children, layer_of)
    order = _reduce_crossings(vertex_layer, up, down, sweeps)
    slot = _place_slots(order, up, down, placement_rounds)

    n = len(nodes)
    edges = tuple(
        LayoutEdge(child, parent, tuple((vertex_layer[d], slot[d]) for d in chains[child, parent]))
        for parent in range(n)
        for child in children[parent]
    )
    return LayeredLayout(
        layer_of=tuple(layer_of),
        slot_of=tuple(slot[:n]),
        layers=tuple(tuple(v for v in layer if v < n) for layer in order),
        edges=edges,
        crossings=_total_crossings(order, up),
    )


def _child_indices(node, i: int, index_of: dict[int, int], children_of) -> list[int]:
    """Distinct child indices of ``node`` in first-appearance order; checks children-first."""
    result: list[int] = []
    for child in children_of(node):
        j = index_of.get(id(child))
        if j is None:
            raise ValueError(f"layered_layout: node {i} has a child that is not in nodes")
        if j >= i:
            raise ValueError(
                f"layered_layout: nodes must be listed children-first, but node {i} "
                f"has child {j}, listed after it"
            )
        if j not in result:
            result.append(j)
    return result


def _assign_layers(children: list[list[int]]) -> list[int]:
    """Longest path from the leaves, then each leaf moved next to its first consumer."""
    layer = [0] * len(children)
    for i, kids in enumerate(children):  # children-first, so kids are done already
        if kids:
            layer[i] = 1 + max(layer[k] for k in kids)
    first_consumer = [None] * len(children)
    for i, kids in enumerate(children):
        for k in kids:
            if first_consumer[k] is None or layer[i] < first_consumer[k]:
                first_consumer[k] = layer[i]
    for i, kids in enumerate(children):
        if not kids and first_consumer[i] is not None:
            layer[i] = first_consumer[i] - 1
    return layer


def _split_long_edges(children: list[list[int]], layer_of: list[int]):
    """Vertices (nodes, then dummies) with their layer and their up/down neighbours.

    ``up[v]`` are neighbours one layer lower (towards the leaves), ``down[v]`` one
    layer higher; ``chains[child, parent]`` lists the dummies of that edge.
    """
    vertex_layer = list(layer_of)
    up: list[list[int]] = [[] for _ in layer_of]
    down: list[list[int]] = [[] for _ in layer_of]
    chains: dict[tuple[int, int], list[int]] = {}
    for parent, kids in enumerate(children):
        for child in kids:
            chain = []
            previous = child
            for layer in range(layer_of[child] + 1, layer_of[parent]):
                dummy = len(vertex_layer)
                vertex_layer.append(layer)
                up.append([previous])
                down.append([])
                down[previous].append(dummy)
                chain.append(dummy)
                previous = dummy
            up[parent].append(previous)
            down[previous].append(parent)
            chains[child, parent] = chain
    return vertex_layer, up, down, chains


def _reduce_crossings(vertex_layer: list[int], up, down, sweeps: int) -> list[list[int]]:
    """Barycenter sweeps, alternately towards the output and back; returns the best order."""
    order: list[list[int]] = [[] for _ in range(max(vertex_layer, default=-1) + 1)]
    for v, layer in enumerate(vertex_layer):  # vertex order: nodes by index, then dummies
        order[layer].append(v)
    best, best_crossings = [list(layer) for layer in order], _total_crossings(order, up)
    for sweep in range(2 * sweeps):
        forward = sweep % 2 == 0
        layer_indices = range(1, len(order)) if forward else range(len(order) - 2, -1, -1)
        neighbours = up if forward else down
        for layer in layer_indices:
            position = _positions(order)
            order[layer] = sorted(
                order[layer], key=lambda v: (_mean(position, neighbours[v], position[v]), position[v])
            )
        crossings = _total_crossings(order, up)
        if crossings < best_crossings:
            best, best_crossings = [list(layer) for layer in order], crossings
    return best


def _positions(order: list[list[int]]) -> dict[int, int]:
    return {v: i for layer in order for i, v in enumerate(layer)}


def _mean(value_of, vertices: list[int], default: float) -> float:
    return sum(value_of[u] for u in vertices) / len(vertices) if vertices else default


def _total_crossings(order: list[list[int]], up) -> int:
    """Pairs of edges that cross between each layer and the one below it."""
    position = _positions(order)
    total = 0
    for layer in order[1:]:
        ends = sorted((position[u], position[v]) for v in layer for u in up[v])
        seen: list[int] = []
        for _, upper in ends:
            total += len(seen) - bisect_right(seen, upper)
            insort(seen, upper)
    return total


def _place_slots(order: list[list[int]], up, down, rounds: int) -> list[float]:
    """Slots that keep each layer's order, spacing >= 1, and sit near neighbours."""
    slot = [0.0] * sum(len(layer) for layer in order)
    for layer in order:  # start with every layer centred on 0
        for i, v in enumerate(layer):
            slot[v] = i - (len(layer) - 1) / 2
    for _ in range(rounds):
        for neighbours, layers in ((up, order[1:]), (down, order[-2::-1])):
            for layer in layers:
                wanted = [_mean(slot, neighbours[v], slot[v]) for v in layer]
                for v, s in zip(layer, _closest_spaced(wanted)):
                    slot[v] = s
    # Snap to a 0.5 grid through z = slot - rank: z is non-decreasing within a
    # layer, rounding keeps it so, hence spacing >= 1 survives the snapping.
    for layer in order:
        for rank, v in enumerate(layer):
            slot[v] = round((slot[v] - rank) * 2) / 2 + rank
    lowest = min(slot, default=0.0)
    return [s - lowest for s in slot]


def _closest_spaced(wanted: list[float]) -> list[float]:
    """Least-squares closest ``y`` to ``wanted`` with ``y[i+1] - y[i] >= 1``.

    With ``z[i] = y[i] - i`` this is isotonic regression of ``wanted[i] - i``,
    solved by pooling adjacent violators: a block that would overtake the
    next one is merged with it and both take their common mean.
    """
    blocks: list[list[float]] = []  # [sum of targets, count]
    for i, w in enumerate(wanted):
        blocks.append([w - i, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    result = []
    for total, count in blocks:
        result.extend([total / count] * count)
    return [z + i for i, z in enumerate(result)]
