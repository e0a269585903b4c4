"""What each layer of a chain costs to store, to recompute and to offload: the planner's inputs, measured.

``measure_chain(model, input_shape, batch_size)`` runs a copy of a
``Sequential`` forward, layer by layer, and records per layer

- ``saved_bytes``: the buffers its forward keeps for backward (what the
  core's saved-tensor hooks see), each buffer counted whole and once, as
  the memory tracker counts them (:mod:`minigrad.memory.buffers`: a view
  adds nothing). Parameters are not activations (the planner counts them
  apart), nor is the model's input batch. A buffer on the boundary between
  two layers - a ReLU keeps its output, the next Linear keeps the same array
  as its input - belongs to the layer that *reads* it, the later one: then a
  stored segment counts exactly the boundary buffers it keeps, and a
  checkpointed segment's input is never counted twice with the saves of the
  stored segment before it (:mod:`.chain_dp`'s memory model);
- ``made_bytes``: the same buffers, each for the layer whose forward made it
  (the ReLU, for its output): what running that layer again gives back, the
  figure :func:`offload_or_recompute` weighs;
- ``input_bytes`` and ``output_bytes``: its input's and output's buffers;
- ``flops``: its forward's arithmetic, counted from the shapes each leaf
  module sees (module forward hooks): a Linear ``2 * rows * in * out`` (the
  product; the bias adds ``rows * out``, left out), a Conv2d
  ``2 * B * Cout * Hout * Wout * (Cin / groups) * kh * kw``, a pooling
  layer ``kh * kw`` per output element, a view (Flatten, a reshape that
  copies nothing) 0, any other module one per output element (ReLU,
  dropout, batch norm's few per element taken as one). Arithmetic a block
  does outside its leaf modules (``x + f(x)``) is not counted.

**Exact at any batch size, measured at three small ones.** As
:func:`minigrad.memory.estimate` does, the chain runs at batches 2, 3 and 4:
each figure of the course's layers is affine in the batch size, the third
batch checks it (else :class:`ValueError`, naming the layer), and the
figures at ``batch_size`` follow exactly, so a batch that would need
gigabytes costs nothing to measure.

``offload_or_recompute(costs, cards)`` then says, per layer and per card,
which of the two ways to free the saved bytes a layer made costs less time:

- offloading moves them to the host and back: ``2 * made_bytes / PCIe
  bandwidth`` (the card's link at its theoretical rate, not overlapped);
- recomputing runs the layer again: its FLOPs at the card's FP32 peak, or,
  when longer, the time to read its input and parameters and write its
  output at the card's memory bandwidth (a ReLU does one FLOP per eight
  bytes: the memory bound decides, not the arithmetic).

Both are lower bounds a real card does not reach; their ratio is the point.
"""

from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass

import minigrad.tensor as mt
from minigrad import nn
from minigrad.memory import format_bytes, get_profile
from minigrad.memory.estimate import example_shape
from minigrad.tensor import saved_tensors_hooks
from minigrad.tensor.backend import root_array

__all__ = ["ChainCosts", "LayerTradeoff", "measure_chain", "count_flops", "offload_or_recompute",
           "tradeoff_table"]

MEASURED_BATCHES = (2, 3, 4)  # as minigrad.memory.estimate: a batch of one can make fewer copies


@dataclass(frozen=True)
class ChainCosts:
    """Per-layer figures of a chain at ``batch_size`` (see the module docstring); one entry per layer, in order."""

    names: tuple  # the layers' names in the Sequential
    kinds: tuple  # their classes' names
    input_shape: tuple
    batch_size: int
    saved_bytes: tuple  # each saved buffer for the layer that reads it (the planner's figure)
    made_bytes: tuple  # each saved buffer for the layer that made it (what recomputing that layer rebuilds)
    input_bytes: tuple
    output_bytes: tuple
    parameter_bytes: tuple  # each layer's parameters (read again by a recompute)
    flops: tuple
    reads_batch: tuple  # True where the layer's input is the model's batch (or a view of it)
    is_view: tuple  # True where the layer's output shares its input's buffer (Flatten): nothing to recompute

    def __len__(self) -> int:
        return len(self.names)

    @property
    def chain_input_bytes(self) -> tuple:
        """``input_bytes`` as a checkpoint adds them: 0 where the input is the batch, which the caller holds anyway."""
        return tuple(0 if batch else n for n, batch in zip(self.input_bytes, self.reads_batch))

    def __str__(self) -> str:
        header = f"{'layer':<24}{'saved':>12}{'input':>12}{'output':>12}{'FLOPs':>16}"
        lines = [f"Chain of {len(self)} layers, input {self.input_shape}, batch {self.batch_size}", header,
                 "-" * len(header)]
        for i in range(len(self)):
            lines.append(f"{self.names[i] + ' ' + self.kinds[i]:<24}{format_bytes(self.saved_bytes[i]):>12}"
                         f"{format_bytes(self.input_bytes[i]):>12}{format_bytes(self.output_bytes[i]):>12}"
                         f"{self.flops[i]:>16,}")
        lines.append(f"{'total':<24}{format_bytes(sum(self.saved_bytes)):>12}{'':>24}{sum(self.flops):>16,}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- FLOPs


def count_flops(module, input_shape: tuple, output_shape: tuple, is_view: bool = False) -> int:
    """Forward FLOPs of one call of a leaf ``module`` from its input and output shapes (the module docstring's rules)."""
    output_numel = _numel(output_shape)
    if is_view:
        return 0
    if isinstance(module, nn.Linear):
        rows = _numel(input_shape) // module.in_features
        return 2 * rows * module.in_features * module.out_features
    if isinstance(module, nn.Conv2d):
        kh, kw = module.kernel_size
        return 2 * output_numel * (module.in_channels // getattr(module, "groups", 1)) * kh * kw
    if isinstance(module, (nn.MaxPool2d, nn.AvgPool2d)):
        kernel = module.kernel_size
        kh, kw = (kernel, kernel) if isinstance(kernel, numbers.Integral) else kernel
        return output_numel * kh * kw
    return output_numel


def _numel(shape) -> int:
    count = 1
    for n in shape:
        count *= int(n)
    return count


# ----------------------------------------------------------------------------- measuring


def measure_chain(model, input_shape, batch_size: int, dtype=None) -> ChainCosts:
    """Per-layer saved, input and output bytes and forward FLOPs of the ``Sequential`` ``model`` at ``batch_size``.

    ``input_shape``: one example's shape, without the batch axis. ``dtype``:
    the inputs' and parameters' dtype (default: the model's). A copy of the
    model runs (in training mode); the model and the global random state are left alone.
    """
    if not isinstance(model, nn.Sequential) or len(model) == 0:
        raise TypeError(f"measure_chain: expected a non-empty nn.Sequential (a chain of layers), got "
                        f"{type(model).__name__}" + (" with no layers" if isinstance(model, nn.Sequential) else ""))
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ValueError(f"measure_chain: batch_size must be a whole number >= 1, got {batch_size!r}")
    shape = example_shape(input_shape, op="measure_chain")
    with mt.fork_rng():
        work = copy.deepcopy(model)
        if dtype is not None:
            work.to(dtype)
        work.train()
        runs = [_run_chain(work, shape, batch) for batch in MEASURED_BATCHES]
    structure = {key: runs[0][key] for key in ("reads_batch", "is_view")}
    for run in runs[1:]:
        if any(run[key] != value for key, value in structure.items()):
            raise ValueError("measure_chain: the chain's buffers are shared differently at batches "
                             f"{MEASURED_BATCHES}; the planner needs layers whose structure does not depend on the batch")
    names = tuple(work._modules)
    figures = {}
    for key in ("saved_bytes", "made_bytes", "input_bytes", "output_bytes", "parameter_bytes", "flops"):
        figures[key] = tuple(_affine(key, names[i], [run[key][i] for run in runs], int(batch_size))
                             for i in range(len(names)))
    return ChainCosts(names, tuple(type(layer).__name__ for layer in work), shape, int(batch_size),
                      **figures, **structure)


def _affine(key: str, name: str, values: list, batch: int) -> int:
    """The figure at ``batch`` from its values at MEASURED_BATCHES (equally spaced, consecutive)."""
    first, second, third = values
    if third - second != second - first:
        raise ValueError(f"measure_chain: layer {name}'s {key.replace('_', ' ')} are {values} at batches "
                         f"{MEASURED_BATCHES}: not affine in the batch size, so they cannot be extrapolated")
    return first + (second - first) * (batch - MEASURED_BATCHES[0])


def _run_chain(work, shape: tuple, batch: int) -> dict:
    """One forward of the chain at ``batch``, layer by layer, with what each layer saved and computed."""
    parameters = list(work.parameters())
    x_dtype = next((p.dtype for p in parameters if mt.is_floating_point(p.dtype)), None)
    device = parameters[0].device if parameters else None
    x = mt.randn(batch, *shape, dtype=x_dtype, device=device)
    not_activations = {id(root_array(t._data)) for t in [*parameters, *work.buffers()]}
    batch_root = id(root_array(x._data))
    current = [0]  # the layer running
    saved: list[tuple[int, object]] = []  # (layer, saved array), in save order; kept alive while measuring
    flops = [0] * len(work)

    def pack(t):
        saved.append((current[0], t._data))
        return t

    def on_leaf(module, args, output):
        arrays = [a for a in args if isinstance(a, mt.Tensor)]
        if arrays and isinstance(output, mt.Tensor):
            same = root_array(output._data) is root_array(arrays[0]._data)
            flops[current[0]] += count_flops(module, arrays[0].shape, output.shape, is_view=same)

    handles = [m.register_forward_hook(on_leaf) for m in work.modules() if not m._modules]
    inputs, outputs = [], []
    try:
        with saved_tensors_hooks(pack, lambda t: t):
            for index, layer in enumerate(work):
                current[0] = index
                inputs.append(x)
                x = layer(x)
                outputs.append(x)
    finally:
        for handle in handles:
            handle.remove()
    in_roots = [root_array(t._data) for t in inputs]
    out_roots = [root_array(t._data) for t in outputs]
    first_reader: dict[int, int] = {}
    maker: dict[int, int] = {}
    for index, (root, out) in enumerate(zip(in_roots, out_roots)):
        first_reader.setdefault(id(root), index)
        maker.setdefault(id(out), index)
    saved_bytes, made_bytes = [0] * len(work), [0] * len(work)
    counted: set[int] = set()
    for layer, array in saved:
        root = root_array(array)
        key = id(root)
        if key in counted or key in not_activations or key == batch_root:
            continue
        counted.add(key)
        saved_bytes[first_reader.get(key, layer)] += root.nbytes
        made_bytes[maker.get(key, layer)] += root.nbytes  # not a layer's output: made inside the layer saving it
    return {
        "saved_bytes": saved_bytes,
        "made_bytes": made_bytes,
        "input_bytes": [root.nbytes for root in in_roots],
        "output_bytes": [root.nbytes for root in out_roots],
        "parameter_bytes": [sum(p._data.nbytes for p in layer.parameters()) for layer in work],
        "flops": flops,
        "reads_batch": tuple(id(root) == batch_root for root in in_roots),
        "is_view": tuple(out is root for out, root in zip(out_roots, in_roots)),
    }


# ----------------------------------------------------------------------------- offload or recompute?


@dataclass(frozen=True)
class LayerTradeoff:
    """One layer on one card: the time to offload the saved bytes it made against the time to recompute it."""

    layer: str
    card: str
    made_bytes: int  # the saved buffers the layer's forward made
    flops: int
    offload_seconds: float  # 2 * made bytes over the PCIe link
    recompute_seconds: float  # max(FLOPs at the FP32 peak, bytes read and written at the memory bandwidth)

    @property
    def winner(self) -> str:
        """``"offload"``, ``"recompute"``, or ``"nothing saved"`` for a layer that keeps no bytes."""
        if self.made_bytes == 0:
            return "nothing saved"
        return "offload" if self.offload_seconds < self.recompute_seconds else "recompute"


def offload_or_recompute(costs: ChainCosts, cards=("gtx1050", "rtx3060")) -> list[LayerTradeoff]:
    """For each card and each layer, the cheaper way to free the layer's saved bytes (see the module docstring)."""
    if not isinstance(costs, ChainCosts):
        raise TypeError(f"offload_or_recompute: expected the ChainCosts of measure_chain(...), got "
                        f"{type(costs).__name__}")
    profiles = [get_profile(card) for card in ([cards] if isinstance(cards, str) else cards)]
    rows = []
    for profile in profiles:
        if profile.pcie_gb_s is None:
            raise ValueError(f"offload_or_recompute: the profile {profile.short_name!r} has no PCIe bandwidth "
                             "(GPUProfile(..., pcie_gb_s=...))")
        for i in range(len(costs)):
            traffic = 0 if costs.is_view[i] else (costs.input_bytes[i] + costs.output_bytes[i]
                                                  + costs.parameter_bytes[i])
            recompute = max(costs.flops[i] / (profile.fp32_tflops * 1e12), traffic / (profile.bandwidth_gb_s * 1e9))
            rows.append(LayerTradeoff(f"{costs.names[i]} {costs.kinds[i]}", profile.short_name, costs.made_bytes[i],
                                      costs.flops[i], 2 * costs.made_bytes[i] / (profile.pcie_gb_s * 1e9),
                                      recompute))
    return rows


def tradeoff_table(costs: ChainCosts, cards=("gtx1050", "rtx3060")) -> str:
    """:func:`offload_or_recompute` as a text table: one row per layer, offload / recompute µs and winner per card."""
    rows = offload_or_recompute(costs, cards)
    cards = list(dict.fromkeys(row.card for row in rows))
    by_card = {card: [row for row in rows if row.card == card] for card in cards}
    header = f"{'layer':<22}{'made':>11}" + "".join(f"{card + ' off/re µs':>24}{'':>14}" for card in cards)
    lines = [header, "-" * len(header)]
    for i in range(len(costs)):
        first = by_card[cards[0]][i]
        cells = "".join(f"{by_card[c][i].offload_seconds * 1e6:>12.2f} /{by_card[c][i].recompute_seconds * 1e6:>10.2f}"
                        f"  {by_card[c][i].winner:<14}" for c in cards)
        lines.append(f"{first.layer:<22}{format_bytes(first.made_bytes):>11}{cells}")
    lines.append("made = the saved bytes the layer's forward made; off = 2 x made bytes over the PCIe link; re = FLOPs at the FP32 peak or bytes at the memory "
                 "bandwidth, the longer")
    return "\n".join(lines)
