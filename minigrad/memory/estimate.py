"""``estimate(model, input_shape, batch_size, ...)``: the memory of a training step without running it at full size.

**How: measure three small batches, extrapolate exactly.** A copy of the
model trains one warm-up step (it allocates the optimizer's state), then one
step at each of the batch sizes 2, 3 and 4 (the steady state: zero_grad,
forward, loss, backward, optimizer step, as :func:`minigrad.training.fit`
runs them), with an allocation observer (:mod:`minigrad.memory.buffers`)
recording every buffer the library allocates, frees or relabels. For a
network whose ops do not depend on the batch size (every layer of this
course: linear, conv, pooling, batch norm, dropout, losses), the three steps
make the *same sequence of events*, and each event's size is ``a + b * batch``:
a parameter's gradient does not grow with the batch, an activation grows
linearly. So the running total of every category after every event is affine
in the batch size, and the step's peak at batch ``B`` is the largest of those
affine functions evaluated at ``B`` - exact, whichever moment of the step
holds the peak at that size (it moves: at a small batch the optimizer step
can dominate, at a large one the backward pass). Three batches, not two:
the third proves the affine law on every event, and the estimate refuses to
extrapolate when it does not hold rather than return a wrong number. Not a
batch of one: NumPy reshapes some (1, ...) arrays without the copy it makes
for larger batches, so a batch of one can make fewer buffers; the estimate
is exact from batch 2 on, and for batch 1 it errs high by those copies.
The garbage collector is paused while measuring, so that buffers go when
their last reference does, the same way in every step.

Why not trace shapes on a ``meta`` device (as PyTorch does)? Measuring runs
the library's real code, so every buffer it allocates - im2col matrices,
scratch arrays of a backward rule or an optimizer step, gradients in flight -
is counted without a second, hand-kept model of what each op allocates that
could drift from the code. The price is running the model on eleven examples,
which takes well under a second for the course's networks and a few
seconds for a VGG-style network on 224x224 images.

Categories: ``parameter``, ``gradient``, ``optimizer_state``, ``activation``
(what a node keeps for backward, and forward outputs still held: the logits,
the loss), ``temporary`` (gradients in flight during backward, scratch
arrays), ``input`` (the data batch and its targets), ``other`` (BatchNorm's
running statistics and anything else).
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field, replace

import numpy as np

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.memory.estimate_recording import CATEGORIES, category_of, record_steps  # noqa: F401 (re-exported)
from minigrad.memory.profiles import get_profile

__all__ = ["estimate", "Estimate", "EstimateError", "CATEGORIES", "OPTIMIZERS", "category_of", "format_bytes"]

MEASURED_BATCHES = (2, 3, 4)  # not 1: NumPy reshapes a batch of one without copying where it copies larger ones

OPTIMIZERS = {
    "sgd": lambda params: optim.SGD(params, lr=0.01),
    "sgd-momentum": lambda params: optim.SGD(params, lr=0.01, momentum=0.9),
    "adam": lambda params: optim.Adam(params),
    "adamw": lambda params: optim.AdamW(params),
    "rmsprop": lambda params: optim.RMSprop(params),
}


def format_bytes(n: float) -> str:
    """``1536`` -> ``"1.50 KiB"``: binary units, three significant figures."""
    sign, n = ("-" if n < 0 else ""), abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n:.0f} B" if unit == "B" else f"{sign}{n:#.3g} {unit}" if n < 99.95 else f"{sign}{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


class EstimateError(ValueError):
    """The measured small batches do not follow an affine law, so the extrapolation would not be exact."""


def _measure(model, input_shape, batches, make_optimizer, loss_fn, forward, dtype, device, set_to_none,
             accumulation_steps):
    """Record the steps at ``batches`` and fit the affine law: (intercept, slope, phases, marks, saved coefficients)."""
    recorder = record_steps(model, input_shape, batches, make_optimizer, loss_fn, forward, dtype, device,
                            set_to_none, accumulation_steps)
    totals = recorder.totals()
    segments = recorder.segments
    signatures = [recorder.signature[seg["start"]:seg["end"]] for seg in segments]
    if not (signatures[0] == signatures[1] == signatures[2]):
        first, other = next((signatures[0], s) for s in signatures[1:] if s != signatures[0])
        index = next((i for i, (a, b) in enumerate(zip(first, other)) if a != b), min(len(first), len(other)))
        where = f"first difference at event {index}" + (
            f", in the {first[index][1]} phase" if index < len(first) else "")
        raise EstimateError(
            f"estimate: the step allocates a different sequence of buffers at batches {batches} "
            f"({', '.join(str(len(s)) for s in signatures)} events; {where}); the memory does not follow one "
            f"affine law, so extrapolating would be wrong. Measure the real step with minigrad.memory.track() instead")
    intercept, slope = _affine([totals[seg["start"]:seg["end"]] for seg in segments], batches,
                               "the running total of a category")
    names = list(segments[0]["saved"])
    if any(list(seg["saved"]) != names for seg in segments):
        raise EstimateError(f"estimate: different layers save activations at batches {batches}")
    saved = {name: _affine([seg["saved"][name] for seg in segments], batches, f"what {name} saves for backward")
             for name in names}
    return intercept, slope, tuple(sig[1] for sig in signatures[0]), dict(segments[0]["marks"]), saved


# ----------------------------------------------------------------------------- the estimate


@dataclass(frozen=True, eq=False)
class Estimate:
    """The memory of one training step at ``batch_size``, from coefficients exact in the batch size.

    The live bytes of each category after each event of the step are
    ``intercept + batch_size * slope``; every figure below reads them, so
    ``at(b)`` gives the estimate at another batch size at no cost.
    """

    model_name: str
    input_shape: tuple
    batch_size: int
    dtype: str
    optimizer: str
    accumulation_steps: int
    measured_batches: tuple
    seconds: float
    _intercept: np.ndarray = field(repr=False)
    _slope: np.ndarray = field(repr=False)
    _phases: tuple = field(repr=False)  # the phase of each event of the step
    _marks: dict = field(repr=False)  # phase -> number of events of the step when it ended
    _saved: dict = field(repr=False)  # layer -> (intercept, slope) of what it saves for backward

    def at(self, batch_size: int) -> Estimate:
        """The same step at another batch size (no new measurement)."""
        _check_batch(batch_size)
        return replace(self, batch_size=int(batch_size))

    # totals ---------------------------------------------------------------------------------

    def _totals(self) -> np.ndarray:
        return self._intercept + self.batch_size * self._slope

    def _row(self, phase) -> dict[str, int]:
        index = self._marks[phase] - 1
        row = self._intercept[index] + self.batch_size * self._slope[index]
        return {name: int(row[i]) for i, name in enumerate(CATEGORIES)}

    @property
    def parameters(self) -> int:
        return self._row("release")["parameter"]

    @property
    def gradients(self) -> int:
        """Gradients held when backward ends (the optimizer step reads them)."""
        return self._row("backward")["gradient"]

    @property
    def optimizer_state(self) -> int:
        return self._row("release")["optimizer_state"]

    @property
    def inputs(self) -> int:
        """The data batch and its targets."""
        return self._row("forward")["input"]

    @property
    def other(self) -> int:
        return self._row("release")["other"]

    @property
    def activations(self) -> int:
        """Everything the forward pass leaves alive when it ends: saved for backward, plus outputs held (logits, loss)."""
        return self._row("forward")["activation"]

    @property
    def activations_by_layer(self) -> dict[str, int]:
        """Bytes each module's forward saves for backward, by innermost module ("(loss)" for the loss).

        A buffer counts once, for the layer that saved it first: a Linear after
        a ReLU keeps the very array the ReLU kept, and a first layer keeps the
        input batch (counted as input).
        """
        return {name: int(a + self.batch_size * b) for name, (a, b) in self._saved.items()}

    @property
    def peak(self) -> int:
        """The most bytes alive at once during the step (parameters, gradients, state, activations, scratch, inputs)."""
        return int(self._totals().sum(axis=1).max())

    @property
    def peak_by_category(self) -> dict[str, int]:
        """The split at the moment of the peak."""
        totals = self._totals()
        row = totals[int(totals.sum(axis=1).argmax())]
        return {name: int(row[i]) for i, name in enumerate(CATEGORIES)}

    @property
    def peak_phase(self) -> str:
        """When the peak happens: "data", "forward", "backward", "optimizer step", "zero_grad" or "release"."""
        return self._phases[int(self._totals().sum(axis=1).argmax())]

    def to_dict(self) -> dict:
        """The figures as plain numbers (for JSON, a widget or a table)."""
        return {
            "model": self.model_name, "input_shape": list(self.input_shape), "batch_size": self.batch_size,
            "accumulation_steps": self.accumulation_steps, "dtype": self.dtype, "optimizer": self.optimizer,
            "parameters": self.parameters, "gradients": self.gradients, "optimizer_state": self.optimizer_state,
            "inputs": self.inputs, "activations": self.activations, "other": self.other,
            "activations_by_layer": self.activations_by_layer, "peak": self.peak,
            "peak_by_category": self.peak_by_category, "peak_phase": self.peak_phase,
        }

    # budgets --------------------------------------------------------------------------------

    def fits(self, profile) -> bool:
        """Whether the step's peak fits in ``profile``'s memory once the CUDA context is created."""
        return self.peak <= get_profile(profile).usable_bytes

    def max_batch_size(self, profile, limit: int = 1 << 24) -> int:
        """The largest batch size whose step fits on ``profile`` (0 if not even batch 1)."""
        budget = get_profile(profile).usable_bytes
        if self.at(1).peak > budget:
            return 0
        low, high = 1, 2
        while high <= limit and self.at(high).peak <= budget:
            low, high = high, high * 2
        high = min(high, limit + 1)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self.at(middle).peak <= budget else (low, middle)
        return low

    # printing -------------------------------------------------------------------------------

    def __str__(self) -> str:
        lines = [
            f"Memory of one training step: {self.model_name}, input {self.input_shape}, batch {self.batch_size}"
            + (f" x {self.accumulation_steps} accumulated micro-batches" if self.accumulation_steps > 1 else "")
            + f", {self.dtype}, {self.optimizer}",
            f"(measured at batches {', '.join(map(str, self.measured_batches))}: every event affine in the batch "
            f"size, extrapolated exactly; {self.seconds:.2f} s)",
            "",
        ]
        rows = [("parameters", self.parameters), ("gradients", self.gradients),
                ("optimizer state", self.optimizer_state), ("inputs", self.inputs),
                ("activations at the end of forward", self.activations)]
        if self.other:
            rows.append(("other (buffers)", self.other))
        lines += [f"  {name:<36}{format_bytes(value):>12}" for name, value in rows]
        lines.append("  saved for backward, by layer:")
        lines += [f"    {name:<34}{format_bytes(value):>12}" for name, value in self.activations_by_layer.items()]
        lines.append(f"  {'peak of the step':<36}{format_bytes(self.peak):>12}   ({self.peak_phase})")
        split = ", ".join(f"{name} {format_bytes(v)}" for name, v in self.peak_by_category.items() if v)
        lines.append(f"    at the peak: {split}")
        return "\n".join(lines)

    def fit_report(self, profile) -> str:
        """One line: does it fit on ``profile``, with the margin."""
        profile = get_profile(profile)
        margin = profile.usable_bytes - self.peak
        verdict = "fits" if margin >= 0 else "does NOT fit"
        return (f"{profile.name}: {format_bytes(profile.usable_bytes)} usable after the CUDA context; "
                f"peak {format_bytes(self.peak)} {verdict} ({format_bytes(abs(margin))} "
                f"{'to spare' if margin >= 0 else 'over'}); largest batch that fits: {self.max_batch_size(profile)}")


def _check_batch(batch_size) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"estimate: batch_size must be a positive integer, got {batch_size!r}")


def _affine(values: list, batches: tuple, what: str):
    """Intercept and slope of ``values`` (arrays or ints) measured at equally spaced ``batches``; checks the law."""
    first, second, third = values
    step = batches[1] - batches[0]
    slope = second - first
    broken = np.atleast_1d(((third - second) != slope) | (slope % step != 0))
    if broken.any():
        index = int(np.argwhere(broken)[0][0])
        raise EstimateError(
            f"estimate: {what} is not affine in the batch size (batches {batches}, entry {index}); "
            f"the model's memory depends on the batch size in another way, so extrapolating would be wrong. "
            f"Measure the real step with minigrad.memory.track() instead")
    slope = slope // step
    return first - batches[0] * slope, slope


def _default_loss(output, target):
    if target is None:
        return (output * output).mean()
    return nn.functional.cross_entropy(output, target)


def estimate(model, input_shape, batch_size: int, optimizer="adam", dtype=None, checkpoint=None,
             loss_fn=None, set_to_none: bool = True, accumulation_steps: int = 1,
             measured_batches=MEASURED_BATCHES) -> Estimate:
    """Estimate the memory of one training step of ``model`` on batches of ``batch_size`` inputs of ``input_shape``.

    ``input_shape``: one example's shape, without the batch axis (``(1, 28, 28)``).
    ``optimizer``: one of :data:`OPTIMIZERS` (``"adam"``, ``"sgd"``, ``"sgd-momentum"``,
    ``"adamw"``, ``"rmsprop"``) or a callable ``params -> Optimizer``.
    ``dtype``: the parameters' and inputs' dtype (default: the model's).
    ``checkpoint``: None, or a callable ``(model, x) -> output`` that runs the
    forward pass instead of ``model(x)`` (chapter 10's checkpointing plugs in here).
    ``loss_fn(output, target)``: default cross-entropy; ``target`` holds
    random class indices when the output is (N, C), else it is None (and the
    default loss is the mean square of the output).
    ``set_to_none``: how ``zero_grad`` clears gradients.
    ``accumulation_steps``: micro-batches of ``batch_size`` per optimizer step
    (the effective batch is their product), as ``fit(accumulation_steps=...)`` runs them.

    The model is copied, never changed; the global random state is left alone.
    See the module docstring for how the figures are made exact.
    """
    _check_batch(batch_size)
    started = time.perf_counter()
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"estimate: unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZERS)} "
                             f"or pass a callable params -> Optimizer")
        optimizer_name, make_optimizer = optimizer, OPTIMIZERS[optimizer]
    elif callable(optimizer):
        optimizer_name, make_optimizer = getattr(optimizer, "__name__", "custom optimizer"), optimizer
    else:
        raise TypeError(f"estimate: optimizer must be a name ({', '.join(OPTIMIZERS)}) or a callable, got {optimizer!r}")
    if checkpoint is not None and not callable(checkpoint):
        raise TypeError(f"estimate: checkpoint must be None or a callable (model, x) -> output, got {checkpoint!r}")
    forward = checkpoint or (lambda m, x: m(x))
    input_shape = tuple(int(n) for n in input_shape)
    dtype = mt.dtypes.as_dtype(dtype) if dtype is not None else None
    batches = tuple(int(b) for b in measured_batches)
    if len(batches) != 3 or batches[0] < 1 or batches[1] - batches[0] != batches[2] - batches[1] or batches[1] <= batches[0]:
        raise ValueError(f"estimate: measured_batches must be three increasing, equally spaced batch sizes, got {batches}")
    if isinstance(accumulation_steps, bool) or not isinstance(accumulation_steps, (int, np.integer)) \
            or accumulation_steps < 1:
        raise ValueError(f"estimate: accumulation_steps must be a whole number >= 1, got {accumulation_steps!r}")
    parameters = list(model.parameters())
    device = parameters[0].device if parameters else None

    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()  # frees then happen when the last reference goes, the same way in every step
    try:
        with mt.fork_rng(), np.errstate(all="ignore"):  # values are never looked at: a float16 Adam step may overflow
            intercept, slope, phases, marks, saved = _measure(
                model, input_shape, batches, make_optimizer, loss_fn or _default_loss, forward, dtype, device,
                set_to_none, accumulation_steps)
    finally:
        if was_enabled:
            gc.enable()
    return Estimate(
        model_name=type(model).__name__, input_shape=input_shape, batch_size=int(batch_size),
        dtype=str(dtype or (parameters[0].dtype if parameters else "float32")), optimizer=optimizer_name,
        accumulation_steps=int(accumulation_steps), measured_batches=batches, seconds=time.perf_counter() - started,
        _intercept=intercept, _slope=slope, _phases=phases, _marks=marks, _saved=saved)
