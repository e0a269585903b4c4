"""The grader's wire format: plain data as JSON, in length-prefixed frames, never pickle.

Both directions of the grading channel use it: the parent sends probe
requests (inputs it chose) and the child sends back the submission's answers.
What may cross:

- ``None``, ``bool``, ``int`` (at most 64 bits), ``float`` (NaN and
  infinities tagged explicitly), ``str``;
- ``list``, ``tuple`` (kept apart: a check may require a tuple) and ``dict``
  with ``str`` keys, nested at most :data:`MAX_DEPTH` deep;
- NumPy arrays and NumPy scalars of a numeric or bool dtype (the
  :data:`DTYPES` whitelist), as dtype + shape + base64 of the raw bytes.

Invariants
- :func:`to_wire` looks at *exact* types (``type(x) is float``), so it never
  calls a method an object could override (``__eq__``, ``__float__``,
  ``__array__``, ``__len__``, ``__iter__``...): a subclass or look-alike is
  refused with a message naming its type.
- :func:`from_wire` rebuilds only the types above; anything else (an unknown
  tag, a dtype off the list, a shape that does not match the bytes, a frame
  over :data:`MAX_FRAME` bytes) raises :class:`WireError`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import select
import struct
import time

import numpy as np

MAX_FRAME = 64 * 2**20
MAX_DEPTH = 32
MAX_INT = 2**64
DTYPES = frozenset(
    np.dtype(name).str
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64")
)
_SCALARS = {
    np.bool_: "bool", np.int8: "int8", np.int16: "int16", np.int32: "int32", np.int64: "int64",
    np.uint8: "uint8", np.uint16: "uint16", np.uint32: "uint32", np.uint64: "uint64",
    np.float16: "float16", np.float32: "float32", np.float64: "float64",
}
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_NDARRAY = np.ndarray  # captured before any submission code runs
_HEADER = struct.Struct(">I")


class WireError(ValueError):
    """Data that may not cross the grading channel, or a malformed frame."""


def _describe(x) -> str:
    t = type(x)
    return f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__qualname__


def to_wire(x, depth: int = 0):
    """``x`` as JSON-ready data; raises :class:`WireError` for anything off the list."""
    if depth > MAX_DEPTH:
        raise WireError(f"data nested more than {MAX_DEPTH} levels deep")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is int:
        if not -MAX_INT < x < MAX_INT:
            raise WireError(f"an int with {x.bit_length()} bits (at most 64 can be graded)")
        return x
    if t is float:
        if math.isfinite(x):
            return x
        return {"$": "float", "v": "nan" if x != x else ("inf" if x > 0 else "-inf")}
    if t is list:
        return [to_wire(v, depth + 1) for v in x]
    if t is tuple:
        return {"$": "tuple", "v": [to_wire(v, depth + 1) for v in x]}
    if t is dict:
        items = []
        for k, v in x.items():
            if type(k) is not str:
                raise WireError(f"a dict key of type {_describe(k)} (only str keys can be graded)")
            items.append([k, to_wire(v, depth + 1)])
        return {"$": "dict", "v": items}
    if t is _NDARRAY:
        if x.dtype.str not in DTYPES:
            raise WireError(f"an array of dtype {x.dtype} (numeric or bool dtypes only)")
        data = np.ascontiguousarray(x).tobytes()
        return {"$": "nd", "dtype": x.dtype.str, "shape": list(x.shape), "data": base64.b64encode(data).decode("ascii")}
    if t in _SCALARS:
        data = np.asarray(x).tobytes()
        return {"$": "scalar", "dtype": np.dtype(_SCALARS[t]).str, "data": base64.b64encode(data).decode("ascii")}
    raise WireError(f"a {_describe(x)} object, which cannot be graded (expected numbers, tuples/lists, or NumPy arrays)")


def _check_keys(obj: dict, keys: set[str]) -> None:
    if set(obj) != keys:
        raise WireError(f"malformed {obj.get('$')!r} entry: keys {sorted(obj)}")


def _decode_array(obj: dict, scalar: bool):
    dtype = obj["dtype"]
    if type(dtype) is not str or dtype not in DTYPES:
        raise WireError(f"dtype {dtype!r} is not allowed")
    try:
        data = base64.b64decode(obj["data"], validate=True)
    except (binascii.Error, TypeError, ValueError) as err:
        raise WireError(f"array bytes are not valid base64: {err}") from None
    dt = np.dtype(dtype)
    if scalar:
        if len(data) != dt.itemsize:
            raise WireError("scalar bytes do not match its dtype")
        return np.frombuffer(data, dtype=dt)[0]
    shape = obj["shape"]
    if type(shape) is not list or not all(type(s) is int and 0 <= s < MAX_FRAME for s in shape) or len(shape) > 32:
        raise WireError(f"bad array shape {shape!r}")
    if math.prod(shape) * dt.itemsize != len(data):
        raise WireError(f"array of shape {tuple(shape)} and dtype {dt} does not match its {len(data)} bytes")
    return np.frombuffer(data, dtype=dt).reshape(shape).copy()


def from_wire(x, depth: int = 0):
    """Rebuild plain data from :func:`to_wire`'s form; raises :class:`WireError` on anything else."""
    if depth > MAX_DEPTH + 1:
        raise WireError(f"data nested more than {MAX_DEPTH} levels deep")
    t = type(x)
    if x is None or t in (bool, str, float):
        return x
    if t is int:
        if not -MAX_INT < x < MAX_INT:
            raise WireError("an int wider than 64 bits")
        return x
    if t is list:
        return [from_wire(v, depth + 1) for v in x]
    if t is not dict:
        raise WireError(f"unexpected JSON value of type {t.__name__}")
    tag = x.get("$")
    if tag == "float":
        _check_keys(x, {"$", "v"})
        if x["v"] not in _NONFINITE:
            raise WireError(f"unknown float {x['v']!r}")
        return _NONFINITE[x["v"]]
    if tag in ("tuple", "dict"):
        _check_keys(x, {"$", "v"})
        if type(x["v"]) is not list:
            raise WireError(f"malformed {tag}")
        if tag == "tuple":
            return tuple(from_wire(v, depth + 1) for v in x["v"])
        out = {}
        for item in x["v"]:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not str or item[0] in out:
                raise WireError("malformed dict entry (keys must be distinct strings)")
            out[item[0]] = from_wire(item[1], depth + 1)
        return out
    if tag == "nd":
        _check_keys(x, {"$", "dtype", "shape", "data"})
        return _decode_array(x, scalar=False)
    if tag == "scalar":
        _check_keys(x, {"$", "dtype", "data"})
        return _decode_array(x, scalar=True)
    raise WireError(f"unknown entry {tag!r}")


def _refuse_constant(name: str):
    raise WireError(f"bare {name} in JSON (non-finite floats must be tagged)")


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise WireError(f"duplicate key {k!r} in a frame")
        out[k] = v
    return out


def dumps(message: dict) -> bytes:
    payload = json.dumps(message, allow_nan=False, separators=(",", ":")).encode()
    return _HEADER.pack(len(payload)) + payload


def loads(payload: bytes) -> dict:
    try:
        message = json.loads(payload, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise WireError(f"a frame that is not valid JSON ({type(err).__name__})") from None
    if type(message) is not dict:
        raise WireError("a frame that is not a JSON object")
    return message


def write_frame(fd: int, message: dict) -> None:
    data = dumps(message)
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class ChannelClosed(EOFError):
    """The other end closed the channel (the child died or exited)."""


class ChannelTimeout(TimeoutError):
    """No complete frame before the deadline."""


def _read_exactly(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise ChannelTimeout()
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise ChannelClosed()
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None) -> dict:
    """The next frame from ``fd``; ``deadline`` is a ``time.monotonic()`` value (None: wait for ever)."""
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes (at most {MAX_FRAME})")
    return loads(_read_exactly(fd, size, deadline))
