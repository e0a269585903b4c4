"""The grading wire format: plain data round-trips; objects, lies and malformed frames are refused."""

import base64
import json
import math
import os

import numpy as np
import pytest

from minigrad.grading import wire


@pytest.mark.parametrize(
    "value",
    [None, True, 3, -2**63 + 1, 2.5, "text", [1, [2.0, None]], (1, (2, 3)), {"a": (1,), "b": [0.5]}, (), []],
)
def test_plain_data_round_trips_with_its_types(value):
    back = wire.from_wire(json.loads(json.dumps(wire.to_wire(value), allow_nan=False)))
    assert back == value and type(back) is type(value)


def test_non_finite_floats_are_tagged_explicitly():
    encoded = json.dumps(wire.to_wire([math.nan, math.inf, -math.inf]), allow_nan=False)
    nan, inf, minus_inf = wire.from_wire(json.loads(encoded))
    assert math.isnan(nan) and inf == math.inf and minus_inf == -math.inf
    with pytest.raises(wire.WireError, match="bare NaN"):
        wire.loads(b'{"ok": NaN}')


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "uint8", "float16", "float32", "float64"])
def test_arrays_and_numpy_scalars_round_trip(dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)[:, ::2]  # a non-contiguous view
    back = wire.from_wire(wire.to_wire(a))
    assert type(back) is np.ndarray and back.dtype == a.dtype and np.array_equal(back, a)
    scalar = a.dtype.type(1)
    assert wire.from_wire(wire.to_wire(scalar)) == scalar and type(wire.from_wire(wire.to_wire(scalar))) is type(scalar)


class LyingFloat(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


class FakeArray:
    def __array__(self, *args, **kwargs):
        return np.zeros(3)

    def __len__(self):
        return 3


class SubArray(np.ndarray):
    pass


@pytest.mark.parametrize(
    "value, name",
    [
        (LyingFloat(1.0), "LyingFloat"),
        (FakeArray(), "FakeArray"),
        (np.zeros(2).view(SubArray), "SubArray"),
        (np.array([object()]), "dtype object"),
        (np.array(["a"]), "dtype <U1"),
        (np.zeros(2, dtype=complex), "dtype complex128"),
        ({1: 2}, "dict key of type int"),
        (2**70, "71 bits"),
        ([1, {2}], "set"),
    ],
)
def test_objects_and_lookalikes_are_refused_by_exact_type(value, name):
    with pytest.raises(wire.WireError, match=name):
        wire.to_wire(value)


def _array(dtype="<f8", shape=(2,), data=b"\0" * 16):
    return {"$": "nd", "dtype": dtype, "shape": list(shape), "data": base64.b64encode(data).decode()}


@pytest.mark.parametrize(
    "entry, message",
    [
        (_array(dtype="|O"), "not allowed"),
        (_array(dtype="<c16"), "not allowed"),
        (_array(shape=(3,)), "does not match"),
        (_array(shape=(-1,)), "bad array shape"),
        ({"$": "nd", "dtype": "<f8", "shape": [1], "data": "%%%"}, "base64"),
        ({"$": "pickle", "v": "gASVAAAAAAAAAAA="}, "unknown entry"),
        ({"$": "float", "v": "1e999"}, "unknown float"),
        ({"$": "tuple", "v": [1], "extra": 1}, "malformed"),
        ({"$": "dict", "v": [["a", 1], ["a", 2]]}, "distinct"),
    ],
)
def test_the_decoder_refuses_anything_else(entry, message):
    with pytest.raises(wire.WireError, match=message):
        wire.from_wire(entry)


def test_frames_refuse_duplicate_keys_oversize_and_garbage():
    with pytest.raises(wire.WireError, match="duplicate key"):
        wire.loads(b'{"id": "a", "id": "b"}')
    with pytest.raises(wire.WireError, match="not valid JSON"):
        wire.loads(b"\x80\x04garbage")
    with pytest.raises(wire.WireError, match="not a JSON object"):
        wire.loads(b"[1, 2]")
    read, write = os.pipe()
    try:
        os.write(write, (wire.MAX_FRAME + 1).to_bytes(4, "big"))
        with pytest.raises(wire.WireError, match="at most"):
            wire.read_frame(read)
        wire.write_frame(write, {"ok": wire.to_wire((1, np.arange(3)))})
        frame = wire.read_frame(read)
        value = wire.from_wire(frame["ok"])
        assert value[0] == 1 and np.array_equal(value[1], np.arange(3))
    finally:
        os.close(read)
        os.close(write)
