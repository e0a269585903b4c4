"""``minigrad.memory``: where the memory of a training step goes (chapter 08)."""

from minigrad.memory.tracker import Tracker, track

__all__ = ["Tracker", "track"]
