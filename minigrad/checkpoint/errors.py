"""The error of a checkpointed block whose recompute does not match its first run."""

from __future__ import annotations

__all__ = ["CheckpointError"]


class CheckpointError(RuntimeError):
    """A recompute saved tensors of another shape, dtype or device (or another number of them) than the first
    forward did (``torch.utils.checkpoint.CheckpointError``)."""
