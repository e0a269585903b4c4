"""Where datasets live: ``$MINIGRAD_DATA`` if set, else the user's cache directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def data_root() -> Path:
    """The folder minigrad reads and downloads datasets into."""
    env = os.environ.get("MINIGRAD_DATA")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform.startswith("win"):
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "minigrad"
