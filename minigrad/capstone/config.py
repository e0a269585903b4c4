"""``TrainConfig``: one way to train a model - its batch, precision, checkpointing, accumulation and card.

The capstone turns these knobs one at a time until a step fits a card. The
invariant: ``batch_size`` is the *effective* batch of one optimizer step;
with ``accumulate = K`` it is run as K micro-batches of ``batch_size // K``
(K must divide it), so every configuration of one model makes the same
update from the same examples, and only memory and time differ.

``amp``: None (float32), ``"float16"`` (autocast + a GradScaler) or
``"bfloat16"`` (autocast, no scaler). ``checkpoint``: None, ``"auto"`` (the
planner of chapter 10 picks segments for the card), a whole number N (N
equal segments) or ``"budget"`` (the budget mode: evict and recompute under
the card's memory, no plan). ``card``: a GPU profile name
(``minigrad memory devices``) or a ``GPUProfile`` of one's own whose memory
the step is simulated against, or None for no limit.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

from minigrad.memory import GPUProfile, get_profile

__all__ = ["TrainConfig", "AMP_DTYPES", "CHECKPOINT_MODES"]

AMP_DTYPES = ("float16", "bfloat16")
CHECKPOINT_MODES = ("auto", "budget")  # or a whole number of segments
OPTIMIZERS = ("adam", "sgd")


def _whole(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"TrainConfig: {name} must be a whole number >= {low}, got {value!r}")
    return int(value)


def _checkpoint_setting(value):
    """None, "auto", "budget", or a whole number of segments >= 1 (the command line's "4" is 4)."""
    if value is None or (isinstance(value, str) and value in CHECKPOINT_MODES):
        return value
    if isinstance(value, str):
        if not value.isdigit():
            raise ValueError(f"TrainConfig: checkpoint must be None, 'auto', 'budget' or a number of segments, "
                             f"got {value!r}")
        value = int(value)
    return _whole(value, "checkpoint (a number of segments)", 1)


@dataclass(frozen=True)
class TrainConfig:
    """One training configuration; see the module docstring. Checked when made."""

    batch_size: int
    amp: str | None = None
    checkpoint: str | int | None = None
    accumulate: int = 1
    card: str | None = None
    optimizer: str = "adam"

    def __post_init__(self):
        object.__setattr__(self, "batch_size", _whole(self.batch_size, "batch_size", 1))
        object.__setattr__(self, "accumulate", _whole(self.accumulate, "accumulate", 1))
        if self.batch_size % self.accumulate:
            raise ValueError(
                f"TrainConfig: accumulate={self.accumulate} must divide batch_size={self.batch_size} (the effective "
                f"batch is split into equal micro-batches); try accumulate in "
                f"{[k for k in range(1, min(self.batch_size, 64) + 1) if self.batch_size % k == 0]}")
        if self.amp is not None and self.amp not in AMP_DTYPES:
            raise ValueError(f"TrainConfig: amp must be None, 'float16' or 'bfloat16', got {self.amp!r}")
        object.__setattr__(self, "checkpoint", _checkpoint_setting(self.checkpoint))
        if self.card is not None:  # a known card by its short name; a GPUProfile of one's own (a scaled card) kept
            profile = get_profile(self.card)
            object.__setattr__(self, "card", profile if isinstance(self.card, GPUProfile) else profile.short_name)
        if self.checkpoint in CHECKPOINT_MODES and self.card is None:
            raise ValueError(f"TrainConfig: checkpoint={self.checkpoint!r} plans against a card's memory; "
                             f"name one with card= (e.g. card='gtx1050'), or give a number of segments")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"TrainConfig: optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}")

    @property
    def micro_batch(self) -> int:
        """The examples in one forward/backward: ``batch_size // accumulate``."""
        return self.batch_size // self.accumulate

    @property
    def scaled(self) -> bool:
        """Whether the step needs a GradScaler (float16's gradients underflow without one)."""
        return self.amp == "float16"

    def but(self, **changes) -> "TrainConfig":
        """This configuration with some knobs turned (checked again)."""
        return replace(self, **changes)

    def label(self) -> str:
        """A short name for tables and bars: ``float16 + 4 segments + accumulate 4``."""
        parts = [self.amp or "float32"]
        if self.checkpoint == "auto":
            parts.append("planned checkpoints")
        elif self.checkpoint == "budget":
            parts.append("budget mode")
        elif self.checkpoint is not None:
            parts.append(f"{self.checkpoint} segments")
        if self.accumulate > 1:
            parts.append(f"accumulate {self.accumulate}")
        return " + ".join(parts)
