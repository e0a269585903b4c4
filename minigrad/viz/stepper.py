"""Step through the backward pass one node at a time, without touching the graph.

Step 0 seeds ``dL/dL = 1`` at the output. Step k (k >= 1) takes the k-th node
that has children, in reverse topological order, and for each child adds the
chain-rule term ``local × grad(node)`` into the child's gradient.

Invariants
- The graph is never mutated: gradients live in the trace, not in ``.grad``.
- At the last step the gradients equal what ``Value.backward()`` computes on
  a graph whose gradients start at 0.
- A node's gradient is final once every node that uses it has been processed.
- Every frame of one stepper has the same size and the same node positions:
  each box is as wide as its widest text over all steps.
- Frames and static figures carry their colour legend inside the SVG.
- A left-to-right graph wraps into rows at ``max_width`` (``FIT_WIDTH``:
  shown unscaled, its text at 12 px, in JupyterLab at a 1,400 px window).

The math is in plain functions (``trace_backprop``, ``explain_step``,
``step_colours``, ``step_description``); ``BackpropStepper`` is a thin shell
around them and ipywidgets.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from minigrad.viz.graph_svg import (
    FIT_WIDTH, VALUE_STYLE, SVGFigure, draw_graph, draw_legend, format_number, graph_nodes, stack_figures, value_box_width,
)
from minigrad.viz.widget_display import widget_picture
from minigrad.viz.widget_frame import WidgetFrame

__all__ = [
    "ChainRuleTerm", "BackpropStep", "BackpropTrace", "trace_backprop",
    "active_node", "explain_step", "step_colours", "step_description", "box_widths", "BackpropStepper",
]

ACTIVE, FINAL, PARTIAL = "yellow", "green", "blue"
LEGEND = (
    (ACTIVE, "processing"),
    (FINAL, "final gradient"),
    (PARTIAL, "partial sum"),
    (VALUE_STYLE, "not reached (grad = ?)"),
)


@dataclass(frozen=True)
class ChainRuleTerm:
    """One ``grad(child) += local × upstream`` of a step; ``total`` is grad(child) afterwards."""

    child: int  # index into BackpropTrace.nodes
    local: float  # d(node)/d(child)
    upstream: float  # grad(node)
    product: float  # local * upstream
    total: float
    first: bool  # True when this is the child's first contribution


@dataclass(frozen=True)
class BackpropStep:
    """The state after a step: ``grads[i]`` is None for a node not reached yet."""

    number: int
    node: int | None  # the node processed at this step; None at step 0
    terms: tuple[ChainRuleTerm, ...]
    grads: tuple[float | None, ...]
    final: tuple[bool, ...]


@dataclass(frozen=True)
class BackpropTrace:
    """Every step of one backward pass; ``nodes`` are children-first, the output last."""

    nodes: tuple[Any, ...]
    names: tuple[str, ...]  # the label, made unique with "#i" when shared; "v<i>" if none
    steps: tuple[BackpropStep, ...]

    @property
    def last_step(self) -> int:
        return len(self.steps) - 1

    @property
    def output(self) -> int:
        return len(self.nodes) - 1


def trace_backprop(root: Any, max_nodes: int | None = None) -> BackpropTrace:
    """Run the backward pass of ``root`` on the side, recording every step."""
    nodes = graph_nodes(root, max_nodes, who="BackpropStepper")
    index_of = {id(node): i for i, node in enumerate(nodes)}
    children = [[index_of[id(c)] for c in getattr(node, "_children", ()) or ()] for node in nodes]
    local_grads = []
    for i, node in enumerate(nodes):
        grads = tuple(float(g) for g in getattr(node, "_local_grads", ()) or ())
        if len(grads) != len(children[i]):
            raise ValueError(
                f"BackpropStepper: node {_names(nodes)[i]} (op {getattr(node, '_op', '')!r}) has "
                f"{len(children[i])} children but {len(grads)} local gradients; they must match"
            )
        local_grads.append(grads)

    users_left = [0] * len(nodes)  # distinct parents not yet processed
    for kids in children:
        for child in set(kids):
            users_left[child] += 1
    grads: list[float | None] = [None] * len(nodes)
    grads[-1] = 1.0
    final = [count == 0 for count in users_left]
    steps = [BackpropStep(0, None, (), tuple(grads), tuple(final))]

    for node in reversed(range(len(nodes))):
        if not children[node]:
            continue
        upstream = grads[node]
        terms = []
        for child, local in zip(children[node], local_grads[node]):
            product = local * upstream
            first = grads[child] is None
            grads[child] = product if first else grads[child] + product
            terms.append(ChainRuleTerm(child, local, upstream, product, grads[child], first))
        for child in set(children[node]):
            users_left[child] -= 1
            final[child] = users_left[child] == 0
        steps.append(BackpropStep(len(steps), node, tuple(terms), tuple(grads), tuple(final)))
    return BackpropTrace(tuple(nodes), tuple(_names(nodes)), tuple(steps))


def explain_step(trace: BackpropTrace, k: int) -> str:
    """What step ``k`` does, one chain-rule product a line."""
    step = trace.steps[_check_step(trace, k)]
    last = trace.last_step
    out = trace.names[trace.output]
    if step.node is None:
        lines = [f"Step 0/{last}: start at the output {out}: grad({out}) = d{out}/d{out} = 1."]
    else:
        name = trace.names[step.node]
        op = getattr(trace.nodes[step.node], "_op", "") or "?"
        lines = [f"Step {k}/{last}: {name} (op {op}) sends its gradient to its inputs by the chain rule:"]
        for term in step.terms:
            child = trace.names[term.child]
            line = (
                f"  grad({child}) += local × grad({name}) = {format_number(term.local)} × "
                f"{format_number(term.upstream)} = {format_number(term.product)}"
            )
            if not term.first:
                line += f", so grad({child}) = {format_number(term.total)}"
            lines.append(line)
    if k == last:
        lines.append("Every gradient is now final: these are the values backward() computes.")
    return "\n".join(lines)


def active_node(trace: BackpropTrace, k: int) -> int:
    """The node step ``k`` works on: the output at step 0, else the node it processes."""
    step = trace.steps[_check_step(trace, k)]
    return trace.output if step.node is None else step.node


def step_colours(trace: BackpropTrace, k: int) -> list[tuple[Any, str]]:
    """(node, colour) pairs: the node being processed, final gradients, partial sums."""
    step = trace.steps[_check_step(trace, k)]
    active = active_node(trace, k)
    pairs = []
    for i, node in enumerate(trace.nodes):
        if i == active:
            pairs.append((node, ACTIVE))
        elif step.final[i]:
            pairs.append((node, FINAL))
        elif step.grads[i] is not None:
            pairs.append((node, PARTIAL))
    return pairs


def step_description(trace: BackpropTrace, k: int):
    """A ``describe`` for draw_graph: name, data and the gradient known at step ``k`` (``?`` if none)."""
    step = trace.steps[_check_step(trace, k)]
    index_of = {id(node): i for i, node in enumerate(trace.nodes)}

    def describe(node: Any) -> list[str]:
        i = index_of[id(node)]
        grad = step.grads[i]
        return [
            trace.names[i],
            f"data = {format_number(node.data)}",
            f"grad = {'?' if grad is None else format_number(grad)}",
        ]

    return describe


def _names(nodes: Sequence[Any]) -> list[str]:
    labels = [str(getattr(node, "label", "") or "") for node in nodes]
    uses = Counter(labels)
    return [
        f"v{i}" if not label else label if uses[label] == 1 else f"{label}#{i}"
        for i, label in enumerate(labels)
    ]


def _check_step(trace: BackpropTrace, k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= trace.last_step:
        raise ValueError(f"step must be an int from 0 to {trace.last_step}, got {k!r}")
    return k


def box_widths(trace: BackpropTrace) -> list[tuple[Any, float]]:
    """(node, width) pairs: the widest box each node needs at any step."""
    widths = [0.0] * len(trace.nodes)
    for k in range(len(trace.steps)):
        describe = step_description(trace, k)
        for i, node in enumerate(trace.nodes):
            widths[i] = max(widths[i], value_box_width(describe(node)))
    return list(zip(trace.nodes, widths))


class BackpropStepper(WidgetFrame):
    """Back / Next / Reset buttons and a slider over the steps of a backward pass.

    ``frame(k)`` and ``explanation(k)`` work without ipywidgets; ``.widget``
    builds the ipywidgets VBox on first use. The graph is never modified.
    """

    def __init__(self, root: Any, *, rankdir: str = "LR", max_nodes: int = 400, max_width: float | None = FIT_WIDTH):
        self.trace = trace_backprop(root, max_nodes=max_nodes)
        self.rankdir = rankdir
        self.max_width = max_width
        self.max_nodes = max_nodes
        self.current_step = 0
        self._frames: dict[int, SVGFigure] = {}
        self._box_widths = box_widths(self.trace)

    @property
    def last_step(self) -> int:
        return self.trace.last_step

    def explanation(self, k: int | None = None) -> str:
        return explain_step(self.trace, self.current_step if k is None else k)

    def frame(self, k: int | None = None) -> SVGFigure:
        """The graph at step ``k`` (default: the current step)."""
        k = _check_step(self.trace, self.current_step if k is None else k)
        if k not in self._frames:
            graph = self._draw(k)
            self._frames[k] = stack_figures([draw_legend(LEGEND, graph.width), graph], gap=0)
        return self._frames[k]

    def static_figure(self, steps: int | Sequence[int] | None = None) -> SVGFigure:
        """The legend, then frames with their explanations, top to bottom: for notebooks shown without a kernel.

        ``steps`` is one step, a list of steps, or None for the last step.
        """
        steps = [self.last_step] if steps is None else [steps] if isinstance(steps, int) else list(steps)
        panels = [self._draw(k, caption=self.explanation(k)) for k in steps]
        legend = draw_legend(LEGEND, max((panel.width for panel in panels), default=0))
        return stack_figures([legend, *panels])

    def _draw(self, k: int, caption: str | None = None) -> SVGFigure:
        active = self.trace.nodes[active_node(self.trace, k)]
        return draw_graph(
            self.trace.nodes[-1],
            describe=step_description(self.trace, k),
            highlight=step_colours(self.trace, k),
            highlight_ops=[(active, ACTIVE)],
            rankdir=self.rankdir,
            max_nodes=self.max_nodes,
            caption=caption,
            min_widths=self._box_widths,
            max_width=self.max_width,
        )

    def step(self, k: int) -> None:
        """Show step ``k`` (0 to ``last_step``)."""
        self.current_step = _check_step(self.trace, k)
        if self._widget is not None:
            self._slider.value = self.current_step
            self._refresh()

    # ------------------------------------------------------------ the widget

    def _rows(self, widgets) -> list:
        button = widgets.Layout(width="90px")
        self._back = widgets.Button(description="◀ Back", layout=button)
        self._next = widgets.Button(description="Next ▶", layout=button)
        self._reset = widgets.Button(description="Reset", layout=button)
        self._slider = widgets.IntSlider(value=self.current_step, min=0, max=self.last_step, description="step")
        self._text = widgets.HTML()
        self._back.on_click(lambda _: self.step(max(0, self.current_step - 1)))
        self._next.on_click(lambda _: self.step(min(self.last_step, self.current_step + 1)))
        self._reset.on_click(lambda _: self.step(0))
        self._slider.observe(self._on_slider, names="value")
        self._shown = None
        return [[self._back, self._next, self._reset, self._slider], self._picture, self._text]

    def _on_slider(self, change) -> None:
        self.current_step = change["new"]
        self._refresh()

    def _refresh(self) -> None:
        k = self.current_step
        if self._shown == (k, self.zoom):
            return
        self._shown = (k, self.zoom)
        self._picture.value = widget_picture(self._zoomed(self.frame(k)).svg)
        self._text.value = f"<pre style='margin:4px 0;white-space:pre-wrap'>{html.escape(self.explanation(k))}</pre>"
        self._back.disabled = k == 0
        self._next.disabled = k == self.last_step
