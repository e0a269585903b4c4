"""Download a file from the first mirror that works, with a progress bar and a checksum.

The checksum is the MD5 of the *uncompressed* content (for ``.gz`` files), the
form in which MNIST's canonical checksums are published; it does not change
when a mirror recompresses a file.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm


class DownloadError(OSError):
    """No mirror delivered a file with the right checksum."""


def content_md5(path: Path, gz: bool | None = None) -> str:
    """MD5 of the file's content, decompressed first when it is gzip (default: judged by the name)."""
    digest = hashlib.md5()
    opener = gzip.open if (path.suffix == ".gz" if gz is None else gz) else open
    with opener(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(path: Path, md5: str, gz: bool | None = None) -> bool:
    try:
        return content_md5(path, gz) == md5
    except (OSError, EOFError):
        return False


def download(name: str, mirrors: list[str], md5: str, folder: Path, timeout: float = 30.0) -> Path:
    """Fetch ``name`` from the first mirror whose copy matches ``md5``; return its path in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    failures = []
    for mirror in mirrors:
        url = mirror.rstrip("/") + "/" + name
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as tmp:
            part = Path(tmp.name)
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    total = int(response.headers.get("Content-Length") or 0) or None
                    with tqdm(total=total, unit="B", unit_scale=True, desc=name, leave=False) as bar:
                        for block in iter(lambda: response.read(1 << 16), b""):
                            tmp.write(block)
                            bar.update(len(block))
            except (urllib.error.URLError, OSError, ValueError) as err:
                failures.append(f"{url}: {err}")
                part.unlink(missing_ok=True)
                continue
        try:
            got = content_md5(part, gz=name.endswith(".gz"))
        except (OSError, EOFError) as err:
            got = f"unreadable: {err}"
        if got == md5:
            shutil.move(part, target)
            return target
        failures.append(f"{url}: checksum mismatch (got {got}, want {md5})")
        part.unlink(missing_ok=True)
    raise DownloadError(f"could not download {name}:\n  " + "\n  ".join(failures))
