"""PyTorch, imported only when a conversion runs: ``import minigrad.export`` works without it.

PyTorch is an optional extra (``pip install minigrad[torch]``); nothing in
minigrad needs it but the two conversions, which import it on their first
call through :func:`import_torch`.
"""

from __future__ import annotations

__all__ = ["import_torch", "INSTALL_HINT"]

INSTALL_HINT = "pip install torch (or pip install 'minigrad[torch]')"


def import_torch(who: str):
    """The ``torch`` module, or an ImportError that names ``who`` and the install command."""
    try:
        import torch
    except ImportError as err:  # not installed (or blocked: sys.modules["torch"] = None)
        raise ImportError(
            f"{who} needs PyTorch, which is not installed (it is an optional extra of minigrad): "
            f"{INSTALL_HINT}"
        ) from err
    return torch
