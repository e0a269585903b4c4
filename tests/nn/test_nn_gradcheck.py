"""Finite-difference gradient checks (float64) of every hand-written backward pass in minigrad.nn.functional."""

import numpy as np
import pytest

import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad.tensor import gradcheck


def t64(rng, *shape, requires_grad=True):
    return mt.tensor(rng.standard_normal(shape), dtype=mt.float64, requires_grad=requires_grad)


# ----------------------------------------------------------------------------- linear


@pytest.mark.parametrize("bias", [True, False])
def test_linear(rng, bias):
    x, w, b = t64(rng, 4, 5), t64(rng, 3, 5), t64(rng, 3)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b if bias else None), [x, w, b if bias else None])


def test_linear_batched_leading_dims(rng):
    assert gradcheck(F.linear, [t64(rng, 2, 3, 4), t64(rng, 2, 4), t64(rng, 2)])


# ----------------------------------------------------------------------------- conv2d

CONV_CASES = [
    # x shape, weight shape, stride, padding, dilation, bias
    ((2, 2, 5, 5), (3, 2, 3, 3), 1, 0, 1, True),
    ((2, 2, 5, 5), (3, 2, 3, 3), 1, 1, 1, False),
    ((1, 2, 7, 6), (2, 2, 3, 3), 2, 1, 1, True),
    ((1, 2, 6, 7), (2, 2, 2, 3), (2, 1), (1, 0), 1, True),
    ((1, 1, 7, 7), (2, 1, 3, 3), 1, 2, 2, True),
    ((1, 2, 8, 7), (2, 2, 2, 2), (3, 2), (0, 2), (2, 3), False),
    ((2, 3, 4, 4), (2, 3, 1, 1), 1, 0, 1, True),  # 1x1 convolution
    ((1, 2, 5, 5), (2, 2, 3, 3), 1, "same", 1, True),
]


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, bias", CONV_CASES)
def test_conv2d(rng, xs, ws, stride, padding, dilation, bias):
    x, w, b = t64(rng, *xs), t64(rng, *ws), t64(rng, ws[0])
    args = [x, w, b] if bias else [x, w]
    assert gradcheck(lambda x, w, b=None: F.conv2d(x, w, b, stride, padding, dilation), args)


def test_conv2d_channels_last_input(rng):
    """An (N, C, H, W) view of channels-last memory (what a previous conv returns) differentiates the same."""
    x = mt.tensor(rng.standard_normal((2, 4, 4, 3)), dtype=mt.float64).permute(0, 3, 1, 2).detach().requires_grad_(True)
    assert not x.is_contiguous()
    assert gradcheck(lambda x, w: F.conv2d(x, w, padding=1), [x, t64(rng, 2, 3, 3, 3)])


@pytest.fixture(params=["fast", "clear"])
def conv_path(request, monkeypatch):
    """Run conv2d on the speed path (the library's default) or on the clear version (what a learner's code runs on)."""
    from minigrad.nn.functional import conv

    if request.param == "clear":
        monkeypatch.setattr(conv, "library_defines", lambda file_name, *functions: False)
    return request.param


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, bias", CONV_CASES)
def test_conv2d_on_both_paths(rng, conv_path, xs, ws, stride, padding, dilation, bias):
    x, w, b = t64(rng, *xs), t64(rng, *ws), t64(rng, ws[0])
    args = [x, w, b] if bias else [x, w]
    fn = lambda x, w, b=None: F.conv2d(x, w, b, stride, padding, dilation)  # noqa: E731
    assert fn(*args).grad_fn.name == ("FastConv2dFunctionBackward" if conv_path == "fast" else "Conv2dFunctionBackward")
    assert gradcheck(fn, args)


def test_conv2d_unbatched(rng):
    assert gradcheck(lambda x, w: F.conv2d(x, w, padding=1), [t64(rng, 2, 4, 4), t64(rng, 3, 2, 3, 3)])


# ----------------------------------------------------------------------------- pooling

POOL_CASES = [
    # kernel, stride, padding
    (2, None, 0),
    (3, 2, 1),
    (3, 1, 1),
    ((2, 3), (1, 2), (1, 1)),
    (2, 1, 0),
]


@pytest.mark.parametrize("kernel, stride, padding", POOL_CASES)
def test_max_pool2d(rng, kernel, stride, padding):
    # distinct values, far apart, so that a finite-difference step never changes which element wins
    x = mt.tensor(rng.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.1, dtype=mt.float64, requires_grad=True)
    assert gradcheck(lambda x: F.max_pool2d(x, kernel, stride, padding), [x])


@pytest.mark.parametrize("kernel, stride, padding", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d(rng, kernel, stride, padding, count_include_pad):
    x = t64(rng, 2, 2, 6, 7)
    assert gradcheck(lambda x: F.avg_pool2d(x, kernel, stride, padding, count_include_pad=count_include_pad), [x])


def test_max_pool2d_on_channels_last_input(rng):
    data = rng.permutation(2 * 5 * 6 * 3).reshape(2, 5, 6, 3) * 0.1
    x = mt.tensor(data, dtype=mt.float64).permute(0, 3, 1, 2).detach().requires_grad_(True)
    assert gradcheck(lambda x: F.max_pool2d(x, 2), [x])


# ----------------------------------------------------------------------------- batch norm


@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training(rng, shape, affine):
    C = shape[1]
    x, w, b = t64(rng, *shape), t64(rng, C), t64(rng, C)
    if affine:
        assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [x, w, b])
    else:
        assert gradcheck(lambda x: F.batch_norm(x, None, None, training=True), [x])


def test_batch_norm_eval(rng):
    x, w, b = t64(rng, 3, 2, 3, 3), t64(rng, 2), t64(rng, 2)
    mean = mt.tensor(rng.standard_normal(2), dtype=mt.float64)
    var = mt.tensor(rng.uniform(0.5, 2.0, 2), dtype=mt.float64)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b, training=False), [x, w, b])


# ----------------------------------------------------------------------------- dropout


def test_dropout_with_a_fixed_mask(rng):
    x = t64(rng, 4, 6)
    # a fresh generator with the same seed on every call: the same mask each time
    assert gradcheck(lambda x: F.dropout(x, 0.4, True, generator=np.random.default_rng(7)), [x])


# ----------------------------------------------------------------------------- losses


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_cross_entropy(rng, reduction, label_smoothing, ignore_index):
    x = t64(rng, 6, 4)
    y = mt.tensor(np.array([0, 1, 2, 3, 1, 2]))
    assert gradcheck(
        lambda x: F.cross_entropy(x, y, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing), [x]
    )


def test_cross_entropy_spatial_and_unbatched(rng):
    x = t64(rng, 2, 3, 2, 2)
    y = mt.tensor(rng.integers(0, 3, (2, 2, 2)))
    assert gradcheck(lambda x: F.cross_entropy(x, y, label_smoothing=0.1), [x])
    assert gradcheck(lambda x: F.cross_entropy(x, mt.tensor(2)), [t64(rng, 5)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(rng, reduction):
    x = t64(rng, 5, 3)
    y = mt.tensor(np.array([0, 2, 1, 2, 0]))
    assert gradcheck(lambda x: F.nll_loss(F.log_softmax(x, 1), y, ignore_index=2, reduction=reduction), [x])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(rng, reduction):
    assert gradcheck(lambda a, b: F.mse_loss(a, b, reduction=reduction), [t64(rng, 3, 4), t64(rng, 3, 4)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits(rng, reduction):
    x = mt.tensor(rng.standard_normal((3, 4)) * 3, dtype=mt.float64, requires_grad=True)
    y = mt.tensor(rng.uniform(0, 1, (3, 4)), dtype=mt.float64, requires_grad=True)
    assert gradcheck(lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction=reduction), [x, y])


# ----------------------------------------------------------------------------- a whole small CNN


def test_small_cnn_end_to_end(rng):
    import minigrad.nn as nn

    model = nn.Sequential(
        nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * 3 * 3, 3),
    ).double()
    x = mt.tensor(rng.standard_normal((4, 1, 6, 6)), dtype=mt.float64, requires_grad=True)
    y = mt.tensor(np.array([0, 1, 2, 1]))
    params = list(model.parameters())

    def loss(x, *ps):
        return F.cross_entropy(model(x), y)

    assert gradcheck(loss, [x, *params], atol=1e-5, rtol=1e-3)
