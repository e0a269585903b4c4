"""Activation checkpointing: the activation high-water mark and the step time of each way to trade compute for
memory, minigrad beside PyTorch CPU, on a 64-layer MLP and the chapter-06 CNN.

    python benchmarks/checkpointing.py [--rounds 5] [--steps 2] [--models mlp cnn] [--threads 1]

Models (random data; the same weights in both frameworks)
- ``mlp``: 64 x (Linear(256, 256) + ReLU), batch 128, MSE loss against a random target. The weights are
  Kaiming-normal (std sqrt(2 / 256)), biases zero: with the default uniform init the signal shrinks about
  2.5x a layer and after 64 layers the gradients are denormal floats, which would time the FPU's slow path.
- ``cnn``: ``minigrad.training.recipes.mnist_cnn`` (8 modules), batch 64, MNIST-shaped input, cross entropy;
  its own init.
PyTorch's models have the same architecture with minigrad's weights copied in.

The step is forward + loss + backward. No optimizer step: checkpointing does not change it, and it
would only dilute the ratios. Gradients are cleared (and the garbage collector run) before each step,
outside the timing.

Contenders (minigrad)
- ``no checkpointing``: the model as it is; every ratio is against it.
- ``k segments``: ``checkpoint_sequential(model, k, x)`` for k = 1, 2, 4, 8, 16, capped at the number of
  modules (the CNN has 8). One segment checkpoints nothing (the last segment always runs normally), as in
  PyTorch; it shows what the machinery costs. The MLP's Sequential has 128 modules (Linear, ReLU, ...), so
  its segments hold 128 / k modules = 64 / k layers.
- ``selective``: the whole model as one ``checkpoint`` with
  ``context_fn=selective_checkpoint_context(save_expensive)``: linear's and conv2d's saved tensors kept,
  the others recomputed.
- ``offload``: ``save_on_cpu(card="gtx1050")`` around the forward; its time column is this machine's
  (the copies are real host copies), the PCIe seconds beside it are the GTX 1050's link modelled
  (bytes each way / its bandwidth, not overlapped).
- ``plan @ s``: ``plan(model, input_shape, budget_bytes=B, batch_size=..., optimizer="sgd").apply(model)``.
  ``budget_bytes`` is the whole step's budget (planner.py: fixed bytes - parameters, gradients, the batch -
  plus what the chain model leaves out - the loss, gradients in flight - plus the chain's activations), so
  B is ``fixed + outside + A``, A an activation budget in the chain model, s = A / (its peak of storing
  everything). A is 50 %, 35 % and 25 % of storing everything where a plan fits it (the MLP); where the
  smallest peak any plan reaches is above a share (the CNN: its first conv's im2col columns alone are 27 %,
  and no plan goes below 53 %), the lowest plans of the chain model's frontier - the distinct plans
  ``plan_chain`` gives as the budget walks down - take those places instead, so the three plans differ.
- ``budget @ 35 %``: ``with minigrad.checkpoint.budget(0.35 * the unconstrained activation peak)``
  (eviction under a memory budget) where that exists; otherwise its rows are left out with a note.

Memory: minigrad's column is the tracker's activation high-water mark of one step (after a warm-up step):
the largest ``activation`` total over the timeline, ``max(category_totals(mem.timeline,
mem.baseline_by_category))["activation"]`` as ``minigrad.amp.step_memory`` takes it - the bytes nodes keep
for backward, including the checkpoints' kept inputs and the recomputed tensors; offloaded bytes are host
memory and are not in it.

PyTorch's column is counted with its saved-tensor hooks, which cannot see everything: inside
``torch.utils.checkpoint``'s non-reentrant frames, torch's own hooks are the innermost ones, so the
tensors a checkpointed segment saves - in its first run and in its recompute - never reach an outer
hook, and the frame keeps its inputs in a closure, not as saved tensors. So the column counts the
distinct storages alive among (a) the tensors the outer ``saved_tensors_hooks`` packed (the stored last
segment and the loss) and (b) every tensor that went into or came out of a module (forward pre- and
post-hooks, first run and recompute alike), which covers the checkpoints' kept inputs and the recomputed
activations; parameters and the batch are left out. It is sampled at every pack and every module call.
Against minigrad's ``activation`` category, (b) also counts the one module output in flight between two
modules (a Linear's output on its way to its ReLU, which minigrad counts as ``temporary``): about one
layer's output more at any moment.

Time: every contender (both frameworks, both models) takes a turn in each of ``--rounds`` rounds, in one
process, the order rotated each round; a turn is one warm-up step and ``--steps`` timed steps, its figure
their median; the figure is the median over rounds. Steps are timed in process CPU time
(``time.process_time``), not wall time: on a machine shared with other work, CPU time is what the
step itself spent, and with one BLAS thread it is the same work the wall clock would see alone. BLAS (OpenBLAS, MKL, OpenMP) and PyTorch run on
``--threads`` threads; the script re-executes itself with those variables set, since BLAS reads them once
at start-up. Each framework's ratios are to its own un-checkpointed step.

Acceptance (printed at the end): the MLP at 8 segments keeps at most (2 sqrt(n) + 1) / n = 26.6 % of the
activations (n = 64 layers: 7 kept segment inputs, the last segment's 8 layers, one recomputed segment's
8 layers in backward, plus one), and its step costs at most 40 % more time, with PyTorch's overhead beside.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time
import weakref
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np

MLP_LAYERS, MLP_WIDTH = 64, 256
BATCH = {"mlp": 128, "cnn": 64}
SEGMENTS = (1, 2, 4, 8, 16)
PLAN_SHARES = (0.50, 0.35, 0.25)
BUDGET_SHARE = 0.35
CARD = "gtx1050"
ACCEPTANCE_SEGMENTS, OVERHEAD_TARGET = 8, 0.40
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
MIB = 2 ** 20


# ----------------------------------------------------------------------------------------------- workloads

@dataclass
class Workload:
    """One model, its batch and its loss, in minigrad (and, with PyTorch installed, in torch with the same weights)."""

    name: str
    title: str
    model: object
    x: object
    y: object
    loss_fn: object
    input_shape: tuple
    batch_size: int
    torch_model: object = None
    torch_x: object = None
    torch_y: object = None
    torch_loss_fn: object = None


def build_workload(name: str, layers: int = MLP_LAYERS, seed: int = 0, with_torch: bool = True) -> Workload:
    """The ``mlp`` (``layers`` x Linear(256, 256) + ReLU) or the ``cnn`` workload; see the module docstring."""
    import minigrad.tensor as mt
    from minigrad import nn
    from minigrad.training.recipes import mnist_cnn

    rng = np.random.default_rng(seed)
    mt.manual_seed(seed)
    batch = BATCH[name]
    if name == "mlp":
        modules = []
        for _ in range(layers):
            linear = nn.Linear(MLP_WIDTH, MLP_WIDTH)
            nn.init.kaiming_normal_(linear.weight, nonlinearity="relu", generator=rng)
            nn.init.zeros_(linear.bias)
            modules += [linear, nn.ReLU()]
        model, loss_fn = nn.Sequential(*modules), nn.MSELoss()
        input_shape = (MLP_WIDTH,)
        x = rng.standard_normal((batch, MLP_WIDTH)).astype(np.float32)
        y = rng.standard_normal((batch, MLP_WIDTH)).astype(np.float32)
        title = f"{layers}-layer MLP, {layers} x (Linear({MLP_WIDTH}, {MLP_WIDTH}) + ReLU), batch {batch}, MSE loss"
    elif name == "cnn":
        model, loss_fn = mnist_cnn(), nn.CrossEntropyLoss()
        input_shape = (1, 28, 28)
        x = rng.standard_normal((batch, *input_shape)).astype(np.float32)
        y = rng.integers(0, 10, batch).astype(np.int64)
        title = f"chapter-06 CNN (mnist_cnn, {len(model)} modules), batch {batch}, cross entropy"
    else:
        raise ValueError(f"build_workload: unknown model {name!r}; expected one of {sorted(BATCH)}")
    w = Workload(name, title, model, mt.from_numpy(x), mt.from_numpy(y), loss_fn, input_shape, batch)
    if with_torch and has_torch():
        _add_torch(w, x, y)
    return w


def _add_torch(w: Workload, x: np.ndarray, y: np.ndarray) -> None:
    """The same architecture in torch, with the minigrad model's parameters copied in (in order, shapes checked)."""
    import torch
    from torch import nn

    def twin(module):
        kind = type(module).__name__
        if kind == "Linear":
            return nn.Linear(module.in_features, module.out_features)
        if kind == "Conv2d":
            return nn.Conv2d(module.in_channels, module.out_channels, module.kernel_size, module.stride,
                             module.padding)
        if kind == "MaxPool2d":
            return nn.MaxPool2d(module.kernel_size, module.stride)
        return {"ReLU": nn.ReLU, "Flatten": nn.Flatten}[kind]()

    model = nn.Sequential(*[twin(m) for m in w.model])
    with torch.no_grad():
        for mine, theirs in zip(w.model.parameters(), model.parameters(), strict=True):
            assert tuple(mine.shape) == tuple(theirs.shape), (mine.shape, theirs.shape)
            theirs.copy_(torch.from_numpy(np.array(mine.detach().numpy())))
    w.torch_model, w.torch_x, w.torch_y = model, torch.from_numpy(x), torch.from_numpy(y)
    w.torch_loss_fn = nn.MSELoss() if w.name == "mlp" else nn.CrossEntropyLoss()


def segment_counts(n_modules: int) -> list[int]:
    """SEGMENTS capped at the chain's length, each count once."""
    return sorted({min(k, n_modules) for k in SEGMENTS})


def has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


# ----------------------------------------------------------------------------------------------- contenders

@dataclass
class Contender:
    """One way to run a workload's step: ``step()`` runs forward + loss + backward and returns notes (or None)."""

    framework: str
    label: str
    step: object
    clear: object
    activation: int | None = None
    notes: str = ""
    activation_budget: int = 0  # plans only: the chain model's activation budget they were made for
    times: list = field(default_factory=list)  # one median per round

    @property
    def seconds(self) -> float | None:
        return statistics.median(self.times) if self.times else None


def minigrad_contenders(w: Workload, notes: list[str]) -> list[Contender]:
    """Every minigrad way to run ``w``'s step; the plans and the budget mode are measured first to be chosen."""
    from minigrad.checkpoint import checkpoint, checkpoint_sequential, save_expensive, selective_checkpoint_context
    from minigrad.checkpoint.offload import save_on_cpu

    model, x, y, loss_fn = w.model, w.x, w.y, w.loss_fn
    clear = model.zero_grad

    def plain():
        loss_fn(model(x), y).backward()

    def segments(k):
        def step():
            loss_fn(checkpoint_sequential(model, k, x), y).backward()
        return step

    def selective():
        out = checkpoint(model, x, context_fn=selective_checkpoint_context(save_expensive))
        loss_fn(out, y).backward()

    def offload():
        with save_on_cpu(card=CARD) as moved:
            loss = loss_fn(model(x), y)
        loss.backward()
        s = moved.summary()
        return f"{s.bytes_offloaded / MIB:.1f} MiB each way; {CARD} PCIe modelled {s.transfer_seconds * 1e3:.2f} ms"

    contenders = [Contender("minigrad", "no checkpointing", plain, clear)]
    contenders += [Contender("minigrad", f"{k} segment{'s' if k > 1 else ''}", segments(k), clear)
                   for k in segment_counts(len(model))]
    contenders.append(Contender("minigrad", "selective (save_expensive)", selective, clear))
    contenders.append(Contender("minigrad", f"offload (save_on_cpu, {CARD})", offload, clear))
    contenders += plan_contenders(w, notes)
    contenders += budget_contenders(w, notes, contenders[0])
    return contenders


def plan_activation_budgets(costs, shares=PLAN_SHARES, walk_limit: int = 200) -> list[tuple[int, bool]]:
    """The activation budgets (bytes, for the chain model) of the plans to run, in the order to try them:
    ``share * storing everything`` for each share a plan fits, as ``(bytes, True)``; then, where a share is
    below the smallest peak any plan reaches, every other plan of the frontier from the lowest up, as
    ``(bytes, False)``, for the caller to take as many as it needs.

    The frontier: the distinct plans :func:`.chain_dp.plan_chain` answers as the budget walks down from
    storing everything, each plan's own peak being the next budget's ceiling (at most ``walk_limit`` plans).
    """
    from minigrad.checkpoint.chain_dp import plan_chain

    def best(budget):
        return plan_chain(costs.saved_bytes, costs.chain_input_bytes, costs.flops, budget)

    store_all = best(2 ** 62).peak_bytes
    wanted = [int(share * store_all) for share in shares]
    if all(best(b) is not None for b in wanted):
        return [(b, True) for b in wanted]
    frontier, budget = [], store_all
    while len(frontier) < walk_limit:
        found = best(budget)
        if found is None:
            break
        frontier.append(found.peak_bytes)
        budget = found.peak_bytes - 1
    feasible = [(b, True) for b in wanted if b >= frontier[-1]]
    lowest = [(b, False) for b in reversed(frontier) if all(b != f for f, _ in feasible)]
    return feasible + lowest


def plan_contenders(w: Workload, notes: list[str]) -> list[Contender]:
    """``plan()`` at the activation budgets of :func:`plan_activation_budgets`, made whole-step budgets."""
    from minigrad.checkpoint.planner import plan

    model, x, y, loss_fn = w.model, w.x, w.y, w.loss_fn
    kwargs = dict(batch_size=w.batch_size, optimizer="sgd")
    reference = plan(model, w.input_shape, budget_bytes=2 ** 50, **kwargs)  # everything fits: stores all
    store_all = reference.chain.peak_bytes
    budgets = plan_activation_budgets(reference.costs)
    contenders = []
    refused = []
    for activations, asked in budgets:
        if len(contenders) == len(PLAN_SHARES):
            break
        budget = reference.fixed_bytes + reference.outside_chain + activations
        share = activations / store_all
        try:
            p = plan(model, w.input_shape, budget_bytes=budget, **kwargs)
        except ValueError:  # the measured planned step did not fit, even after replanning
            refused.append(f"{share:.0%}")
            continue
        planned = p.apply(model)

        def step(planned=planned):
            loss_fn(planned(x), y).backward()

        checkpointed = [f"{s}-{e}" for s, e, c in p.segments if c]
        contenders.append(Contender(
            "minigrad", f"plan @ {share:.0%}" + ("" if asked else " (frontier)"), step, model.zero_grad,
            activation_budget=activations,
            notes=(f"checkpoints modules {', '.join(checkpointed) or 'none'}; recomputes {p.recompute_fraction:.0%} "
                   f"of the forward; budget {budget / MIB:.2f} MiB for the step")))
    contenders.sort(key=lambda c: -c.activation_budget)
    if refused:
        notes.append(f"{w.name}: plan() raised ValueError (no plan whose measured step fits) at "
                     f"{', '.join(refused)} of the activations; the next plans up the frontier were taken")
    if not all(asked for _, asked in budgets):
        notes.append(f"{w.name}: the plans' activation budgets are 50/35/25 % of storing everything "
                     f"({store_all / MIB:.2f} MiB in the chain model) where a plan fits; below the smallest peak "
                     f"a plan reaches, the lowest plans of the chain model's frontier instead (marked 'frontier')")
    return contenders


def budget_contenders(w: Workload, notes: list[str], unconstrained: Contender) -> list[Contender]:
    """The budget mode at BUDGET_SHARE of the unconstrained activation peak, where minigrad has one."""
    try:
        from minigrad.checkpoint import budget
    except ImportError:
        note = "budget mode: minigrad.checkpoint.budget is not in this minigrad; its rows are left out"
        if note not in notes:
            notes.append(note)
        return []
    model, x, y, loss_fn = w.model, w.x, w.y, w.loss_fn
    if unconstrained.activation is None:
        unconstrained.activation = activation_peak(unconstrained)
    nbytes = int(BUDGET_SHARE * unconstrained.activation)

    def step():
        with budget(nbytes) as b:
            loss = loss_fn(model(x), y)
            loss.backward()
        s = b.stats
        return (f"budget high-water {s.high_water / MIB:.2f} MiB, {s.evictions} evictions, "
                f"{s.rematerializations} of {s.forward_calls} module calls run again "
                f"({s.recompute_fraction:.0%} of the forward FLOPs)")

    contender = Contender("minigrad", f"budget @ {BUDGET_SHARE:.0%} ({nbytes / MIB:.2f} MiB)", step, model.zero_grad)
    try:
        contender.activation = activation_peak(contender)
    except MemoryError as error:  # BudgetError: a module needs more than the budget at once
        notes.append(f"{w.name}: budget({nbytes}) refused the step: {str(error).splitlines()[0]}")
        return []
    return [contender]


def torch_contenders(w: Workload) -> list[Contender]:
    """PyTorch's step without checkpointing and with ``checkpoint_sequential(..., use_reentrant=False)``."""
    from torch.utils.checkpoint import checkpoint_sequential

    model, x, y, loss_fn = w.torch_model, w.torch_x, w.torch_y, w.torch_loss_fn

    def clear():
        model.zero_grad(set_to_none=True)

    def plain(hooks=None):
        with hooks or nullcontext():
            loss = loss_fn(model(x), y)
        loss.backward()

    def segments(k):
        def step(hooks=None):
            with hooks or nullcontext():
                loss = loss_fn(checkpoint_sequential(model, k, x, use_reentrant=False), y)
            loss.backward()
        return step

    return ([Contender("torch", "no checkpointing", plain, clear)]
            + [Contender("torch", f"{k} segment{'s' if k > 1 else ''}", segments(k), clear)
               for k in segment_counts(len(model))])


# ----------------------------------------------------------------------------------------------- memory

def activation_peak(c: Contender) -> int:
    """minigrad: the tracker's activation high-water mark of one step, after a warm-up step."""
    from minigrad.memory import track
    from minigrad.memory.timeline import category_totals

    c.clear()
    c.step()
    c.clear()
    gc.collect()
    with track() as mem:
        notes = c.step()
    c.clear()
    if notes:
        c.notes = f"{c.notes}; {notes}" if c.notes else notes
    totals = category_totals(mem.timeline, mem.baseline_by_category)
    return max((row["activation"] for row in totals), default=0)


class TorchSavedBytes:
    """The high-water mark of the distinct storages alive among what PyTorch could keep for backward.

    See the module docstring for what this sees: the tensors packed by these (outer) saved-tensor hooks,
    and every module's inputs and outputs; parameters and ``excluded`` (the batch) are left out.
    """

    def __init__(self, model, excluded=()) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.excluded = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *excluded)}
        self.live: dict[int, tuple[int, list]] = {}  # storage address -> (its bytes, weak references to its tensors)
        self.peak = 0

    def __enter__(self) -> "TorchSavedBytes":
        self.handles = []
        for module in self.model:
            self.handles.append(module.register_forward_pre_hook(lambda m, args: self._see(*args)))
            self.handles.append(module.register_forward_hook(lambda m, args, out: self._see(*args, out)))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self.handles:
            handle.remove()

    def forward_hooks(self):
        """The outer saved-tensor hooks to run the forward in."""
        return self.torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)

    def _pack(self, t):
        self._see(t)
        return t

    def _see(self, *tensors) -> None:
        for t in tensors:
            if not isinstance(t, self.torch.Tensor):
                continue
            storage = t.untyped_storage()
            address = storage.data_ptr()
            if address in self.excluded or storage.nbytes() == 0:
                continue
            nbytes, refs = self.live.get(address, (storage.nbytes(), []))
            refs = [r for r in refs if r() is not None]
            self.live[address] = (nbytes if refs else storage.nbytes(), refs + [weakref.ref(t)])
        self.sample()

    def sample(self) -> None:
        total = 0
        for address, (nbytes, refs) in list(self.live.items()):
            if any(r() is not None for r in refs):
                total += nbytes
            else:
                del self.live[address]
        self.peak = max(self.peak, total)


def torch_activation_peak(c: Contender, w: Workload) -> int:
    """PyTorch: :class:`TorchSavedBytes`' high-water mark over one step, after a warm-up step."""
    c.clear()
    c.step()
    c.clear()
    gc.collect()
    with TorchSavedBytes(w.torch_model, excluded=(w.torch_x, w.torch_y)) as counter:
        c.step(counter.forward_hooks())
    c.clear()
    return counter.peak


# ----------------------------------------------------------------------------------------------- time

def time_rounds(contenders: list[Contender], rounds: int, steps: int) -> None:
    """Each contender takes a turn per round (the order rotated each round); a turn appends its median step.

    Before each step the garbage collector runs, outside the timing, so that no step pays for another's cycles;
    what exists before the rounds (torch's and the models' objects) is frozen first, which keeps that cheap.
    """
    gc.collect()
    gc.freeze()
    try:
        _turns(contenders, rounds, steps)
    finally:
        gc.unfreeze()


def _turns(contenders: list[Contender], rounds: int, steps: int) -> None:
    for r in range(rounds):
        shift = r % len(contenders)
        for c in contenders[shift:] + contenders[:shift]:
            c.clear()
            c.step()  # warm-up
            times = []
            for _ in range(steps):
                c.clear()
                gc.collect()
                begin = time.process_time()
                c.step()
                times.append(time.process_time() - begin)
            c.clear()
            c.times.append(statistics.median(times))


# ----------------------------------------------------------------------------------------------- report

def run_benchmark(models=("mlp", "cnn"), rounds: int = 5, steps: int = 2, threads: int = 1,
                  layers: int = MLP_LAYERS, with_torch: bool = True) -> dict:
    """Build the workloads and contenders, measure memory once and time in rounds; ``{model: (workload, rows)}``."""
    if with_torch and has_torch():
        import torch

        torch.set_num_threads(threads)
    notes: list[str] = []
    if with_torch and not has_torch():
        notes.append("PyTorch is not installed: its columns are left out")
    results = {}
    everyone = []
    for name in models:
        w = build_workload(name, layers=layers, with_torch=with_torch)
        mine = minigrad_contenders(w, notes)
        for c in mine:
            if c.activation is None:
                c.activation = activation_peak(c)
        theirs = torch_contenders(w) if w.torch_model is not None else []
        for c in theirs:
            c.activation = torch_activation_peak(c, w)
        results[name] = (w, mine, theirs)
        everyone += mine + theirs
    time_rounds(everyone, rounds, steps)
    results["notes"] = notes
    return results


def _ratio(value, base) -> str:
    return f"{value / base:.2f}" if value is not None and base else "-"


def format_report(results: dict, rounds: int, steps: int, threads: int) -> str:
    lines = [f"Activation checkpointing: activation high-water mark and step time (forward + loss + backward, no "
             f"optimizer step; process CPU time), CPU, {rounds} rounds x (1 warm-up + {steps} timed steps) per contender, contenders "
             f"alternating, BLAS/torch threads {threads}"]
    for name, value in results.items():
        if name == "notes":
            continue
        w, mine, theirs = value
        lines += ["", f"  {w.title}",
                  f"  {'':<34} {'minigrad':^36} | {'PyTorch (use_reentrant=False)':^36}",
                  f"  {'variant':<34} {'act MiB':>8} {'mem x':>6} {'ms/step':>8} {'time x':>6} {'rounds':>5} | "
                  f"{'act MiB':>8} {'mem x':>6} {'ms/step':>8} {'time x':>6} {'rounds':>5}  notes"]
        base_mine, base_theirs = mine[0], (theirs[0] if theirs else None)
        by_label = {c.label: c for c in theirs}
        for c in mine:
            row = f"  {c.label:<34} {_columns(c, base_mine)} | "
            t = by_label.get(c.label)
            row += _columns(t, base_theirs) if t is not None else f"{'-':>8} {'':>6} {'':>8} {'':>6} {'':>5}"
            lines.append(row + (f"  {c.notes}" if c.notes else ""))
    lines.append("")
    lines.append("  act MiB: minigrad, the tracker's activation high-water mark; PyTorch, the distinct storages alive "
                 "among what its outer saved-tensor hooks packed and what entered or left a module (see the "
                 "docstring). mem x, time x: against the same framework's step without checkpointing. rounds: the "
                 "spread of the round medians, (max - min) / median.")
    if "mlp" in results:
        lines += [""] + acceptance(results["mlp"])
    for note in results["notes"]:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def _columns(c: Contender, base: Contender) -> str:
    seconds = c.seconds
    spread = f"{(max(c.times) - min(c.times)) / seconds:.0%}" if c.times and seconds else "-"
    ms = f"{seconds * 1e3:.2f}" if seconds is not None else "-"
    return (f"{c.activation / MIB:>8.2f} {_ratio(c.activation, base.activation):>6} {ms:>8} "
            f"{_ratio(seconds, base.seconds):>6} {spread:>5}")


def acceptance(mlp_results) -> list[str]:
    w, mine, theirs = mlp_results
    n = sum(1 for m in w.model if type(m).__name__ == "Linear")
    label = f"{ACCEPTANCE_SEGMENTS} segments"
    mine_k = next((c for c in mine if c.label == label), None)
    if mine_k is None:
        return [f"  acceptance: no {label} row (the MLP has fewer modules)"]
    bound = (2 * math.sqrt(n) + 1) / n
    memory = mine_k.activation / mine[0].activation
    overhead = mine_k.seconds / mine[0].seconds - 1
    lines = [f"  acceptance, {n}-layer MLP at {label}:",
             f"    peak activations {memory:.1%} of uncheckpointed, bound (2 sqrt(n) + 1) / n = {bound:.1%}: "
             f"{'met' if memory <= bound else 'NOT met'}",
             f"    step-time overhead {overhead:+.1%}, target <= +{OVERHEAD_TARGET:.0%}: "
             f"{'met' if overhead <= OVERHEAD_TARGET else 'NOT met'}"]
    theirs_k = next((c for c in theirs if c.label == label), None)
    if theirs_k is not None:
        lines.append(f"    PyTorch at {label}: peak {theirs_k.activation / theirs[0].activation:.1%} (its hook count), "
                     f"overhead {theirs_k.seconds / theirs[0].seconds - 1:+.1%}")
    return lines


def _pin_threads(threads: int) -> None:
    """Re-execute this script with the BLAS thread variables set, unless they already are (BLAS reads them once)."""
    wanted = str(threads)
    if all(os.environ.get(v) == wanted for v in BLAS_VARIABLES):
        return
    env = dict(os.environ, **{v: wanted for v in BLAS_VARIABLES})
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=2, help="timed steps per turn")
    p.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=list(BATCH))
    p.add_argument("--threads", type=int, default=1, help="BLAS / PyTorch threads")
    p.add_argument("--no-torch", action="store_true", help="minigrad only")
    args = p.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.threads < 1:
        p.error("--rounds, --steps and --threads must be at least 1")
    _pin_threads(args.threads)
    begin = time.perf_counter()
    results = run_benchmark(args.models, args.rounds, args.steps, args.threads, with_torch=not args.no_torch)
    print(format_report(results, args.rounds, args.steps, args.threads))
    print(f"\n  ({time.perf_counter() - begin:.0f} s)")


if __name__ == "__main__":
    main()
