"""Topological orders, checked the same way in chapters 01 (Values) and 04 (autograd nodes).

A probe numbers the learner's graph breadth-first from the root and sends the
learner's order as those numbers; the grader numbers its own graph for the
same expression the same way, so equal graphs get equal numbers. Nodes are
told apart by identity, never by ``==`` or ``hash``.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.probing import sequence


def number_graph(root, inputs_of) -> tuple[list, list[list[int]]]:
    """(nodes, inputs): every node reachable from ``root`` breadth-first, each one's ``inputs_of(node)`` as indices."""
    nodes, index, inputs, i = [root], {id(root): 0}, [], 0
    while i < len(nodes):
        row = []
        for node in inputs_of(nodes[i]):
            if id(node) not in index:
                index[id(node)] = len(nodes)
                nodes.append(node)
            row.append(index[id(node)])
        inputs.append(row)
        i += 1
    return nodes, inputs


def order_answer(root, order, inputs_of, key: str) -> dict:
    """The probe's answer: the graph's inputs under ``key`` and the learner's order as indices (-1: not a node)."""
    nodes, inputs = number_graph(root, inputs_of)
    index = {id(n): i for i, n in enumerate(nodes)}
    order = sequence(order, "topological_order's result")
    return {key: inputs, "order": np.array([index.get(id(n), -1) for n in order], dtype=np.int64)}


def assert_order(order: list[int], inputs: list[list[int]], what: str, input_word: str, reachable_hint: str = "") -> None:
    """``order`` holds each node of the graph once, every node after its inputs, the root (0) last."""
    assert -1 not in order, f"{what}the order holds objects that are not nodes of the graph"
    assert len(order) == len(set(order)), f"{what}a node appears more than once"
    assert set(order) == set(range(len(inputs))), (
        f"{what}the order must hold exactly the nodes reachable from the root{reachable_hint}"
    )
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for earlier in inputs[node]:
            assert position[earlier] < position[node], f"{what}a node is listed before one of its {input_word}"
    assert order[-1] == 0, f"{what}the root must come last"
