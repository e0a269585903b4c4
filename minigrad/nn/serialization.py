"""``save(obj, path)`` / ``load(path)``: checkpoints without pickle.

A checkpoint is a NumPy ``.npz`` archive: every tensor and array is one
entry, stored with its exact dtype and bytes, and the nesting (dicts with
string or int keys, lists, tuples, numbers, strings, booleans, None) is one
JSON document. bfloat16 data (which ``.npz`` cannot describe) is stored as
its raw 16-bit patterns, ``uint16``, with ``"dtype": "bfloat16"`` in the
structure. Loading uses
``allow_pickle=False``, so opening a checkpoint can never run code. A round
trip is bit-exact.

A zip entry may be compressed, so a small file can claim to hold far more
than it takes on disk (a 4.5 MB file can expand to 1 GiB). ``load`` adds up
what the entries would expand to *before* decompressing anything and refuses
more than ``max_bytes`` (by default the larger of 256 MiB and 8 times the
file's size: ``save`` stores its entries uncompressed, so its own files are
never near it); pass ``max_bytes=`` to read a bigger archive you trust.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from pathlib import Path

import numpy as np

from minigrad.files import atomic_write
from minigrad.tensor import Tensor, bfloat16, tensor

FORMAT = "minigrad-checkpoint"
VERSION = 1
_STRUCTURE = "__structure__"


class CheckpointError(ValueError):
    """A file is not a readable minigrad checkpoint."""


def _store(array: np.ndarray, arrays: dict[str, np.ndarray], kind: str, **fields) -> dict:
    """Add ``array`` as a new entry; its structure node is ``{kind: entry name, **fields}``."""
    key = f"t{len(arrays)}"
    array = np.array(array, order="C")  # keeps 0-d arrays 0-d
    node = {kind: key, **fields}
    if array.dtype is bfloat16:  # .npz cannot describe it: keep the bit patterns
        array = array.view(np.uint16)
        node["dtype"] = "bfloat16"
    arrays[key] = array
    return node


def _with_dtype_marker(array: np.ndarray, marker) -> np.ndarray:
    """``array`` as stored, turned back into bfloat16 when its entry carries ``"dtype": "bfloat16"``."""
    if marker is None:
        return array
    if marker != "bfloat16" or array.dtype != np.uint16:
        raise CheckpointError(
            f"load: an entry is marked dtype={str(marker)[:40]!r} but holds {array.dtype} data "
            f"(expected bfloat16 stored as uint16); the checkpoint is corrupt, save it again"
        )
    return array.view(bfloat16)


def _encode(obj, arrays: dict[str, np.ndarray], where: str):
    if isinstance(obj, Tensor):
        return _store(obj.detach().cpu().numpy(), arrays, "__tensor__", requires_grad=obj.requires_grad)
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            raise TypeError(f"save: {where} is an object array; only numeric arrays can be saved")
        return _store(obj, arrays, "__ndarray__")
    if isinstance(obj, np.generic):
        return _encode(obj.item(), arrays, where)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict):
        bad = [k for k in obj if not isinstance(k, (str, int)) or isinstance(k, bool)]
        if bad:
            raise TypeError(f"save: dictionary keys must be strings or ints at {where}; got {[type(k).__name__ for k in bad]}")
        # JSON keys are strings, so keys travel as [key, value] pairs to keep ints ints
        return {"__dict__": [[k, _encode(v, arrays, f"{where}[{k!r}]")] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]
        return {"__tuple__": items} if isinstance(obj, tuple) else items
    raise TypeError(
        f"save: cannot store {type(obj).__name__} at {where}; checkpoints hold tensors, arrays, numbers, "
        f"strings, None and dicts/lists/tuples of them (save model.state_dict(), not the model)"
    )


def save(obj, path: str | os.PathLike) -> Path:
    """Write ``obj`` (e.g. ``{"model": model.state_dict(), "optimizer": opt.state_dict()}``) to ``path``.

    The write is atomic (:func:`minigrad.files.atomic_write`): the file appears
    complete or not at all, an existing checkpoint is replaced only by a
    complete one (and keeps its permissions), and nothing is left behind on
    failure. Missing parent folders are created.
    """
    arrays: dict[str, np.ndarray] = {}
    structure = {"format": FORMAT, "version": VERSION, "root": _encode(obj, arrays, "obj")}
    arrays[_STRUCTURE] = np.frombuffer(json.dumps(structure).encode(), dtype=np.uint8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as f:
        np.savez(f, **arrays)
    return path


DEFAULT_MIN_CAP = 256 * 2**20  # bytes an archive may always expand to
EXPANSION_CAP = 8  # ... or this many times its size on disk, whichever is larger


def load(path: str | os.PathLike, *, max_bytes: int | None = None):
    """Read a checkpoint written by :func:`save`; tensors come back bit-exact.

    ``max_bytes``: the most its arrays may expand to (default: the larger of
    256 MiB and 8 times the file's size); checked before anything is
    decompressed, so a small file that expands to gigabytes is refused.

    A file that is not a readable checkpoint (truncated, corrupted, another
    format, or crafted) raises :class:`CheckpointError`, whatever is wrong
    with it; a missing file raises ``FileNotFoundError``. Arrays are checked
    against their headers before they are read, and nothing in the file can
    make loading run code.
    """
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"load: {path} is a folder, not a checkpoint file; pass the path of the .npz file")
    if not path.exists():
        raise FileNotFoundError(f"load: no such checkpoint: {path}")
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0):
        raise ValueError(f"load: max_bytes must be an int number of bytes >= 0 or None, got {max_bytes!r}")
    cap = max_bytes if max_bytes is not None else max(DEFAULT_MIN_CAP, EXPANSION_CAP * path.stat().st_size)
    with open(path, "rb") as file:  # errors opening it (permissions, ...) are the system's, not the content's
        try:
            with zipfile.ZipFile(file) as archive:
                _check_expansion(archive, path, cap, max_bytes is None)
                return _Reader(archive, path).read()
        except CheckpointError:
            raise
        except RecursionError:
            raise CheckpointError(f"load: {path} is not a minigrad checkpoint: its structure is nested too deeply") from None
        except Exception as err:  # noqa: BLE001 - whatever the bytes make a parser raise means the same thing
            raise CheckpointError(
                f"load: {path} is corrupt or truncated ({_detail(err)}); it cannot be read - "
                f"save it again, or load an earlier copy"
            ) from err


def _check_expansion(archive: zipfile.ZipFile, path: Path, cap: int, default: bool) -> None:
    """Refuse an archive whose entries would expand past ``cap`` bytes (read from the zip directory only)."""
    infos = archive.infolist()
    total = sum(info.file_size for info in infos)
    if total <= cap:
        return
    largest = max(infos, key=lambda info: info.file_size)
    on_disk = path.stat().st_size
    limit = (f"the default limit, {cap:,} bytes (the larger of {DEFAULT_MIN_CAP // 2**20} MiB and "
             f"{EXPANSION_CAP} times the file's size)" if default else f"max_bytes={cap:,}")
    raise CheckpointError(
        f"load: {path} ({on_disk:,} bytes on disk) would expand to {total:,} bytes when decompressed "
        f"(its largest entry, {largest.filename!r}, to {largest.file_size:,} bytes from "
        f"{largest.compress_size:,} compressed), more than {limit}. Nothing was decompressed. If you trust the "
        f"file, pass load(path, max_bytes=...) with a limit above {total:,}"
    )


def _detail(err: Exception) -> str:
    """The parser's complaint, short; never its advice to trust the file (loading stays pickle-free)."""
    text = str(err)
    if "pickle" in text:
        return type(err).__name__
    return f"{type(err).__name__}: {text[:200]}"


_MAX_DEPTH = 200  # far more nesting than any state_dict has; deeper means a crafted file


class _Reader:
    """Reads one checkpoint archive, checking every entry before it is used."""

    def __init__(self, archive: zipfile.ZipFile, path: Path) -> None:
        self.archive, self.path = archive, path
        self.members = {info.filename[: -len(".npy")]: info for info in archive.infolist() if info.filename.endswith(".npy")}
        self.arrays: dict[str, np.ndarray] = {}

    def fail(self, problem: str) -> CheckpointError:
        return CheckpointError(f"load: {self.path} is not a valid minigrad checkpoint: {problem}")

    def read(self):
        if _STRUCTURE not in self.members:
            raise CheckpointError(f"load: {self.path} is a zip/.npz file but not a minigrad checkpoint (no {_STRUCTURE} entry)")
        raw = self.array(_STRUCTURE)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise self.fail(f"its {_STRUCTURE} entry is a {raw.dtype} array of shape {raw.shape}, not bytes")
        try:
            structure = json.loads(raw.tobytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise self.fail(f"its {_STRUCTURE} entry is not valid JSON ({err})") from None
        if not isinstance(structure, dict) or structure.get("format") != FORMAT:
            raise CheckpointError(f"load: {self.path} is not a minigrad checkpoint")
        version = structure.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise self.fail(f"format version {version!r} is not a positive integer")
        if version > VERSION:
            raise CheckpointError(f"load: {self.path} was written by a newer minigrad (format {version}); upgrade minigrad")
        if "root" not in structure:
            raise self.fail("its structure has no 'root'")
        return self.decode(structure["root"], "obj", 0)

    def decode(self, node, where: str, depth: int):
        if depth > _MAX_DEPTH:
            raise self.fail(f"it is nested more than {_MAX_DEPTH} levels deep at {where[:200]}...")
        if isinstance(node, list):
            return [self.decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node  # JSON leaves: None, bool, int, float, str
        if "__tensor__" in node and set(node) <= {"__tensor__", "requires_grad", "dtype"}:
            requires_grad = node.get("requires_grad", False)
            if not isinstance(requires_grad, bool):
                raise self.fail(f"{where} has requires_grad={requires_grad!r}, not true/false")
            array = _with_dtype_marker(self.array(node["__tensor__"], where), node.get("dtype"))
            try:
                return tensor(array, requires_grad=requires_grad)
            except Exception as err:  # noqa: BLE001 - e.g. a dtype no tensor can have
                raise self.fail(f"{where} cannot be a tensor ({type(err).__name__}: {err})") from None
        if "__ndarray__" in node and set(node) <= {"__ndarray__", "dtype"}:
            return _with_dtype_marker(self.array(node["__ndarray__"], where), node.get("dtype"))
        if list(node) == ["__tuple__"] and isinstance(node["__tuple__"], list):
            return tuple(self.decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(node["__tuple__"]))
        if list(node) == ["__dict__"] and isinstance(node["__dict__"], list):
            out = {}
            for pair in node["__dict__"]:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (str, int))
                        and not isinstance(pair[0], bool)):
                    raise self.fail(f"{where} holds {str(pair)[:80]} where a [key, value] pair (string or int key) belongs")
                out[pair[0]] = self.decode(pair[1], f"{where}[{pair[0]!r}]", depth + 1)
            return out
        raise self.fail(f"unknown entry {sorted(node)[:5]} at {where}")

    def array(self, key, where: str = _STRUCTURE) -> np.ndarray:
        """Entry ``key``, after checking that its header is sound and matches its size."""
        if not isinstance(key, str) or key not in self.members:
            raise self.fail(f"{where} refers to the array {str(key)[:80]!r}, which the file does not contain")
        if key not in self.arrays:
            self.arrays[key] = self._read_array(key)
        return self.arrays[key]

    def _read_array(self, key: str) -> np.ndarray:
        info = self.members[key]
        with self.archive.open(info) as fp:
            try:
                version = np.lib.format.read_magic(fp)
                read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                if version not in read_header:
                    raise self.fail(f"array {key!r} has .npy format version {version}, which save() never writes")
                shape, _, dtype = read_header[version](fp)
            except CheckpointError:
                raise
            except ValueError:  # NumPy's words here would suggest trusting the file; we never do
                raise self.fail(f"array {key!r} has a malformed .npy header") from None
            header_size = fp.tell()
        if dtype.hasobject:
            raise self.fail(f"array {key!r} holds Python objects ({dtype}); checkpoints hold only numeric arrays")
        nbytes = math.prod(shape) * dtype.itemsize
        if header_size + nbytes != info.file_size:
            raise self.fail(
                f"array {key!r} is damaged: its header says shape {shape} of {dtype} ({nbytes} bytes) but the "
                f"entry holds {info.file_size - header_size} bytes"
            )
        with self.archive.open(info) as fp:
            return np.lib.format.read_array(fp, allow_pickle=False)
