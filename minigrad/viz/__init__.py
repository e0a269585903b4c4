"""Figures and widgets for the course: graph drawings, a backprop stepper, training plots.

``minigrad.viz`` stands outside the stage order: it reads graphs through
duck-typed attributes and never imports a stage at module level.
"""

from minigrad.viz.autocast_graph import AutocastGraph, draw_autocast_graph, small_mlp_step, trace_autocast
from minigrad.viz.checkpoint_chain import CheckpointChain, draw_checkpoint_chain
from minigrad.viz.config_bars import ConfigBars, draw_config_bars
from minigrad.viz.checkpoint_costs import PlacementCost, deep_mlp, measure_placement, uniform_segments
from minigrad.viz.conv_pictures import draw_im2col, feature_maps, im2col_indices, plot_feature_maps, plot_filters
from minigrad.viz.figure_display import show_figures_as_png
from minigrad.viz.float_explorer import FloatExplorer, FloatFormat, draw_float_bits
from minigrad.viz.gradient_histogram import GradientHistogram, collect_gradients, draw_gradient_histogram, precision_shares
from minigrad.viz.graph_layout import LayeredLayout, LayoutEdge, layered_layout
from minigrad.viz.graph_svg import SVGFigure, draw_graph, draw_legend, graph_nodes, stack_figures
from minigrad.viz.layer_stats_plot import plot_activation_stats, plot_grad_norms
from minigrad.viz.layout_picture import draw_layouts, layout_positions, layout_strides
from minigrad.viz.lr_range_plot import plot_lr_range
from minigrad.viz.plots import plot_decision_boundary, plot_loss_curve
from minigrad.viz.recompute_timeline import RecomputeTimeline, plot_recompute_timelines, record_step_timeline
from minigrad.viz.scaler_run import ScalerRun, draw_scaler_run, record_scaler_run
from minigrad.viz.segment_sweep import SegmentSweep, draw_peak_curve, draw_segment_sweep, record_segment_sweep
from minigrad.viz.stepper import BackpropStep, BackpropStepper, BackpropTrace, ChainRuleTerm, trace_backprop
from minigrad.viz.stride_explorer import StrideExplorer, ViewInfo, draw_strided_view, offset_map, strided_view
from minigrad.viz.tensor_graph import TensorBackpropStepper, TensorBackpropTrace, draw_tensor_graph, tensor_graph, trace_tensor_backprop
from minigrad.viz.training_plots import LiveTrainingPlot, compare_curves, plot_digits, smooth

__all__ = [
    "layered_layout", "LayeredLayout", "LayoutEdge",
    "draw_graph", "draw_legend", "SVGFigure", "graph_nodes", "stack_figures",
    "BackpropStepper", "BackpropTrace", "BackpropStep", "ChainRuleTerm", "trace_backprop",
    "plot_loss_curve", "plot_decision_boundary", "show_figures_as_png",
    "StrideExplorer", "ViewInfo", "strided_view", "offset_map", "draw_strided_view",
    "draw_layouts", "layout_strides", "layout_positions",
    "draw_tensor_graph", "tensor_graph", "TensorBackpropStepper", "TensorBackpropTrace", "trace_tensor_backprop",
    "LiveTrainingPlot", "compare_curves", "plot_digits", "smooth",
    "FloatExplorer", "FloatFormat", "draw_float_bits",
    "GradientHistogram", "collect_gradients", "draw_gradient_histogram", "precision_shares",
    "AutocastGraph", "draw_autocast_graph", "trace_autocast", "small_mlp_step",
    "ScalerRun", "draw_scaler_run", "record_scaler_run",
    "CheckpointChain", "draw_checkpoint_chain", "PlacementCost", "deep_mlp", "measure_placement", "uniform_segments",
    "SegmentSweep", "draw_peak_curve", "draw_segment_sweep", "record_segment_sweep",
    "RecomputeTimeline", "plot_recompute_timelines", "record_step_timeline",
    "ConfigBars", "draw_config_bars",
    "plot_grad_norms", "plot_activation_stats", "plot_lr_range",
]
