"""``minigrad.memory``: where the memory of a training step goes (chapter 08)."""

from minigrad.memory.categories import CATEGORIES
from minigrad.memory.timeline import TimelineEvent
from minigrad.memory.tracker import Tracker, track

__all__ = ["CATEGORIES", "TimelineEvent", "Tracker", "track"]
