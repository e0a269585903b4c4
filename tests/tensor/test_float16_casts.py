"""The float16 <-> float32 conversions of the speed path are NumPy's, bit for bit."""

import numpy as np

from minigrad.tensor.float16_casts import astype, narrow, widen


def test_widen_is_astype_for_every_float16():
    every = np.arange(65536, dtype=np.uint16).view(np.float16)
    assert np.array_equal(widen(every).view(np.uint32), every.astype(np.float32).view(np.uint32))


def test_narrow_is_astype_around_every_rounding_boundary_and_for_specials():
    every = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    finite = np.unique(every[np.isfinite(every)].astype(np.float64))
    points = np.concatenate([finite, (finite[1:] + finite[:-1]) / 2]).astype(np.float32)  # values and ties
    bits = points.view(np.uint32)
    rng = np.random.default_rng(0)
    x = np.concatenate([points, (bits + 1).view(np.float32), (bits - 1).view(np.float32),
                        np.array([np.inf, -np.inf, np.nan, -np.nan, 65519.996, 65520.0, 1e30, 0.0, -0.0], np.float32),
                        rng.integers(0, 2**32, 200_000, dtype=np.uint32).view(np.float32)])
    with np.errstate(all="ignore"):
        expected = x.astype(np.float16)
    got = narrow(x)
    same = (got.view(np.uint16) == expected.view(np.uint16)) | (np.isnan(got) & np.isnan(expected))
    assert same.all(), x[~same][:5]


def test_astype_keeps_shapes_and_layouts_and_leaves_other_dtypes_to_numpy():
    a = np.random.default_rng(1).standard_normal((7, 5)).astype(np.float32)
    for view in (a, a.T, a[::2], np.float32(3.0) * np.ones(()).astype(np.float32)):
        down = astype(view, np.dtype(np.float16))
        assert down.shape == view.shape and np.array_equal(down, view.astype(np.float16))
        up = astype(down, np.dtype(np.float32))
        assert up.dtype == np.float32 and np.array_equal(up, down.astype(np.float32))
    assert astype(a, np.dtype(np.float64)).dtype == np.float64
