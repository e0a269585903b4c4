"""Tensor autograd graphs as SVG, and a stepper through their backward pass.

A tensor graph is made of ``Function`` nodes (``t.grad_fn``): each has a
``name`` (``"MatmulBackward"``), an ``op`` (``"matmul"``), the ``output_shape``
and ``output_dtype`` of what it computed, and ``next_functions``, one
``(parent, 0)`` pair per tensor input (``parent`` is None for an input that
needs no gradient). A leaf that requires grad appears as an ``AccumulateGrad``
node whose ``variable`` is the leaf tensor (see ``minigrad.tensor.function``).

:func:`tensor_graph` turns such a graph into :class:`TensorGraphNode` objects
that :func:`~minigrad.viz.graph_svg.draw_graph` understands (``_children``,
``_op``, ``data``, ``grad``, ``label``): one box per node for the tensor it
produced, with its shape and dtype, and after ``backward()`` the shape and
norm of a leaf's gradient. :func:`draw_tensor_graph` draws it.

:class:`TensorBackpropStepper` walks the backward pass one node at a time and
shows the gradient arriving at each node (shape and norm). It computes the
gradients on the side by calling each node's ``backward`` with the gradient
its output received, in reverse topological order: it never touches a
``.grad``, and it needs the saved tensors, so build it before ``backward()``
(or after ``backward(retain_graph=True)``).

Invariants
- The user's graph and tensors are never mutated; gradients live in the trace.
- At the last step, a leaf's gradient in the trace equals what ``backward()``
  adds to its ``.grad``.
- Byte-deterministic SVG: numbers are printed with a fixed format.
- Like the rest of ``minigrad.viz``, reads graphs by duck typing and imports
  no stage at module level.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from minigrad.viz.graph_svg import FIT_WIDTH, SVGFigure, draw_graph, format_number, graph_nodes, value_box_width
from minigrad.viz.stepper import ACTIVE, BackpropStepper, _check_step, active_node, step_colours

__all__ = [
    "TensorGraphNode", "tensor_graph", "draw_tensor_graph", "describe_tensor_node",
    "TensorGradientTerm", "TensorBackpropStep", "TensorBackpropTrace", "trace_tensor_backprop",
    "explain_tensor_step", "TensorBackpropStepper", "gradient_summary",
]


# ------------------------------------------------------------------ the adapter


class TensorGraphNode:
    """One graph node as ``draw_graph`` sees it: the tensor that a ``Function`` (or a leaf) stands for.

    ``fn`` is the ``Function``/``AccumulateGrad`` node; ``_children`` the
    adapters of its inputs that need a gradient (in input order, repeated when
    an input is used twice); ``_op`` the op's short name (empty for a leaf);
    ``shape``/``dtype`` of the tensor; ``grad`` the leaf's ``.grad`` array (or
    a ``retain_grad()`` tensor's), None otherwise.
    """

    __slots__ = ("fn", "_children", "_op", "label", "shape", "dtype", "grad", "is_leaf")

    def __init__(self, fn: Any, label: str = "") -> None:
        self.fn = fn
        self._children: list[TensorGraphNode] = []
        self.is_leaf = not _parents(fn) and getattr(fn, "name", "") == "AccumulateGrad"
        self._op = "" if self.is_leaf else str(getattr(fn, "op", "") or getattr(fn, "name", "?"))
        self.label = label
        self.shape = tuple(getattr(fn, "output_shape", ()) or ())
        self.dtype = str(getattr(fn, "output_dtype", "") or "")
        self.grad = _current_grad(fn)

    @property
    def data(self) -> tuple:
        """The shape (what ``draw_graph`` calls data: a tensor's values do not fit in a box)."""
        return self.shape

    def __repr__(self) -> str:
        what = self.label or self._op or "leaf"
        return f"<TensorGraphNode {what} {self.shape} {self.dtype}>"


def _parents(fn: Any) -> tuple:
    """One entry per forward argument: a node, or a falsy value where no gradient flows."""
    parents = getattr(fn, "_parents", None)
    if parents is None:  # not a minigrad node: fall back on PyTorch's public attribute
        parents = tuple(p for p, _ in getattr(fn, "next_functions", ()) or ())
    return tuple(parents)


def _current_grad(fn: Any):
    """The array in a leaf's ``.grad`` (or a retained grad); None if there is none."""
    tensor = getattr(fn, "variable", None)
    if tensor is None:
        retained = getattr(fn, "_retain", None)
        tensor = retained() if callable(retained) else None
    grad = getattr(tensor, "grad", None) if tensor is not None else None
    return getattr(grad, "_data", grad)


def _root_node(root: Any, who: str) -> Any:
    """The graph node of a tensor (its grad_fn, or its AccumulateGrad if it is a leaf), or ``root`` itself."""
    if hasattr(root, "grad_fn") and hasattr(root, "requires_grad"):
        if root.grad_fn is not None:
            return root.grad_fn
        if root.requires_grad:
            return root._accumulate_grad_node()
        raise ValueError(
            f"{who}: this tensor (shape {tuple(root.shape)}) has no graph: it does not require grad. "
            f"Create the inputs with requires_grad=True (and compute outside no_grad())"
        )
    if hasattr(root, "next_functions") or hasattr(root, "_parents"):
        return root
    raise TypeError(f"{who}: expected a Tensor or a grad_fn node, got {type(root).__name__}")


def _name_table(names) -> tuple[dict[int, str], dict[int, str]]:
    """({id(tensor): name}, {id(grad_fn): name}) from ``{"name": tensor}`` or ``{tensor: "name"}`` or pairs."""
    if not names:
        return {}, {}
    items = list(names.items()) if isinstance(names, Mapping) else list(names)
    by_tensor, by_fn = {}, {}
    for key, value in items:
        name, tensor = (key, value) if isinstance(key, str) else (value, key)
        by_tensor[id(tensor)] = str(name)
        fn = getattr(tensor, "grad_fn", None)
        if fn is not None:
            by_fn[id(fn)] = str(name)
    return by_tensor, by_fn


def tensor_graph(root: Any, names: Mapping | Iterable | None = None, max_nodes: int | None = None) -> TensorGraphNode:
    """The adapter graph of ``root`` (a Tensor, or a grad_fn node): returns the root's :class:`TensorGraphNode`.

    ``names``: ``{"W1": W1, "h": h}`` (or ``{W1: "W1"}``) labels leaves and
    intermediate tensors; tensors are matched by identity.
    """
    start = _root_node(root, "tensor_graph")
    by_tensor, by_fn = _name_table(names)
    adapters: dict[int, TensorGraphNode] = {}

    def adapter(fn: Any) -> TensorGraphNode:
        node = adapters.get(id(fn))
        if node is None:
            label = by_fn.get(id(fn), "")
            variable = getattr(fn, "variable", None)
            if not label and variable is not None:
                label = by_tensor.get(id(variable), "")
            node = adapters[id(fn)] = TensorGraphNode(fn, label)
            if max_nodes is not None and len(adapters) > max_nodes:
                raise ValueError(
                    f"tensor_graph: this graph has more than max_nodes={max_nodes} nodes; a picture that "
                    f"big is unreadable. Draw a smaller example, or pass a larger max_nodes"
                )
        return node

    top = adapter(start)
    stack, expanded = [start], {id(start)}
    while stack:  # iterative: deep graphs do not hit the recursion limit
        fn = stack.pop()
        node = adapters[id(fn)]
        for parent in _parents(fn):
            if not parent:
                continue
            node._children.append(adapter(parent))
            if id(parent) not in expanded:
                expanded.add(id(parent))
                stack.append(parent)
    return top


# ------------------------------------------------------------------ drawing


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def gradient_summary(grad) -> str:
    """``"(16, 8) |g|=1.234"``: a gradient's shape and Euclidean norm (``:.4g``)."""
    return f"{_shape_text(tuple(grad.shape))} |g|={format_number(_norm(grad))}"


def _norm(array) -> float:
    return float((array.astype("float64") ** 2).sum()) ** 0.5


def describe_tensor_node(node: TensorGraphNode) -> list[str]:
    """The lines of a box: label (if any), shape and dtype, then ``grad ...`` once a leaf has one."""
    lines = [node.label] if node.label else []
    lines.append(f"{_shape_text(node.shape)} {node.dtype}".rstrip())
    if node.grad is not None:
        lines.append("grad " + gradient_summary(node.grad))
    return lines


def draw_tensor_graph(
    root: Any,
    names: Mapping | Iterable | None = None,
    *,
    rankdir: str = "LR",
    max_nodes: int = 200,
    caption: str | list[str] | None = None,
    highlight=None,
    highlight_ops=None,
    describe=None,
    max_width: float | None = FIT_WIDTH,
) -> SVGFigure:
    """Draw the autograd graph of ``root`` (a Tensor or a grad_fn node): one box per tensor, one pill per op.

    Leaves that require grad are the shaded boxes; inputs that need no
    gradient are not part of the graph (as in PyTorch) and are not drawn.
    ``highlight`` maps tensors (or their grad_fn nodes) to colour names;
    ``highlight_ops`` maps them to the colour of the op pill that made them
    (default: the box's colour). ``describe(node)`` gives the lines of a
    :class:`TensorGraphNode`'s box (default :func:`describe_tensor_node`).
    A left-to-right graph wider than ``max_width`` wraps into rows (None: never).
    """
    top = tensor_graph(root, names, max_nodes=max_nodes)
    by_fn = {id(n.fn): n for n in graph_nodes(top, max_nodes, who="draw_tensor_graph")} if highlight or \
        highlight_ops else {}
    return draw_graph(
        top, describe=describe or describe_tensor_node, highlight=_graph_colours(highlight, by_fn),
        highlight_ops=_graph_colours(highlight_ops, by_fn), rankdir=rankdir, max_nodes=max_nodes, caption=caption,
        max_width=max_width,
    )


def _graph_colours(colours, by_fn: dict) -> list | None:
    """(adapter, colour) pairs from a mapping (or pairs) of tensors or grad_fn nodes to colours; None for none."""
    if not colours:
        return None
    pairs = []
    for key, colour in (colours.items() if isinstance(colours, Mapping) else colours):
        fn = _root_node(key, "draw_tensor_graph") if hasattr(key, "grad_fn") else key
        if id(fn) in by_fn:
            pairs.append((by_fn[id(fn)], colour))
    return pairs


# ------------------------------------------------------------------ the backward pass, step by step


@dataclass(frozen=True)
class TensorGradientTerm:
    """What one step sends to one input: ``grad`` (an array), and the input's gradient ``total`` afterwards."""

    child: int  # index into TensorBackpropTrace.nodes
    grad: Any
    total: Any
    first: bool  # True when this is the input's first contribution


@dataclass(frozen=True)
class TensorBackpropStep:
    """The state after a step: ``grads[i]`` is the gradient of node i's tensor so far (None: not reached)."""

    number: int
    node: int | None  # the node whose backward ran at this step; None at step 0
    terms: tuple[TensorGradientTerm, ...]
    grads: tuple[Any, ...]
    final: tuple[bool, ...]


@dataclass(frozen=True)
class TensorBackpropTrace:
    """Every step of one backward pass; ``nodes`` (adapters) are inputs-first, the output last."""

    nodes: tuple[TensorGraphNode, ...]
    names: tuple[str, ...]
    steps: tuple[TensorBackpropStep, ...]

    @property
    def last_step(self) -> int:
        return len(self.steps) - 1

    @property
    def output(self) -> int:
        return len(self.nodes) - 1

    def final_grad(self, tensor_or_node: Any):
        """The gradient the trace computed for a tensor (a leaf, or one whose grad_fn is in the graph)."""
        fn = _root_node(tensor_or_node, "final_grad") if hasattr(tensor_or_node, "grad_fn") else tensor_or_node
        for i, node in enumerate(self.nodes):
            if node.fn is fn:
                return self.steps[-1].grads[i]
        raise KeyError("final_grad: this tensor is not part of the traced graph")


def _trace_names(nodes) -> list[str]:
    uses = Counter(node.label for node in nodes if node.label)
    names = []
    for i, node in enumerate(nodes):
        if node.label:
            names.append(node.label if uses[node.label] == 1 else f"{node.label}#{i}")
        else:
            names.append(f"{'leaf' if node.is_leaf else node._op}#{i}")
    return names


def _seed(root: Any, top: TensorGraphNode, gradient):
    if gradient is not None:
        data = getattr(gradient, "_data", gradient)
        if tuple(data.shape) != top.shape:
            raise ValueError(f"TensorBackpropStepper: gradient has shape {tuple(data.shape)}, the output {top.shape}")
        return data
    size = 1
    for s in top.shape:
        size *= s
    if size != 1:
        raise ValueError(
            f"TensorBackpropStepper: the output has shape {top.shape}; step through the backward pass of a "
            f"scalar (a loss: out.sum() or out.mean()), or pass gradient=d(final)/d(out)"
        )
    data = getattr(root, "_data", None)
    if data is not None:
        from minigrad.tensor.backend import array_module  # lazily: viz imports no stage at module level

        return array_module(data).ones(top.shape, dtype=data.dtype)
    import numpy as np

    return np.ones(top.shape, dtype=top.dtype or "float32")


def trace_tensor_backprop(root: Any, names=None, gradient=None, max_nodes: int | None = 200) -> TensorBackpropTrace:
    """Run the backward pass of ``root`` on the side (the graph is left as it is), recording every step."""
    top = tensor_graph(root, names, max_nodes=max_nodes)
    nodes = graph_nodes(top, max_nodes, who="TensorBackpropStepper")
    for node in nodes:
        if getattr(node.fn, "_saved", ()) is None:
            raise RuntimeError(
                "TensorBackpropStepper: backward() already ran through this graph and freed the tensors it "
                "saved. Build the stepper before calling backward(), or call backward(retain_graph=True)"
            )
    index_of = {id(node.fn): i for i, node in enumerate(nodes)}
    users_left = [0] * len(nodes)
    for node in nodes:
        for child in {id(c.fn) for c in node._children}:
            users_left[index_of[child]] += 1
    grads: list[Any] = [None] * len(nodes)
    grads[-1] = _seed(root, top, gradient)
    final = [count == 0 for count in users_left]
    steps = [TensorBackpropStep(0, None, (), tuple(grads), tuple(final))]

    for i in reversed(range(len(nodes))):
        node = nodes[i]
        if not node._children:
            continue
        terms = []
        if grads[i] is not None:
            input_grads = node.fn.backward(grads[i])
            if type(input_grads) is not tuple:
                input_grads = (input_grads,)
            for parent, g in zip(_parents(node.fn), input_grads):
                if not parent or g is None:
                    continue
                child = index_of[id(parent)]
                first = grads[child] is None
                grads[child] = g if first else grads[child] + g
                terms.append(TensorGradientTerm(child, g, grads[child], first))
        for child in {index_of[id(c.fn)] for c in node._children}:
            users_left[child] -= 1
            final[child] = users_left[child] == 0
        steps.append(TensorBackpropStep(len(steps), i, tuple(terms), tuple(grads), tuple(final)))
    return TensorBackpropTrace(tuple(nodes), tuple(_trace_names(nodes)), tuple(steps))


def explain_tensor_step(trace: TensorBackpropTrace, k: int) -> str:
    """What step ``k`` does: the gradient a node received, and what it sends to each input."""
    step = trace.steps[_check_step(trace, k)]
    last = trace.last_step
    out = trace.names[trace.output]
    if step.node is None:
        seed = step.grads[trace.output]
        lines = [f"Step 0/{last}: start at the output {out} with d{out}/d{out} = 1: grad {gradient_summary(seed)}."]
    else:
        node = trace.nodes[step.node]
        name = trace.names[step.node]
        incoming = step.grads[step.node]
        head = f"Step {k}/{last}: {name} ({getattr(node.fn, 'name', node._op)}) received "
        if incoming is None:
            lines = [head + "no gradient, so it sends none."]
        else:
            lines = [head + f"grad {gradient_summary(incoming)} and sends:"]
            for term in step.terms:
                child = trace.names[term.child]
                line = f"  to {child}: grad {gradient_summary(term.grad)}"
                if not term.first:
                    line += f", added to what it had: now {gradient_summary(term.total)}"
                lines.append(line)
    if k == last:
        lines.append("Every gradient is now final: a leaf's is what backward() adds to its .grad.")
    return "\n".join(lines)


def _step_description(trace: TensorBackpropTrace, k: int):
    step = trace.steps[_check_step(trace, k)]
    index_of = {id(node): i for i, node in enumerate(trace.nodes)}

    def describe(node: TensorGraphNode) -> list[str]:
        i = index_of[id(node)]
        grad = step.grads[i]
        return [
            trace.names[i],
            f"{_shape_text(node.shape)} {node.dtype}".rstrip(),
            "grad ?" if grad is None else "grad " + gradient_summary(grad),
        ]

    return describe


def _box_widths(trace: TensorBackpropTrace) -> list[tuple[Any, float]]:
    widths = [0.0] * len(trace.nodes)
    for k in range(len(trace.steps)):
        describe = _step_description(trace, k)
        for i, node in enumerate(trace.nodes):
            widths[i] = max(widths[i], value_box_width(describe(node)))
    return list(zip(trace.nodes, widths))


class TensorBackpropStepper(BackpropStepper):
    """:class:`~minigrad.viz.stepper.BackpropStepper` for tensor graphs: Back / Next / Reset and a slider.

    ``TensorBackpropStepper(loss, names={"W1": W1, ...})``; build it before
    ``loss.backward()`` (it needs the saved tensors). Each step shows the
    gradient a node received (shape and norm) and what it sent to its inputs.
    ``frame(k)``, ``explanation(k)`` and ``static_figure(steps)`` work without
    ipywidgets; the graph and every ``.grad`` are left untouched.
    """

    def __init__(
        self, root: Any, names=None, *, gradient=None, rankdir: str = "LR", max_nodes: int = 200,
        max_width: float | None = FIT_WIDTH,
    ):
        self.trace = trace_tensor_backprop(root, names=names, gradient=gradient, max_nodes=max_nodes)
        self.rankdir = rankdir
        self.max_width = max_width
        self.max_nodes = max_nodes
        self.current_step = 0
        self._frames: dict[int, SVGFigure] = {}
        self._box_widths = _box_widths(self.trace)

    def explanation(self, k: int | None = None) -> str:
        return explain_tensor_step(self.trace, self.current_step if k is None else k)

    def _draw(self, k: int, caption: str | None = None) -> SVGFigure:
        active = self.trace.nodes[active_node(self.trace, k)]
        return draw_graph(
            self.trace.nodes[-1],
            describe=_step_description(self.trace, k),
            highlight=step_colours(self.trace, k),
            highlight_ops=[(active, ACTIVE)],
            rankdir=self.rankdir,
            max_nodes=self.max_nodes,
            caption=caption,
            min_widths=self._box_widths,
            max_width=self.max_width,
        )
