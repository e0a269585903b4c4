"""Autocast's state: per thread and per device type, whether autocast is on, in which dtype, and with the weight cache.

A new thread starts with autocast off everywhere, as in PyTorch (the state
is thread-local: a data-loading thread does not inherit the training loop's
region). ``autocast`` sets the state on entry and puts the previous one back
on exit, so regions nest and ``enabled=False`` inside an enabled region
turns it off until its end.

Invariants
- :func:`mode` is None for a device type no region of this thread has set.
- ``depth`` counts this thread's open regions (enabled or not); the weight
  cache is emptied when it drops to 0.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from minigrad.tensor import bfloat16, float16

__all__ = ["AutocastMode", "mode", "set_mode", "is_autocast_enabled", "get_autocast_dtype", "DEFAULT_DTYPES",
           "state"]


@dataclass(frozen=True)
class AutocastMode:
    """What one region asked for on one device type."""

    enabled: bool
    dtype: np.dtype
    cache_enabled: bool


class _State(threading.local):
    def __init__(self) -> None:
        self.modes: dict[str, AutocastMode] = {}
        self.depth = 0


#: this thread's autocast state
state = _State()


def mode(device_type: str) -> AutocastMode | None:
    return state.modes.get(device_type)


def set_mode(device_type: str, new: AutocastMode | None) -> AutocastMode | None:
    """Install ``new`` for ``device_type`` in this thread (None: unset); returns the previous mode."""
    previous = state.modes.get(device_type)
    if new is None:
        state.modes.pop(device_type, None)
    else:
        state.modes[device_type] = new
    return previous


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Is autocast on for ``device_type`` in this thread (``torch.is_autocast_enabled``)?"""
    current = state.modes.get(device_type)
    return current is not None and current.enabled


#: the dtype of ``autocast(device_type)`` without ``dtype=``: bfloat16 on the CPU, float16 on CUDA (PyTorch's)
DEFAULT_DTYPES = {"cpu": bfloat16, "cuda": float16}


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on ``device_type`` in this thread (the default when no region set one)."""
    current = state.modes.get(device_type)
    return current.dtype if current is not None else DEFAULT_DTYPES[device_type]
