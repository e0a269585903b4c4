"""What a training run keeps as it goes: per-step losses, loss scales and times, per-epoch results, memory peaks.

Both are saved with the run (:mod:`.run_state`) as plain lists and numbers,
so a resumed run's history is the uninterrupted run's, step for step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["RunHistory", "RunMemory"]


@dataclass
class RunHistory:
    """``losses[i]``, ``loss_scales[i]`` (the scale step i used; 1.0 without a scaler), ``skipped[i]`` (its update
    was skipped: a gradient overflowed) and ``step_times[i]`` (seconds) of optimizer step i; ``epochs``: one dict
    per finished epoch (``epoch``, ``train_loss``, ``test_loss``, ``test_accuracy``)."""

    losses: list = field(default_factory=list)
    loss_scales: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    step_times: list = field(default_factory=list)
    epochs: list = field(default_factory=list)

    def record_step(self, loss: float, scale: float, skipped: bool, seconds: float) -> None:
        self.losses.append(float(loss))
        self.loss_scales.append(float(scale))
        self.skipped.append(bool(skipped))
        self.step_times.append(float(seconds))

    def record_epoch(self, epoch: int, train_loss: float, test_loss, test_accuracy) -> None:
        self.epochs.append({"epoch": epoch, "train_loss": train_loss, "test_loss": test_loss,
                            "test_accuracy": test_accuracy})

    def state_dict(self) -> dict:
        return {key: list(value) if key != "epochs" else [dict(e) for e in value] for key, value in asdict(self).items()}

    @classmethod
    def from_state(cls, state: dict) -> "RunHistory":
        return cls(**{key: list(state[key]) if key != "epochs" else [dict(e) for e in state[key]]
                      for key in ("losses", "loss_scales", "skipped", "step_times", "epochs")})


@dataclass
class RunMemory:
    """The largest figures any step of the run reached on its card (bytes): the caching allocator's reserved and
    allocated peaks, and the tracker's peak with its split by category at that moment."""

    peak_reserved: int = 0
    peak_allocated: int = 0
    peak: int = 0
    peak_by_category: dict = field(default_factory=dict)

    def record(self, gpu, tracker) -> None:
        """Fold in one step's card (a finished ``simulated_gpu``) and tracker."""
        stats = gpu.stats()
        self.peak_reserved = max(self.peak_reserved, int(stats["reserved_bytes.all.peak"]))
        self.peak_allocated = max(self.peak_allocated, int(stats["allocated_bytes.all.peak"]))
        if tracker.peak > self.peak:
            self.peak, self.peak_by_category = int(tracker.peak), {k: int(v) for k, v in tracker.peak_by_category.items()}

    def state_dict(self) -> dict:
        return {**asdict(self), "peak_by_category": dict(self.peak_by_category)}

    @classmethod
    def from_state(cls, state: dict) -> "RunMemory":
        return cls(int(state["peak_reserved"]), int(state["peak_allocated"]), int(state["peak"]),
                   {str(k): int(v) for k, v in state["peak_by_category"].items()})
