"""Chapter 04's computation graph coloured by the dtype autocast ran each op in, with the casts it inserted marked.

``trace_autocast(step)`` runs ``step()`` (a forward pass that returns the
loss) inside ``minigrad.amp.autocast`` and records, through the core's
``op_ran`` event, every op that ran: its name, the dtype and shape of what
it produced, its graph node, and whether it is a cast that autocast's policy
inserted (and for which op). The policy is watched by wrapping the
dtype-policy slot for the run, so a cast the step makes itself is not
counted as autocast's. Then ``loss.backward()`` runs, so the leaves carry
their gradients' dtypes.

``draw_autocast_graph(trace)`` draws the graph with
:func:`~minigrad.viz.tensor_graph.draw_tensor_graph`: each box in the
colour of its recorded dtype (float32 blue, float16 orange, bfloat16
green), the pill of every cast autocast inserted in purple with the op it
was for written in its box, and under the graph the casts of tensors that
are not in it (an input that needs no gradient). ``AutocastGraph`` switches
between float16, bfloat16 and autocast off.

Invariants
- Every dtype drawn is one recorded while the step ran (or a leaf's own):
  nothing is looked up in the op lists.
- ``trace_autocast`` leaves the dtype-policy slot as it found it.
- The figure is a pure function of the trace: byte-identical SVG.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Callable

from minigrad.viz.graph_svg import SVGFigure, draw_legend, stack_figures
from minigrad.viz.tensor_graph import _shape_text, describe_tensor_node, draw_tensor_graph, graph_nodes, tensor_graph
from minigrad.viz.widget_frame import WidgetFrame

__all__ = ["OpRecord", "AutocastTrace", "trace_autocast", "small_mlp_step", "draw_autocast_graph", "AutocastGraph",
           "DTYPE_COLOURS"]

DTYPE_COLOURS = {"float32": "blue", "float16": "orange", "bfloat16": "green"}
CAST_COLOUR = "purple"
CHOICES = ("float16", "bfloat16", "off")


@dataclass(frozen=True)
class OpRecord:
    """One op that ran: its name, the dtype and shape of its output, its graph node (None: not recorded), and
    for a cast autocast inserted, the op it was inserted for and the tensor it cast."""

    op: str
    dtype: str
    shape: tuple
    node: Any
    cast_for: str | None = None
    source: Any = None

    @property
    def input_dtype(self) -> str | None:
        return None if self.source is None else str(self.source.dtype)


@dataclass(frozen=True)
class AutocastTrace:
    """A step run under autocast: its loss, every op in order, the region's dtype (None: autocast off), names."""

    loss: Any
    ops: tuple[OpRecord, ...]
    dtype: str | None
    names: dict

    def inserted_casts(self) -> list[OpRecord]:
        return [r for r in self.ops if r.cast_for is not None]

    def record_of(self, node) -> OpRecord | None:
        return next((r for r in self.ops if r.node is node), None)


def trace_autocast(step: Callable[[], Any], dtype: str | None = "float16", device_type: str = "cpu",
                   names: dict | None = None, backward: bool = True) -> AutocastTrace:
    """Run ``step()`` (returns the loss) under ``autocast(device_type, dtype)`` (``None``: without autocast) and
    record every op that ran; then ``loss.backward()`` unless ``backward=False``."""
    from contextlib import nullcontext

    from minigrad.amp import autocast
    from minigrad.tensor import events, get_dtype_policy, set_dtype_policy

    records: list[dict] = []
    inserting_for: list[str] = []  # the op whose arguments the policy is casting, while it casts them

    def watched(inner):
        def policy(cls, args):
            inserting_for.append(cls.op)
            try:
                new = inner(cls, args)
            finally:
                inserting_for.pop()
            for before, after in zip(args, new):  # which tensor each new cast was made from
                if after is not before:
                    for r in records:
                        if r["out"] is getattr(after, "_data", None):
                            r["source"] = before
            return new
        return policy

    def on_op(cls, node, out, device):
        cast_for = inserting_for[-1] if inserting_for and cls.op == "cast" else None
        records.append({"op": cls.op, "dtype": str(out.dtype), "shape": tuple(out.shape), "node": node,
                        "cast_for": cast_for, "out": out, "source": None})

    region = autocast(device_type, dtype=dtype) if dtype is not None else nullcontext()
    with region:
        inner = get_dtype_policy()
        if inner is not None:
            set_dtype_policy(watched(inner))
        try:
            with events.listen("op_ran", on_op):
                loss = step()
        finally:
            if inner is not None:
                set_dtype_policy(inner)
    if backward:
        loss.backward()
    ops = tuple(OpRecord(r["op"], r["dtype"], r["shape"], r["node"], r["cast_for"], r["source"]) for r in records)
    return AutocastTrace(loss, ops, dtype, dict(names or {}))


def small_mlp_step(seed: int = 0):
    """A 4-8-3 MLP's forward pass and loss on a batch of 5: ``(step, names)`` for :func:`trace_autocast`.

    Each call of ``step`` builds the same tensors afresh (seeded), so traces of it compare.
    """
    import numpy as np

    from minigrad import nn
    from minigrad.nn import functional as F
    from minigrad.tensor import manual_seed, tensor

    manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    gen = np.random.default_rng(seed)
    x = tensor(gen.standard_normal((5, 4)).astype(np.float32))
    y = tensor(np.array([0, 2, 1, 0, 2]))
    names = {"W1": model[0].weight, "b1": model[0].bias, "W2": model[2].weight, "b2": model[2].bias, "x": x}

    def step():
        for p in model.parameters():
            p.grad = None
        return F.cross_entropy(model(x), y)

    return step, names


def _describe(trace: AutocastTrace, casts: dict[int, OpRecord]):
    def describe(node) -> list[str]:
        lines = describe_tensor_node(node)
        record = casts.get(id(node.fn))
        if record is not None:
            lines.append(f"cast for {record.cast_for}")
        if node.is_leaf and node.grad is not None:
            lines[-1] = f"grad {node.grad.dtype}"  # the gradient's dtype, the point here
        return lines
    return describe


def draw_autocast_graph(trace: AutocastTrace) -> SVGFigure:
    """The step's graph, each box in its recorded dtype's colour, autocast's casts in purple; a key above it."""
    top = tensor_graph(trace.loss, trace.names)
    nodes = graph_nodes(top, 200, who="draw_autocast_graph")
    dtype_of = {id(r.node): r.dtype for r in trace.ops if r.node is not None}
    colours, op_colours, casts = [], [], {}
    for node in nodes:
        dtype = dtype_of.get(id(node.fn), node.dtype)  # a leaf ran no op: its own dtype
        colours.append((node.fn, DTYPE_COLOURS.get(dtype, "grey")))
        record = trace.record_of(node.fn)
        if record is not None and record.cast_for is not None:
            op_colours.append((node.fn, CAST_COLOUR))
            casts[id(node.fn)] = record
        else:
            op_colours.append((node.fn, DTYPE_COLOURS.get(dtype, "grey")))
    outside = [r for r in trace.inserted_casts() if r.node is None]
    ran = {}
    for r in trace.ops:
        if r.cast_for is None and r.op != "cast":
            ran.setdefault(r.op, set()).add(r.dtype)
    region = f"autocast(dtype={trace.dtype})" if trace.dtype else "autocast off"
    caption = [f"{region}: ops ran as " + ", ".join(f"{op} in {'/'.join(sorted(d))}" for op, d in ran.items()),
               f"casts autocast inserted: {len(trace.inserted_casts())} ({len(casts)} in the graph)"]
    for r in outside:
        name = next((n for n, t in trace.names.items() if t is r.source), "an input")
        caption.append(f"  and {name} {_shape_text(r.shape)} {r.input_dtype} -> {r.dtype} for {r.cast_for}: "
                       f"it needs no gradient, so it is not in the graph")
    graph = draw_tensor_graph(trace.loss, trace.names, highlight=colours, highlight_ops=op_colours,
                              describe=_describe(trace, casts), caption=caption)
    key = [(DTYPE_COLOURS[d], d) for d in DTYPE_COLOURS] + [(CAST_COLOUR, "cast inserted by autocast")]
    return stack_figures([draw_legend(key, max_width=graph.width), graph], gap=0)


class AutocastGraph(WidgetFrame):
    """A step's graph under autocast in float16, bfloat16 or off (a toggle), coloured by the dtypes it ran in.

    ``AutocastGraph(step, names)``: ``step()`` returns the loss and can run
    again (default: :func:`small_mlp_step`); each dtype is traced once.
    """

    def __init__(self, step=None, names=None, dtype: str = "float16", device_type: str = "cpu"):
        if step is None:
            step, default_names = small_mlp_step()
            names = default_names if names is None else names
        self.step, self.names, self.device_type = step, dict(names or {}), device_type
        self._traces: dict[str, AutocastTrace] = {}
        self.dtype = "float16"
        self.set(dtype)

    def set(self, dtype: str) -> None:
        if dtype not in CHOICES:
            raise ValueError(f"AutocastGraph: dtype must be one of {', '.join(CHOICES)}, got {dtype!r}")
        self.dtype = dtype
        self._redraw()

    def trace(self) -> AutocastTrace:
        if self.dtype not in self._traces:
            self._traces[self.dtype] = trace_autocast(self.step, None if self.dtype == "off" else self.dtype,
                                                      self.device_type, self.names)
        return self._traces[self.dtype]

    def figure(self) -> SVGFigure:
        return draw_autocast_graph(self.trace())

    def _rows(self, widgets) -> list:
        self._choice = widgets.ToggleButtons(options=list(CHOICES), value=self.dtype, description="autocast")
        self._choice.observe(self._on_change, names="value")
        self._readout = widgets.HTML()
        return [self._choice, self._readout, self._picture]

    def _on_change(self, change) -> None:
        if not self._syncing:
            self.set(change["new"])

    def _refresh(self) -> None:
        with self._moving_controls():
            self._choice.value = self.dtype
        casts = self.trace().inserted_casts()
        self._readout.value = html.escape(f"{len(casts)} casts inserted: " + ", ".join(
            f"{r.input_dtype}->{r.dtype} for {r.cast_for}" for r in casts) if casts else "no casts inserted")
        super()._refresh()

    def __repr__(self) -> str:
        return f"AutocastGraph({self.dtype}, {len(self.trace().ops)} ops)"
