"""Download a file from the first mirror that works, with a progress bar and a checksum.

The checksum is the MD5 of the *uncompressed* content (for ``.gz`` files), the
form in which MNIST's canonical checksums are published; it does not change
when a mirror recompresses a file.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import urllib.request
import zlib
from pathlib import Path

from tqdm.auto import tqdm

from minigrad.files import atomic_write


class DownloadError(OSError):
    """No mirror delivered a file with the right checksum."""


# What reading a damaged archive raises: a truncated gzip gives EOFError, a bad
# header or CRC OSError (BadGzipFile), a flipped bit in the deflate stream zlib.error.
CORRUPT_ARCHIVE_ERRORS = (OSError, EOFError, zlib.error)

# What a failed transfer raises: URLError and timeouts are OSErrors, a connection
# cut mid-body is an http.client.IncompleteRead, a malformed URL a ValueError.
_TRANSFER_ERRORS = (OSError, http.client.HTTPException, ValueError)


class _Rejected(Exception):
    """A mirror's copy is incomplete or fails the checksum (discard it, try the next mirror)."""


def content_md5(path: Path, gz: bool | None = None) -> str:
    """MD5 of the file's content, decompressed first when it is gzip (default: judged by the name)."""
    digest = hashlib.md5()
    opener = gzip.open if (path.suffix == ".gz" if gz is None else gz) else open
    with opener(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(path: Path, md5: str, gz: bool | None = None) -> bool:
    """Whether ``path``'s content has MD5 ``md5``; a corrupt or unreadable archive is simply not verified."""
    try:
        return content_md5(path, gz) == md5
    except CORRUPT_ARCHIVE_ERRORS:
        return False


def download(name: str, mirrors: list[str], md5: str, folder: Path, timeout: float = 30.0) -> Path:
    """Fetch ``name`` from the first mirror whose copy matches ``md5``; return its path in ``folder``.

    A mirror that fails, or whose copy is corrupt or has another checksum, is
    skipped for the next one. The copy in progress is a hidden ``.part`` file
    that is removed whatever happens; ``folder / name`` appears only complete
    and verified (see :func:`minigrad.files.atomic_write`).
    """
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    failures = []
    for mirror in mirrors:
        url = mirror.rstrip("/") + "/" + name
        try:
            with atomic_write(target) as part:
                _fetch(url, part, name, timeout)
                part.flush()
                _check(Path(part.name), md5, gz=name.endswith(".gz"))
            return target
        except (*_TRANSFER_ERRORS, _Rejected) as err:
            failures.append(f"{url}: {err}")
    raise DownloadError(f"could not download {name}:\n  " + "\n  ".join(failures))


def _fetch(url: str, out, name: str, timeout: float) -> None:
    received = 0
    with urllib.request.urlopen(url, timeout=timeout) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=name, leave=False) as bar:
            for block in iter(lambda: response.read(1 << 16), b""):
                out.write(block)
                received += len(block)
                bar.update(len(block))
    if total is not None and received != total:
        raise _Rejected(f"the transfer stopped after {received} of {total} bytes")


def _check(path: Path, md5: str, gz: bool) -> None:
    try:
        got = content_md5(path, gz=gz)
    except CORRUPT_ARCHIVE_ERRORS as err:
        raise _Rejected(f"checksum mismatch: the file is corrupt or truncated ({type(err).__name__}: {err}); want MD5 {md5}") from None
    if got != md5:
        raise _Rejected(f"checksum mismatch (got {got}, want {md5})")
