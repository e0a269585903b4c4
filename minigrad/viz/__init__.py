"""Figures and widgets for the course: graph drawings, a backprop stepper, training plots.

``minigrad.viz`` stands outside the stage order: it reads graphs through
duck-typed attributes and never imports a stage at module level.
"""

from minigrad.viz.figure_display import show_figures_as_png
from minigrad.viz.graph_layout import LayeredLayout, LayoutEdge, layered_layout
from minigrad.viz.graph_svg import SVGFigure, draw_graph, draw_legend, graph_nodes, stack_figures
from minigrad.viz.plots import plot_decision_boundary, plot_loss_curve
from minigrad.viz.stepper import BackpropStep, BackpropStepper, BackpropTrace, ChainRuleTerm, trace_backprop

__all__ = [
    "layered_layout", "LayeredLayout", "LayoutEdge",
    "draw_graph", "draw_legend", "SVGFigure", "graph_nodes", "stack_figures",
    "BackpropStepper", "BackpropTrace", "BackpropStep", "ChainRuleTerm", "trace_backprop",
    "plot_loss_curve", "plot_decision_boundary", "show_figures_as_png",
]
