"""``save(obj, path)`` / ``load(path)``: checkpoints without pickle.

A checkpoint is a NumPy ``.npz`` archive: every tensor and array is one
entry, stored with its exact dtype and bytes, and the nesting (dicts with
string or int keys, lists, tuples, numbers, strings, booleans, None) is one
JSON document. bfloat16 data (which ``.npz`` cannot describe) is stored as
its raw 16-bit patterns, ``uint16``, with ``"dtype": "bfloat16"`` in the
structure. Loading uses
``allow_pickle=False``, so opening a checkpoint can never run code. A round
trip is bit-exact.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

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


def _stored(node: dict, key: str, archive) -> np.ndarray:
    """The array of entry ``node[key]``, with a bfloat16 marker turned back into bfloat16."""
    array = archive[node[key]]
    marker = node.get("dtype")
    if marker is None:
        return array
    if marker != "bfloat16" or array.dtype != np.uint16:
        raise CheckpointError(
            f"load: entry {node[key]!r} is marked dtype={marker!r} but holds {array.dtype} data "
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


def _decode(node, archive):
    if isinstance(node, list):
        return [_decode(v, archive) for v in node]
    if isinstance(node, dict):
        if "__tensor__" in node:
            return tensor(_stored(node, "__tensor__", archive), requires_grad=node.get("requires_grad", False))
        if "__ndarray__" in node:
            return _stored(node, "__ndarray__", archive)
        if "__tuple__" in node:
            return tuple(_decode(v, archive) for v in node["__tuple__"])
        if "__dict__" in node:
            return {k: _decode(v, archive) for k, v in node["__dict__"]}
        raise CheckpointError(f"load: unknown entry {sorted(node)} in the checkpoint structure")
    return node


def save(obj, path: str | os.PathLike) -> Path:
    """Write ``obj`` (e.g. ``{"model": model.state_dict(), "optimizer": opt.state_dict()}``) to ``path``."""
    arrays: dict[str, np.ndarray] = {}
    structure = {"format": FORMAT, "version": VERSION, "root": _encode(obj, arrays, "obj")}
    arrays[_STRUCTURE] = np.frombuffer(json.dumps(structure).encode(), dtype=np.uint8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as tmp:
        np.savez(tmp, **arrays)
    os.replace(tmp.name, path)  # never leave a half-written checkpoint under the real name
    return path


def load(path: str | os.PathLike):
    """Read a checkpoint written by :func:`save`; tensors come back bit-exact."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"load: no such checkpoint: {path}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if _STRUCTURE not in archive.files:
                raise CheckpointError(f"load: {path} is an .npz file but not a minigrad checkpoint (no {_STRUCTURE} entry)")
            structure = json.loads(archive[_STRUCTURE].tobytes().decode())
            if structure.get("format") != FORMAT:
                raise CheckpointError(f"load: {path} is not a minigrad checkpoint")
            if structure.get("version", 0) > VERSION:
                raise CheckpointError(f"load: {path} was written by a newer minigrad (format {structure['version']}); upgrade minigrad")
            return _decode(structure["root"], {k: archive[k] for k in archive.files if k != _STRUCTURE})
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError, json.JSONDecodeError) as err:
        raise CheckpointError(f"load: {path} is corrupt or truncated ({type(err).__name__}: {err}); save it again") from None
