"""Topological orders, checked the same way in chapters 01 (Values) and 04 (autograd nodes).

A probe numbers the learner's graph breadth-first from the root and sends the
learner's order as those numbers; the grader numbers its own graph for the
same expression the same way, so equal graphs get equal numbers. Nodes are
told apart by identity, never by ``==`` or ``hash``.
"""

from __future__ import annotations

from collections import Counter

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


def children_first(inputs: list[list[int]]) -> list[int]:
    """A topological order (inputs first, the root 0 last) of a graph given as input-index lists."""
    order, done, stack = [], set(), [(0, False)]
    while stack:
        i, expanded = stack.pop()
        if expanded:
            order.append(i)
        elif i not in done:
            done.add(i)
            stack.append((i, True))
            stack.extend((c, False) for c in inputs[i] if c not in done)
    return order


def names(order) -> str:
    """``[n2, n1, n0]``: node numbers as the counterexample's description names them (-1: not a node)."""
    return "[" + ", ".join("?" if i < 0 else f"n{i}" for i in order) + "]"


def assert_order(order: list[int], inputs: list[list[int]], what: str, input_word: str, reachable_hint: str = "") -> None:
    """``order`` holds each node of the graph once, every node after its inputs, the root (0) last."""
    got = (f"\nyour order: {names(order)}\nexpected (one valid order): {names(children_first(inputs))}"
           if len(inputs) <= 20 else "")  # a large graph's orders say nothing a reader can check
    assert -1 not in order, f"{what}the order holds objects that are not nodes of the graph{got}"
    twice = sorted(i for i, count in Counter(order).items() if count > 1)
    assert not twice, f"{what}{names(twice)[1:-1]} listed more than once{got}"
    assert set(order) == set(range(len(inputs))), (
        f"{what}the order must hold exactly the nodes reachable from the root{reachable_hint}{got}"
    )
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for earlier in inputs[node]:
            assert position[earlier] < position[node], (
                f"{what}n{node} is listed before n{earlier}, one of its {input_word}{got}"
            )
    assert order[-1] == 0, f"{what}the root must come last{got}"
