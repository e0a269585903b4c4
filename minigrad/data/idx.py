"""The IDX file format of MNIST: a magic number, the dimensions, then raw bytes.

Layout (big-endian): two zero bytes, a type code (0x08 = unsigned byte), the
number of dimensions n, then n 32-bit sizes, then the data. A file whose
length does not match its header is rejected, never silently used.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

from minigrad.files import atomic_write

_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


class IDXError(ValueError):
    """A file is not valid IDX (wrong magic, truncated, or the wrong size)."""


def parse_idx(raw: bytes, name: str = "<bytes>") -> np.ndarray:
    """Decode IDX bytes into an array of the shape its header declares."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES:
        raise IDXError(f"{name}: not an IDX file (bad magic number {raw[:4].hex() or 'empty'})")
    dtype = np.dtype(_TYPES[raw[2]])
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IDXError(f"{name}: truncated header ({len(raw)} bytes)")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise IDXError(
            f"{name}: header says shape {shape} ({expected} bytes in all) but the file has {len(raw)} bytes; "
            f"it is truncated or corrupt - delete it and download it again"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="), copy=False)


def read_raw(path: str | Path) -> bytes:
    """The uncompressed bytes of an IDX file, gzip-compressed (``.gz``) or not."""
    path = Path(path)
    try:
        return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, zlib.error) as err:  # a flipped bit in the deflate stream is a zlib.error
        raise IDXError(f"{path}: cannot be decompressed ({err}); it is truncated or corrupt - delete it and download it again") from None


def write_idx(array: np.ndarray, path: str | Path) -> None:
    """Write ``array`` (uint8) as IDX, gzip-compressed when the name ends in ``.gz``."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    raw = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()
    path = Path(path)
    with atomic_write(path) as f:
        f.write(gzip.compress(raw, mtime=0) if path.suffix == ".gz" else raw)
