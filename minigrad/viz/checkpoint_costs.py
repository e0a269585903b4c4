"""What a placement of checkpoints on a chain costs: peak bytes measured by the tracker, recompute FLOPs, time.

A chain is a list of layers applied in order (``list(model)`` for a
``Sequential``); a placement is its segments ``(start, end, checkpointed)``,
run by :func:`minigrad.checkpoint.chain_run.run_segments`. For one placement:

- ``measure_placement`` runs forward and backward (``y.sum().backward()``)
  inside ``minigrad.memory.track`` and reads the peak, over the step's
  timeline, of the bytes the step holds besides the model's parameters,
  gradients and optimizer state: activations, the inputs the checkpoints
  keep, the activations recomputed in backward, the gradients in flight.
  It also reads the ``activation`` category's own peak (which counts the
  first three: what the nodes save, the checkpoints' inputs, the recomputed
  tensors).
- ``predicted_peak`` is the layer model the theory uses: forward keeps every
  segment's input and the outputs of the layers not checkpointed; backward
  then recomputes one checkpointed segment at a time, whose outputs join
  what the segments before it keep.
- the recompute cost is the FLOPs of the checkpointed layers (each runs once
  more in backward) over those of one forward, counted by the checkpoint
  stage's rules (:func:`minigrad.checkpoint.chain_costs.count_flops`: a Linear
  ``2*B*in*out``, a convolution its multiply-adds, ReLU and the elementwise
  ops one per output element).
- ``time_step`` is the median wall time of a few forward+backward runs.

Invariants
- With no segment checkpointed the measured peak is the peak of the plain
  chain: ``run_segments`` runs the same ops.
- Every run leaves the parameters' gradients as it found them (None).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

__all__ = ["LayerCost", "PlacementCost", "deep_mlp", "chain_layers", "layer_costs", "uniform_segments",
           "measure_placement", "predicted_peak", "time_once", "time_step"]

MODEL_CATEGORIES = ("parameter", "gradient", "optimizer_state")


@dataclass(frozen=True)
class LayerCost:
    """One layer of the chain: its name, the FLOPs of its forward, the bytes of its output."""

    name: str
    flops: int
    output_bytes: int


@dataclass(frozen=True)
class PlacementCost:
    """What one placement cost in one forward+backward: measured peak bytes, the model's prediction, FLOPs."""

    segments: tuple
    peak_bytes: int  # the tracker's peak of everything but parameters, gradients and optimizer state
    activation_peak: int  # the tracker's peak of the "activation" category alone
    predicted_bytes: int  # predicted_peak of the placement
    recompute_flops: int
    forward_flops: int

    @property
    def recompute_share(self) -> float:
        """The recompute FLOPs as a share of one forward (0 when nothing is checkpointed)."""
        return self.recompute_flops / self.forward_flops if self.forward_flops else 0.0


def deep_mlp(depth: int = 16, width: int = 256, seed: int = 0):
    """``depth`` layers ``Sequential(Linear(width, width), ReLU())`` in a ``Sequential``; seeded."""
    from minigrad import nn
    from minigrad.tensor import manual_seed

    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"deep_mlp: depth must be a positive int, got {depth!r}")
    manual_seed(seed)
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(depth)])


def chain_layers(model) -> list:
    """The layers of a chain: a ``Sequential``'s modules in order, or a list of callables as it is."""
    layers = list(model) if hasattr(model, "__iter__") else None
    if not layers or not all(callable(f) for f in layers):
        raise TypeError(f"chain_layers: expected a Sequential or a list of callables, got {type(model).__name__}")
    return layers


def _leaf_flops(module, inputs, output) -> int:
    """The stage's FLOP count of one call (:func:`minigrad.checkpoint.chain_costs.count_flops`)."""
    from minigrad.checkpoint.chain_costs import count_flops

    return count_flops(module, tuple(inputs[0].shape), tuple(output.shape)) if hasattr(output, "shape") else 0


def layer_costs(layers, x) -> list[LayerCost]:
    """FLOPs and output bytes of each layer, from one forward of ``x`` through them (without grad)."""
    from minigrad.tensor import no_grad

    costs = []
    with no_grad():
        for position, layer in enumerate(layers):
            counted: list[int] = []
            leaves = [m for m in layer.modules() if not list(m.children())] if hasattr(layer, "modules") else []
            handles = [m.register_forward_hook(lambda m, i, o: counted.append(_leaf_flops(m, i, o))) for m in leaves]
            try:
                y = layer(x)
            finally:
                for handle in handles:
                    handle.remove()
            flops = sum(counted) if leaves else y.numel()
            name = type(layer).__name__ if not leaves else " + ".join(type(m).__name__ for m in leaves)
            costs.append(LayerCost(f"{position}: {name}", int(flops), int(y.numel() * y.element_size())))
            x = y
    return costs


def uniform_segments(n_layers: int, segments: int) -> list[tuple[int, int, bool]]:
    """``checkpoint_sequential``'s placement (:func:`minigrad.checkpoint.chain_dp.uniform_segments`), as a list."""
    from minigrad.checkpoint.chain_dp import uniform_segments as uniform

    return list(uniform(n_layers, segments))


def predicted_peak(costs: list[LayerCost], segments, input_bytes: int) -> int:
    """The layer model's peak bytes for ``segments``: see the module docstring. Output ``-1`` is the input."""
    size = {-1: input_bytes, **{i: c.output_bytes for i, c in enumerate(costs)}}
    kept = {start - 1 for start, _, _ in segments}  # every segment's input stays until its backward
    kept |= {i for start, end, checkpointed in segments if not checkpointed for i in range(start, end + 1)}
    peak = sum(size[i] for i in kept)
    for start, end, checkpointed in segments:
        if checkpointed:  # its backward: what the segments before it keep, its input, its recomputed outputs
            before = sum(size[i] for i in kept if i < start)
            peak = max(peak, before + sum(size[i] for i in range(start, end + 1)))
    return peak


def _step(layers, x, segments, **checkpoint_kwargs) -> None:
    from minigrad.checkpoint.chain_run import run_segments

    run_segments(layers, segments, x, **checkpoint_kwargs).sum().backward()


def _clear_grads(layers) -> None:
    for layer in layers:
        for p in (layer.parameters() if hasattr(layer, "parameters") else ()):
            p.grad = None


def measure_placement(layers, x, segments, costs: list[LayerCost] | None = None) -> PlacementCost:
    """One forward+backward of ``segments`` under the tracker: its peaks, the prediction, the recompute FLOPs."""
    from minigrad.memory import track
    from minigrad.memory.timeline import category_totals

    layers = chain_layers(layers)
    costs = layer_costs(layers, x) if costs is None else costs
    segments = tuple(tuple(s) for s in segments)
    _clear_grads(layers)
    with track() as tracker:
        _step(layers, x, segments)
    _clear_grads(layers)
    rows = [dict(tracker.baseline_by_category), *category_totals(tracker.timeline, tracker.baseline_by_category)]
    peak = max(sum(v for c, v in row.items() if c not in MODEL_CATEGORIES) for row in rows)
    activation = max(row.get("activation", 0) for row in rows)
    recompute = sum(c.flops for start, end, checkpointed in segments if checkpointed for c in costs[start:end + 1])
    input_bytes = x.numel() * x.element_size()
    return PlacementCost(segments, peak, activation, predicted_peak(costs, segments, input_bytes), recompute,
                         sum(c.flops for c in costs))


def time_once(layers, x, segments) -> float:
    """Seconds of one forward+backward of ``segments`` (gradients cleared before and after)."""
    _clear_grads(layers)
    start = time.perf_counter()
    _step(layers, x, segments)
    seconds = time.perf_counter() - start
    _clear_grads(layers)
    return seconds


def time_step(layers, x, segments, repeats: int = 3) -> float:
    """Median seconds of ``repeats`` forward+backward runs of ``segments``, after one warm-up run."""
    layers = chain_layers(layers)
    time_once(layers, x, segments)
    return statistics.median(time_once(layers, x, segments) for _ in range(repeats))
