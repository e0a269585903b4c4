"""float8 as storage-only dtypes, and the per-tensor scaled float8 matmul experiment."""

import ml_dtypes
import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.amp.float8_matmul import float8_matmul, matmul_errors, scaled_cast

FLOAT8 = [(mt.float8_e4m3fn, ml_dtypes.float8_e4m3fn), (mt.float8_e5m2, ml_dtypes.float8_e5m2)]


@pytest.mark.parametrize("ours, theirs", FLOAT8)
def test_casts_to_and_from_float8_are_ml_dtypes_bit_for_bit(ours, theirs):
    rng = np.random.default_rng(0)
    top = float(ml_dtypes.finfo(theirs).max)
    x = np.concatenate([rng.standard_normal(500) * s for s in (1e-3, 1.0, top / 4)]).astype(np.float32)
    t = mt.tensor(x).to(ours)
    assert t.dtype == ours and mt.is_floating_point(ours)
    assert np.array_equal(t.numpy().view(np.uint8), x.astype(theirs).view(np.uint8))
    every = np.arange(256, dtype=np.uint8).view(theirs)  # all 256 codes widen exactly
    widened = mt.from_numpy(every).float().numpy()
    assert np.array_equal(widened, every.astype(np.float32), equal_nan=True)
    assert mt.finfo(ours).max == top


def test_float8_by_name_and_other_ml_dtypes_still_refused():
    assert mt.zeros(2, dtype="float8_e5m2").dtype == mt.float8_e5m2
    with pytest.raises(TypeError, match="not supported"):
        mt.zeros(2, dtype=ml_dtypes.float8_e4m3fnuz)


@pytest.mark.parametrize("dtype", [mt.float8_e4m3fn, mt.float8_e5m2])
def test_the_scale_maps_the_largest_magnitude_to_the_formats_largest_number(dtype):
    x = np.array([0.5, -3.0, 0.01], np.float32)
    q, scale = scaled_cast(x, dtype)
    assert scale == float(ml_dtypes.finfo(dtype).max) / 3.0
    assert float(np.abs(q.astype(np.float32)).max()) == float(ml_dtypes.finfo(dtype).max)
    np.testing.assert_allclose(q.astype(np.float32) / scale, x, rtol=2.0 ** -3)
    assert scaled_cast(np.zeros(3, np.float32), dtype)[1] == 1.0


def test_error_ordering_on_random_and_mnist_layer_like_data():
    rng = np.random.default_rng(0)
    random = (rng.standard_normal((64, 200)).astype(np.float32), rng.standard_normal((200, 48)).astype(np.float32))
    images = np.clip(rng.standard_normal((64, 784)), -0.42, 2.8).astype(np.float32)  # normalised pixels' range
    weights = rng.uniform(-1 / 28, 1 / 28, (784, 256)).astype(np.float32)  # Linear(784, 256)'s init
    hidden = np.maximum(images @ weights, 0)
    for a, b in (random, (images, weights), (hidden, rng.uniform(-1 / 16, 1 / 16, (256, 128)).astype(np.float32))):
        e = matmul_errors(a, b)
        assert e["float32"] < 1e-6 < e["float16"] < e["bfloat16"] < e["float8_e4m3fn"] < e["float8_e5m2"]
        assert e["float8_e4m3fn"] < 0.06 and e["float8_e5m2"] < 0.12


def test_without_the_scale_small_data_underflows():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((32, 32)) * 1e-4).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
    unscaled = a.astype(ml_dtypes.float8_e4m3fn).astype(np.float32) @ b
    reference = a.astype(np.float64) @ b
    scaled = float8_matmul(a, b)
    assert np.linalg.norm(scaled - reference) < 0.1 * np.linalg.norm(unscaled - reference)
