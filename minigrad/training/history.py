"""What a training run records: per-step losses and per-epoch metrics."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class EpochRecord:
    epoch: int
    train_loss: float
    train_accuracy: float
    seconds: float
    test_loss: float | None = None
    test_accuracy: float | None = None
    lr: float | None = None

    def line(self) -> str:
        """One fixed-format line: the same numbers always print the same way."""
        text = f"epoch {self.epoch:>2}: train loss {self.train_loss:.4f}, accuracy {self.train_accuracy:.2%}"
        if self.test_accuracy is not None:
            text += f" | test loss {self.test_loss:.4f}, accuracy {self.test_accuracy:.2%}"
        return text


@dataclass
class History:
    step_losses: list[float] = field(default_factory=list)
    epochs: list[EpochRecord] = field(default_factory=list)

    @property
    def last(self) -> EpochRecord:
        if not self.epochs:
            raise ValueError("History: no epoch has finished yet")
        return self.epochs[-1]
