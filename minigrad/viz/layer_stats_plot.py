"""Chapter 11's layer figures: each layer's gradient norm over the steps, and its activation statistics.

``plot_grad_norms(monitor)`` draws one line per layer of a
``minigrad.training.LayerMonitor`` (its ``grad_norms``): the norm on a log
axis against the step. A step where a layer's norm was inf or NaN (a
diverging run) is marked with a red cross on the top edge and named in the
title; a layer with no gradient at a step (None) leaves a gap.

``plot_activation_stats(monitor)`` draws four panels, one line per layer
against the step of each recorded forward: the mean, the standard
deviation, the share of exact zeros (dead ReLUs show as a share that climbs
towards 100 %) and the largest magnitude (log axis). By default the layers
drawn are the modules without children (a ``Sequential``'s output is its
last layer's again).

The monitor is read by duck typing (``grad_norms``, ``activations``,
``modules``), so this module imports no stage; a plain
``{layer: [norm, ...]}`` dict works for the first figure too. Figures are
made without pyplot and show as PNG (``show_figures_as_png``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from minigrad.viz.figure_display import show_figures_as_png

__all__ = ["plot_grad_norms", "plot_activation_stats", "layer_label"]

COLOURS = ("#3b6fb6", "#e07b39", "#2a9d8f", "#b5179e", "#6c757d", "#e9c46a", "#264653", "#9d0208", "#8ab17d",
           "#f4a261")
BAD = "#b42318"
STATS = (("mean", "mean", "linear"), ("std", "standard deviation", "linear"),
         ("zero_fraction", "share of exact zeros", "linear"), ("max_abs", "largest |x|", "log"))


def layer_label(name: str, module=None) -> str:
    """``"0 (Linear)"``: the module's path (``"(model)"`` for the root) and its class when known."""
    shown = name or "(model)"
    return f"{shown} ({type(module).__name__})" if module is not None else shown


def _norms(source) -> tuple[dict[str, list], dict]:
    if hasattr(source, "grad_norms"):
        return dict(source.grad_norms), dict(getattr(source, "modules", {}))
    if isinstance(source, Mapping):
        return {str(k): list(v) for k, v in source.items()}, {}
    raise TypeError(f"plot_grad_norms: expected a LayerMonitor (or {{layer: [norm, ...]}}), got {type(source).__name__}")


def _legend(fig: Figure, ax, lines) -> None:
    if lines:
        fig.legend(lines, [line.get_label() for line in lines], loc="outside right upper", fontsize="small",
                   title="layer", title_fontsize="small")


def plot_grad_norms(monitor, title: str = "gradient norm per layer") -> Figure:
    """Each layer's gradient norm (its own parameters) per step, log axis; inf/NaN steps crossed in red."""
    show_figures_as_png()
    norms, modules = _norms(monitor)
    norms = {name: values for name, values in norms.items() if len(values)}
    if not norms:
        raise ValueError("plot_grad_norms: no gradient norm recorded; call record_gradients() after backward (or give "
                         "the LayerMonitor the optimizer) while the monitor is active")
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax = fig.subplots()
    lines, bad_steps, top = [], set(), 0.0
    for i, (name, values) in enumerate(norms.items()):
        y = np.array([math.nan if v is None else float(v) for v in values])
        steps = np.arange(1, len(y) + 1)
        bad = ~np.isfinite(y) & np.array([v is not None for v in values])
        bad_steps.update(int(s) for s in steps[bad])
        good = np.where(np.isfinite(y) & (y > 0), y, np.nan)
        if np.isfinite(good).any():
            top = max(top, float(np.nanmax(good)))
        (line,) = ax.plot(steps, good, "o-" if len(y) < 30 else "-", markersize=3, linewidth=1.5,
                          color=COLOURS[i % len(COLOURS)], label=layer_label(name, modules.get(name)))
        lines.append(line)
    if np.isfinite([v for line in lines for v in line.get_ydata()]).any():
        ax.set_yscale("log")
    if bad_steps:
        edge = top * 10 if top > 0 else 1.0
        ax.plot(sorted(bad_steps), [edge] * len(bad_steps), "x", color=BAD, markersize=9, markeredgewidth=2,
                label="inf or NaN")
        title += f" (inf/NaN at step {min(bad_steps)}" + (" and after)" if len(bad_steps) > 1 else ")")
    ax.set_xlabel("step")
    ax.set_ylabel("|grad| of the layer's own parameters" + (" (log)" if ax.get_yscale() == "log" else ""))
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    _legend(fig, ax, lines + [line for line in ax.lines if line.get_label() == "inf or NaN"])
    return fig


def _leaf(name: str, modules: Mapping) -> bool:
    module = modules.get(name)
    return module is None or not any(True for _ in module.children())


def plot_activation_stats(monitor, layers: Sequence[str] | None = None,
                          title: str = "activation statistics per layer") -> Figure:
    """Mean, std, share of exact zeros and largest magnitude of each layer's output, per recorded forward."""
    show_figures_as_png()
    if not hasattr(monitor, "activations"):
        raise TypeError(f"plot_activation_stats: expected a LayerMonitor, got {type(monitor).__name__}")
    modules = dict(getattr(monitor, "modules", {}))
    recorded = {name: records for name, records in monitor.activations.items() if records}
    if layers is None:
        layers = [name for name in recorded if _leaf(name, modules)] or list(recorded)
    unknown = [name for name in layers if name not in monitor.activations]
    if unknown:
        raise ValueError(f"plot_activation_stats: no module named {', '.join(map(repr, unknown))}; the monitor knows "
                         f"{', '.join(repr(n) for n in monitor.activations)}")
    layers = [name for name in layers if name in recorded]
    if not layers:
        raise ValueError("plot_activation_stats: no activation recorded; run forwards in training mode while the "
                         "monitor is active")
    fig = Figure(figsize=(10.0, 5.6), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True).ravel()
    lines = []
    for i, name in enumerate(layers):
        records = recorded[name]
        steps = np.array([r.step + 1 for r in records])
        for ax, (field, label, scale) in zip(axes, STATS):
            y = np.array([getattr(r, field) for r in records], dtype=float)
            if field == "zero_fraction":
                y = 100 * y
            if scale == "log":
                y = np.where(y > 0, y, np.nan)
            (line,) = ax.plot(steps, y, "o-" if len(y) < 30 else "-", markersize=3, linewidth=1.4,
                              color=COLOURS[i % len(COLOURS)], label=layer_label(name, modules.get(name)))
            if ax is axes[0]:
                lines.append(line)
    for ax, (field, label, scale) in zip(axes, STATS):
        if scale == "log" and any(np.isfinite(line.get_ydata()).any() for line in ax.lines):
            ax.set_yscale("log")
        ax.set_title(label + (" (%)" if field == "zero_fraction" else "") + (" (log)" if ax.get_yscale() == "log" else ""))
        ax.grid(alpha=0.3, which="both")
    axes[2].set_ylim(-3, 103)
    for ax in axes[2:]:
        ax.set_xlabel("step")
    fig.suptitle(title)
    _legend(fig, axes[0], lines)
    return fig
