"""Writing a file so that nothing is ever half-written: :func:`atomic_write`.

The content goes to a temporary file next to the target. Only when it is
complete and on disk (``fsync``) does it replace the target, in one
``os.replace`` (atomic on POSIX and Windows); the folder is then fsynced too
where the system allows it, so that the rename survives a power cut. On any
failure, an interrupt included, the temporary file is removed and the target
is left as it was.

Permissions: a new file gets ``0o666`` minus the umask, like any file the
user creates (not the private ``0o600`` of :mod:`tempfile`); a file that is
replaced keeps its mode.

This module stands outside the stage order: ``minigrad.nn`` (checkpoints) and
``minigrad.data`` (downloads) both use it, and it imports nothing of minigrad.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "temporary_name"]


def temporary_name(path: Path) -> Path:
    """A fresh hidden name next to ``path`` for its content in progress: ``.NAME.<random>.part``."""
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file for writing bytes; on a clean exit it becomes ``path``.

    ``f.name`` is the temporary file's path (to verify the content before it
    is committed: raise inside the block to discard it)::

        with atomic_write("model.npz") as f:
            np.savez(f, **arrays)
    """
    path = Path(path)
    temporary = temporary_name(path)
    try:
        with open(temporary, "xb") as f:  # "x": never clobber; mode 0o666 & ~umask
            yield f
            f.flush()
            os.fsync(f.fileno())
        _keep_mode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    _fsync_folder(path.parent)


def _keep_mode(path: Path, temporary: Path) -> None:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return
    os.chmod(temporary, mode)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable; a no-op where folders cannot be opened (Windows)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
