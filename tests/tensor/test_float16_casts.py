"""The float16 <-> float32 conversions of the speed path are NumPy's, bit for bit (NaN payloads included)."""

import warnings

import numpy as np
import pytest

from minigrad.tensor.float16_casts import SMALL, astype, narrow, widen


def test_widen_is_astype_for_every_float16():
    every = np.arange(65536, dtype=np.uint16).view(np.float16)
    assert np.array_equal(widen(every).view(np.uint32), every.astype(np.float32).view(np.uint32))
    across_blocks = np.tile(every, 3)[3:].reshape(-1, 5)  # several blocks, none starting at 0x0000
    assert np.array_equal(widen(across_blocks).view(np.uint32), across_blocks.astype(np.float32).view(np.uint32))
    a_few_nans = np.concatenate([np.ones(50, np.float16), np.array([0x7C01, 0xFE00], np.uint16).view(np.float16)])
    assert np.array_equal(widen(a_few_nans).view(np.uint32), a_few_nans.astype(np.float32).view(np.uint32))


def test_narrow_is_astype_around_every_rounding_boundary_and_for_specials():
    every = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    finite = np.unique(every[np.isfinite(every)].astype(np.float64))
    points = np.concatenate([finite, (finite[1:] + finite[:-1]) / 2]).astype(np.float32)  # values and ties
    bits = points.view(np.uint32)
    rng = np.random.default_rng(0)
    x = np.concatenate([points, (bits + 1).view(np.float32), (bits - 1).view(np.float32),
                        np.array([np.inf, -np.inf, np.nan, -np.nan, 65519.996, 65520.0, 1e30, 0.0, -0.0], np.float32),
                        rng.integers(0, 2**32, 200_000, dtype=np.uint32).view(np.float32)])
    _assert_narrow_exact(x)


def _assert_narrow_exact(x):
    with np.errstate(all="ignore"):
        expected = x.astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # overflow to inf is the format's rule here, not a user-facing warning
        got = narrow(x)
    assert got.shape == x.shape and got.dtype == np.float16
    same = got.view(np.uint16) == expected.view(np.uint16)
    assert same.all(), (x[~same][:5], got.view(np.uint16)[~same][:5], expected.view(np.uint16)[~same][:5])


def _bits(*values):
    return np.array(values, np.uint32).view(np.float32)


@pytest.mark.parametrize("name, x", [
    ("signed zeros", np.array([0.0, -0.0, 0.0, -0.0], np.float32)),
    ("a few subnormal-range values among normals", np.concatenate([
        np.linspace(-3, 3, 997, dtype=np.float32), np.array([1e-6, -3e-8, 2.0**-25, 6e-5], np.float32)])),
    ("subnormal halfway points", (np.arange(1, 2048, dtype=np.float32) - 0.5) * np.float32(2.0**-24)),
    ("float32 subnormals", _bits(1, 2, 0x007FFFFF, 0x80000001, 0x80400000)),
    ("NaN payloads", _bits(0x7F800001, 0x7F801FFF, 0x7F802000, 0x7FC00000, 0x7FFFFFFF, 0xFF800001, 0xFFC00123)),
    ("inf and the overflow boundary", np.array([np.inf, -np.inf, 65504.0, 65519.996, 65520.0, -65520.0,
                                                 65535.996, 65536.0, -1e38, 3.4e38], np.float32)),
    ("one huge value among normals", np.concatenate([np.ones(100, np.float32), np.array([1e20], np.float32)])),
    ("all infinite", np.full((3, 4), -np.inf, np.float32)),
])
def test_narrow_is_astype_on_special_inputs(name, x):
    _assert_narrow_exact(x)


def test_narrow_of_normal_weights_with_a_tail_below_float16s_normals():
    x = (np.random.default_rng(2).standard_normal((64, 129)) * 0.03).astype(np.float32)
    x[0, :5] = [1e-7, -1e-7, 0.0, -0.0, 6.1e-5]
    _assert_narrow_exact(x)
    _assert_narrow_exact(np.maximum(x, 0))  # half zeros, as after a ReLU


def test_narrow_and_widen_of_empty_zero_dimensional_and_strided_arrays():
    grid = np.arange(-24.0, 24.0, dtype=np.float32).reshape(6, 8) * np.float32(1.37)
    for x in (np.zeros((0,), np.float32), np.zeros((3, 0), np.float32), np.float32(-2.5) * np.ones((), np.float32),
              grid[::2, 1::3], grid.T, grid[:, ::-1]):
        _assert_narrow_exact(x)
        down = x.astype(np.float16)
        up = astype(down, np.dtype(np.float32))
        assert up.shape == x.shape and np.array_equal(up.view(np.uint32), down.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("rows", [7, SMALL // 5 + 1])  # NumPy's own loop below SMALL elements, the bit path above
def test_astype_keeps_shapes_and_layouts_and_leaves_other_dtypes_to_numpy(rows):
    a = np.random.default_rng(1).standard_normal((rows, 5)).astype(np.float32)
    a[0, :3] = [1e5, -np.inf, np.nan]
    for view in (a, a.T, a[::2], np.float32(3.0) * np.ones(()).astype(np.float32)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            down = astype(view, np.dtype(np.float16))
        with np.errstate(over="ignore"):
            assert down.shape == view.shape and np.array_equal(down.view(np.uint16), view.astype(np.float16).view(np.uint16))
        up = astype(down, np.dtype(np.float32))
        assert up.dtype == np.float32 and up.shape == view.shape
        assert np.array_equal(up.view(np.uint32), down.astype(np.float32).view(np.uint32))
    assert astype(a, np.dtype(np.float64)).dtype == np.float64
