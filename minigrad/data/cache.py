"""Where datasets live: ``$MINIGRAD_DATA`` if set, else the user's cache directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def data_root() -> Path:
    """The folder minigrad reads and downloads datasets into (absolute: an empty or relative variable is ignored)."""
    env = os.environ.get("MINIGRAD_DATA")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform.startswith("win"):
        base = _absolute(os.environ.get("LOCALAPPDATA")) or Path.home() / "AppData" / "Local"
    else:
        base = _absolute(os.environ.get("XDG_CACHE_HOME")) or Path.home() / ".cache"  # as the XDG spec says
    return base / "minigrad"


def _absolute(value: str | None) -> Path | None:
    return Path(value) if value and Path(value).is_absolute() else None
