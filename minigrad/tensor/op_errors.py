"""The errors of ``Function.apply``: a failed forward named by op and operands, in the user's code or ours.

NumPy's errors inside ``forward`` become a ``ShapeError`` / ``DTypeError`` /
``IndexError`` naming the op and its operands. When the error comes from the
user's own code (their Function, or an exercise plugged in with
``use_exercise``) it is chained (``from exc``) to keep their traceback, and
the message names the user's file and line.
"""

from __future__ import annotations

import os
import sysconfig

import numpy as np

from minigrad.tensor.backend import DeviceError
from minigrad.tensor.errors import DTypeError, ShapeError, describe
from minigrad.tensor.tensor import Tensor

__all__ = ["explain_error", "forward_error", "user_frame", "device_error"]


def explain_error(ctx, exc: Exception, args, kwargs) -> Exception:
    """Turn a NumPy error inside ``forward`` into one that names the op and its operands."""
    operands = ", ".join(describe(a) for a in args)
    options = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    text = f"{ctx.op}: cannot apply to ({operands}{options}): {exc}"
    if isinstance(exc, ValueError):
        return ShapeError(text)
    if isinstance(exc, IndexError):
        return IndexError(text)
    return DTypeError(text)


def forward_error(ctx, exc: Exception, args, kwargs) -> tuple[Exception, bool]:
    """The error to raise for ``exc`` from ``ctx.forward``, and whether to chain it (it came from the user's code)."""
    where = user_frame(exc.__traceback__)
    error = ctx.explain_error(exc, args, kwargs)
    if where is None and type(ctx).__module__.startswith("minigrad."):  # NumPy refused: our message says it all
        return error, False
    if where is not None:
        error.args = (f"{error.args[0] if error.args else ''} (raised in your code at {where})",)
    return error, True


def _library_folders() -> tuple[str, ...]:
    """Folders whose files are not the user's: this package, NumPy's, the standard library and site-packages."""
    folders = {os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(np.__file__)}
    paths = sysconfig.get_paths()
    folders.update(paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
    return tuple(os.path.join(os.path.realpath(f), "") for f in folders)


_LIBRARY_FOLDERS: tuple[str, ...] | None = None


def user_frame(tb) -> str | None:
    """``"file:line, in function"`` of the innermost frame of traceback ``tb`` in the user's code, or None.

    The user's code is any file outside minigrad, NumPy and the Python
    installation: a learner's exercise file plugged in with ``use_exercise``,
    a script, a notebook cell.
    """
    global _LIBRARY_FOLDERS
    if _LIBRARY_FOLDERS is None:
        _LIBRARY_FOLDERS = _library_folders()
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        path = os.path.realpath(code.co_filename) if not code.co_filename.startswith("<") else code.co_filename
        if not path.startswith(_LIBRARY_FOLDERS) and not code.co_filename.startswith("<frozen"):
            found = f"{code.co_filename}:{tb.tb_lineno}, in {code.co_name}"
        tb = tb.tb_next
    return found


def device_error(cls, args) -> DeviceError:
    tensors = [a for a in args if isinstance(a, Tensor)]
    where = ", ".join(f"{t.shape} on {t.device}" for t in tensors)
    first = tensors[0].device
    return DeviceError(
        f"{cls.op}: expected all tensors on the same device, got {where}. "
        f"Move them with .to('{first}') (or put everything on one device before the op)"
    )
