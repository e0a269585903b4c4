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
the third proves the affine law on every event; and a fourth, *check* batch
(67, a prime above 64, or the largest prime whose step costs at most
256 MiB to run) that cannot be congruent with them to any padding or
bucketing of the batch a module might do (a module that pads its batch to a
multiple of 64 looks constant at 2, 3 and 4). The estimate refuses to
extrapolate when any event breaks the law rather than return a wrong number,
and says on which batches the law was checked (:mod:`.estimate_law`). Not a
batch of one: NumPy reshapes some (1, ...) arrays without the copy it makes
for larger batches, so a batch of one can make fewer buffers; the estimate
is exact from batch 2 on, and for batch 1 it errs high by those copies.
The garbage collector is paused while measuring, so that buffers go when
their last reference does, the same way in every step. The copy is measured
in training mode (``mode="eval"`` to measure an evaluation-mode training
step), whatever the mode of the model passed, which is never changed; and
nothing of the measurement outlives it (the copy, its optimizer, the
wrappers put on its modules).

Will it fit? The figures above are *allocated* bytes, the tracker's truth.
A card decides in *reserved* bytes: its caching allocator rounds every
request, carves blocks from 2 or 20 MiB segments and keeps freed blocks.
So every fit answer (``fits``, ``max_batch_size``, ``fit_report``) replays
the step's allocations at the asked batch through the card's allocator
(:mod:`minigrad.memory.fit`), the way ``simulated_gpu`` decides.

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
import numbers
import time
from dataclasses import dataclass, field, replace
from decimal import Decimal

import numpy as np

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.memory.estimate_law import EstimateError, measure
from minigrad.memory.estimate_recording import CATEGORIES, category_of  # noqa: F401 (re-exported)
from minigrad.memory.fit import Replay, StepTrace, largest_fitting, replay_step
from minigrad.memory.profiles import get_profile

__all__ = ["estimate", "Estimate", "EstimateError", "CATEGORIES", "OPTIMIZERS", "MODES", "category_of",
           "format_bytes"]

MEASURED_BATCHES = (2, 3, 4)  # not 1: NumPy reshapes a batch of one without copying where it copies larger ones
MODES = ("train", "eval")

OPTIMIZERS = {
    "sgd": lambda params: optim.SGD(params, lr=0.01),
    "sgd-momentum": lambda params: optim.SGD(params, lr=0.01, momentum=0.9),
    "adam": lambda params: optim.Adam(params),
    "adamw": lambda params: optim.AdamW(params),
    "rmsprop": lambda params: optim.RMSprop(params),
}

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")


def format_bytes(n) -> str:
    """``1536`` -> ``"1.50 KiB"``: binary units, three significant figures (exact for any Python int)."""
    sign, n = ("-" if n < 0 else ""), abs(n)
    if n < 1024:
        return f"{sign}{n:.0f} B"
    exponent = 0
    while n >= 1024 ** (exponent + 1) and exponent < len(_UNITS) - 1:
        exponent += 1
    scaled = Decimal(int(n)) / Decimal(1024**exponent) if isinstance(n, numbers.Integral) else n / 1024**exponent
    unit = _UNITS[exponent]
    if scaled >= 10_000:  # beyond the largest unit: scientific notation
        return f"{sign}{Decimal(scaled):.3e} {unit}"
    value = float(scaled)
    return f"{sign}{value:#.3g} {unit}" if value < 99.95 else f"{sign}{value:.1f} {unit}"


# ----------------------------------------------------------------------------- the estimate


@dataclass(frozen=True, eq=False)
class Estimate:
    """The memory of one training step at ``batch_size``, from coefficients exact in the batch size.

    The live bytes of each category after each event of the step are
    ``intercept + batch_size * slope`` (Python ints: exact at any batch size);
    every figure below reads them, so ``at(b)`` gives the estimate at another
    batch size at no cost. Fit answers replay the step's allocations through
    the card's caching allocator (``_trace``, :mod:`minigrad.memory.fit`).
    """

    model_name: str
    input_shape: tuple
    batch_size: int
    dtype: str
    optimizer: str
    accumulation_steps: int
    measured_batches: tuple  # the batches the affine law was measured and checked on
    seconds: float
    mode: str = "train"
    _intercept: np.ndarray = field(default=None, repr=False)
    _slope: np.ndarray = field(default=None, repr=False)
    _phases: tuple = field(default=(), repr=False)  # the phase of each event of the step
    _marks: dict = field(default_factory=dict, repr=False)  # phase -> number of events of the step when it ended
    _saved: dict = field(default_factory=dict, repr=False)  # layer -> (intercept, slope) of what it saves for backward
    _trace: StepTrace = field(default=None, repr=False)  # the step's allocations, for the card's allocator
    _replays: dict = field(default_factory=dict, repr=False)  # (batch, capacity, policy) -> Replay, shared by at()

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

    def _peak_index(self) -> tuple[int, int]:
        sums = self._totals().sum(axis=1)
        index = int(np.argmax(sums))
        return index, int(sums[index])

    @property
    def peak(self) -> int:
        """The most bytes alive at once during the step (allocated: the tensors' exact bytes, the tracker's truth)."""
        return self._peak_index()[1]

    @property
    def peak_by_category(self) -> dict[str, int]:
        """The split at the moment of the peak."""
        row = self._totals()[self._peak_index()[0]]
        return {name: int(row[i]) for i, name in enumerate(CATEGORIES)}

    @property
    def peak_phase(self) -> str:
        """When the peak happens: "data", "forward", "backward", "optimizer step", "zero_grad" or "release"."""
        return self._phases[self._peak_index()[0]]

    # reserved bytes: the card's allocator ---------------------------------------------------------

    def replay(self, profile=None, policy: str = "best_fit") -> Replay:
        """The step's allocations at this batch run through the allocator of ``profile``'s card (None: unbounded)."""
        capacity = None if profile is None else get_profile(profile).usable_bytes
        key = (self.batch_size, capacity, policy)
        if key not in self._replays:
            self._replays[key] = replay_step(self._trace, self.batch_size, capacity, policy)
        return self._replays[key]

    @property
    def reserved(self) -> int:
        """The most bytes the caching allocator holds from the device during the step, on a card big enough."""
        return self.replay(None).peak_reserved

    def to_dict(self) -> dict:
        """The figures as plain numbers (for JSON, a widget or a table)."""
        return {
            "model": self.model_name, "input_shape": list(self.input_shape), "batch_size": self.batch_size,
            "accumulation_steps": self.accumulation_steps, "dtype": self.dtype, "optimizer": self.optimizer,
            "mode": self.mode, "measured_batches": list(self.measured_batches),
            "parameters": self.parameters, "gradients": self.gradients, "optimizer_state": self.optimizer_state,
            "inputs": self.inputs, "activations": self.activations, "other": self.other,
            "activations_by_layer": self.activations_by_layer, "peak": self.peak, "reserved": self.reserved,
            "peak_by_category": self.peak_by_category, "peak_phase": self.peak_phase,
        }

    # budgets --------------------------------------------------------------------------------

    def fits_by_allocated(self, profile) -> bool:
        """Whether the tensors' bytes alone fit ``profile``'s usable memory (necessary, not sufficient: see ``fits``)."""
        return self.peak <= get_profile(profile).usable_bytes

    def fits(self, profile, policy: str = "best_fit") -> bool:
        """Whether the step runs on ``profile``'s card: its allocations replayed through the card's allocator.

        The card's verdict, in reserved bytes: every request rounded to 512
        bytes, served from 2 or 20 MiB segments, freed blocks cached; the
        allocated peak alone is not enough (``fits_by_allocated``).
        """
        if not self.fits_by_allocated(profile):
            return False
        return self.replay(profile, policy).fits

    def max_batch_size_by_allocated(self, profile, limit: int = 1 << 24) -> int:
        """The largest batch whose allocated peak fits ``profile`` (what counting tensors alone would say)."""
        budget = get_profile(profile).usable_bytes
        return largest_fitting(lambda b: self.at(b).peak <= budget, limit + 1)

    def max_batch_size(self, profile, limit: int = 1 << 24, policy: str = "best_fit") -> int:
        """The largest batch size whose step fits on ``profile``'s card, in reserved bytes (0 if not even batch 1).

        Bisection on :meth:`fits` below the allocated bound (a step whose
        tensors do not fit cannot fit): the answer fits and one more example does not.
        """
        by_allocated = self.max_batch_size_by_allocated(profile, limit)
        return largest_fitting(lambda b: self.at(b).fits(profile, policy), by_allocated + 1)

    # printing -------------------------------------------------------------------------------

    def __str__(self) -> str:
        lines = [
            f"Memory of one training step: {self.model_name}, input {self.input_shape}, batch {self.batch_size}"
            + (f" x {self.accumulation_steps} accumulated micro-batches" if self.accumulation_steps > 1 else "")
            + f", {self.dtype}, {self.optimizer}, {self.mode} mode",
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
        lines.append(f"  {'peak of the step (allocated)':<36}{format_bytes(self.peak):>12}   ({self.peak_phase})")
        split = ", ".join(f"{name} {format_bytes(v)}" for name, v in self.peak_by_category.items() if v)
        lines.append(f"    at the peak: {split}")
        lines.append(f"  {'reserved by the caching allocator':<36}{format_bytes(self.reserved):>12}   "
                     f"(blocks rounded to 512 B, 2/20 MiB segments)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"Estimate({self.model_name}, input {self.input_shape}, batch {self.batch_size}"
                + (f" x {self.accumulation_steps}" if self.accumulation_steps > 1 else "")
                + f", {self.dtype}, {self.optimizer}, {self.mode} mode, peak allocated {format_bytes(self.peak)}, "
                f"measured at batches {self.measured_batches})")

    def fit_report(self, profile, policy: str = "best_fit") -> str:
        """One line: does it fit on ``profile``'s card (reserved bytes, as the card decides), allocated beside it."""
        profile = get_profile(profile)
        usable = profile.usable_bytes
        fits = self.fits(profile, policy)
        reserved = self.replay(profile, policy).peak_reserved if fits else self.reserved
        verdict = "fits" if fits else "does NOT fit"
        margin = usable - reserved
        largest, by_allocated = self.max_batch_size(profile, policy=policy), self.max_batch_size_by_allocated(profile)
        return (f"{profile.name}: {format_bytes(usable)} usable after the CUDA context; peak allocated "
                f"{format_bytes(self.peak)}, reserved {format_bytes(reserved)}: {verdict} "
                f"({format_bytes(abs(margin))} {'to spare' if margin >= 0 else 'over'}"
                + ("" if fits or margin < 0 else ", but no block fits a request") + f"); largest batch that fits: "
                f"{largest} ({by_allocated} by allocated bytes alone)")


def _check_batch(batch_size) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"estimate: batch_size must be a positive integer, got {batch_size!r}")


def example_shape(input_shape, op: str = "estimate") -> tuple:
    """One example's shape as a tuple: ``784`` -> ``(784,)``; every size a whole number >= 1 (``784.7`` is refused,
    never truncated). A bad shape raises TypeError or ValueError naming ``op``, the function that was given it."""
    shape = (input_shape,) if isinstance(input_shape, (numbers.Integral, float)) else input_shape
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{op}: input_shape must be one example's shape, a tuple of whole numbers such as "
                        f"(1, 28, 28), got {input_shape!r}") from None
    wrong = [n for n in shape if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1]
    if wrong or not shape:
        raise ValueError(f"{op}: input_shape must be one example's shape (without the batch axis) as whole "
                         f"numbers >= 1, such as (1, 28, 28) or 784; got {input_shape!r}"
                         + (f" ({wrong[0]!r} is a float: give every size as an int)"
                            if wrong and isinstance(wrong[0], float) else
                            f" ({wrong[0]!r} is not a whole number >= 1)" if wrong else ""))
    return tuple(int(n) for n in shape)


def _default_loss(output, target):
    if target is None:
        return (output * output).mean()
    return nn.functional.cross_entropy(output, target)


def estimate(model, input_shape, batch_size: int, optimizer="adam", dtype=None, checkpoint=None,
             loss_fn=None, set_to_none: bool = True, accumulation_steps: int = 1,
             measured_batches=MEASURED_BATCHES, check_batch="auto", mode: str = "train") -> Estimate:
    """Estimate the memory of one training step of ``model`` on batches of ``batch_size`` inputs of ``input_shape``.

    ``input_shape``: one example's shape, without the batch axis (``(1, 28, 28)``; ``784`` means ``(784,)``).
    ``optimizer``: one of :data:`OPTIMIZERS` (``"adam"``, ``"sgd"``, ``"sgd-momentum"``,
    ``"adamw"``, ``"rmsprop"``) or a callable ``params -> Optimizer``.
    ``dtype``: the parameters' and inputs' dtype (default: the model's).
    ``checkpoint``: None, or a callable ``(model, x) -> output`` that runs the
    forward pass instead of ``model(x)`` (chapter 10's checkpointing plugs in here).
    ``loss_fn(output, target)``: default cross-entropy; ``target`` holds
    random class indices when the output is (N, C), else it is None (and the
    default loss is the mean square of the output). It must return a Tensor.
    ``set_to_none``: how ``zero_grad`` clears gradients.
    ``accumulation_steps``: micro-batches of ``batch_size`` per optimizer step
    (the effective batch is their product), as ``fit(accumulation_steps=...)`` runs them.
    ``check_batch``: the extra batch the affine law is checked on (``"auto"``: see the module docstring).
    ``mode``: ``"train"`` (the default, whatever mode ``model`` is in) or ``"eval"``.

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
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"estimate: loss_fn must be None or a callable (output, target) -> loss Tensor, "
                        f"got {loss_fn!r}")
    if mode not in MODES:
        raise ValueError(f"estimate: mode must be 'train' or 'eval', got {mode!r}")
    forward = checkpoint or _call
    input_shape = example_shape(input_shape)
    dtype = mt.dtypes.as_dtype(dtype) if dtype is not None else None
    batches = tuple(int(b) for b in measured_batches)
    if len(batches) != 3 or batches[0] < 1 or batches[1] - batches[0] != batches[2] - batches[1] or batches[1] <= batches[0]:
        raise ValueError(f"estimate: measured_batches must be three increasing, equally spaced batch sizes, got {batches}")
    if check_batch != "auto" and check_batch is not None:
        _check_batch(check_batch)
        check_batch = int(check_batch)
    if isinstance(accumulation_steps, bool) or not isinstance(accumulation_steps, (int, np.integer)) \
            or accumulation_steps < 1:
        raise ValueError(f"estimate: accumulation_steps must be a whole number >= 1, got {accumulation_steps!r}")
    parameters = list(model.parameters())
    device = parameters[0].device if parameters else None
    parameter_dtype = str(dtype or (parameters[0].dtype if parameters else "float32"))
    del parameters

    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()  # frees then happen when the last reference goes, the same way in every step
    try:
        with mt.fork_rng(), np.errstate(all="ignore"):  # values are never looked at: a float16 Adam step may overflow
            intercept, slope, phases, marks, saved, trace, measured = measure(
                model, input_shape, batches, check_batch, make_optimizer, loss_fn or _default_loss, forward, dtype,
                device, set_to_none, accumulation_steps, mode, _default_loss)
    finally:
        if was_enabled:
            gc.enable()
    return Estimate(
        model_name=type(model).__name__, input_shape=input_shape, batch_size=int(batch_size),
        dtype=parameter_dtype, optimizer=optimizer_name, accumulation_steps=int(accumulation_steps),
        measured_batches=measured, seconds=time.perf_counter() - started, mode=mode,
        _intercept=intercept, _slope=slope, _phases=phases, _marks=marks, _saved=saved, _trace=trace)


def _call(model, x):
    return model(x)
