"""float16 convolution and pooling under autocast: computed in float32 and rounded once, saved for backward in float16.

Like every other op on float16 operands, ``conv2d`` and ``max_pool2d`` take
:mod:`minigrad.tensor.bfloat16_compute`'s route: the im2col matrix is a
float32 temporary during the op, what the node keeps for backward is float16,
so a CNN step's activation bytes stay about half of float32's; the backward
adds the im2col gradient into the input's tap by tap
(``conv_fast.input_gradient_by_tap``), so no whole float32 copy of it is made.
"""

import gc

import numpy as np
import pytest

import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.amp import GradScaler, autocast, step_memory
from minigrad.nn.functional import conv_fast
from minigrad.tensor.float16_casts import narrow


def _images(n=4, c=3, size=10, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, c, size, size)).astype(np.float32), rng.standard_normal((5, c, 3, 3)).astype(np.float32)


def test_float16_conv2d_is_the_float32_convolution_of_the_float16_values_rounded_once():
    x, w = _images()
    x16, w16 = mt.tensor(x).half().requires_grad_(), mt.tensor(w).half().requires_grad_()
    out = F.conv2d(x16, w16, padding=1)
    assert out.dtype == mt.float16
    wide = F.conv2d(x16.detach().float(), w16.detach().float(), padding=1)
    assert np.array_equal(out.detach().numpy().view(np.uint16), narrow(wide.numpy()).view(np.uint16))
    grad = np.random.default_rng(1).standard_normal(out.shape).astype(np.float16)
    out.backward(mt.tensor(grad))
    x32, w32 = x16.detach().float().requires_grad_(), w16.detach().float().requires_grad_()
    F.conv2d(x32, w32, padding=1).backward(mt.tensor(grad.astype(np.float32)))
    assert x16.grad.dtype == mt.float16 and np.array_equal(x16.grad.numpy(), narrow(x32.grad.numpy()))
    assert np.array_equal(w16.grad.numpy(), narrow(w32.grad.numpy()))


def test_conv2d_and_max_pool2d_save_float16_arrays_for_backward_under_autocast():
    x, w = _images()
    conv = nn.Conv2d(3, 5, 3)
    with autocast("cpu", dtype=mt.float16):
        out = F.max_pool2d(conv(mt.tensor(x)), 2)
    pool = out.grad_fn
    conv_node = next(p for p in pool._parents if p is not None)
    while conv_node.op != "conv2d":
        conv_node = next(p for p in conv_node._parents if p is not None)
    for node in (pool, conv_node):
        floating = [s for s in node._saved if getattr(s, "dtype", None) is not None and s.dtype.kind == "f"]
        assert all(s.dtype == np.float16 for s in floating), (node.op, [s.dtype for s in floating])
    assert any(getattr(s, "dtype", None) == np.float16 for s in conv_node._saved)  # the im2col matrix


def _cnn_step(precision):
    mt.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 5), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler("cpu", enabled=precision is mt.float16)
    rng = np.random.default_rng(0)
    x, y = mt.tensor(rng.standard_normal((8, 1, 28, 28)).astype(np.float32)), mt.tensor(rng.integers(0, 10, 8))

    def step():
        opt.zero_grad()
        with autocast("cpu", dtype=precision, enabled=precision is not None):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step, model, opt


def test_a_cnn_step_under_float16_autocast_keeps_at_most_55_percent_of_float32s_activation_bytes():
    figures = {}
    for precision in (None, mt.float16):
        gc.collect()
        step, model, opt = _cnn_step(precision)
        step()
        figures[precision] = step_memory(step, model, opt)
        del step, model, opt
    assert 0 < figures[mt.float16]["activation"] <= 0.55 * figures[None]["activation"]
    assert figures[mt.float16]["peak"] <= 0.55 * figures[None]["peak"]


@pytest.mark.parametrize("n, c, size, out, k, stride, dilation, pad", [
    (4, 16, 12, 32, 5, 1, 1, 0), (3, 8, 9, 6, 3, 2, 1, 1), (2, 12, 10, 5, 3, 1, 2, 2), (1, 9, 5, 4, 5, 1, 1, 2)])
def test_the_input_gradient_tap_by_tap_is_col2im_of_the_whole_cols_gradient(n, c, size, out, k, stride, dilation, pad):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, c, size, size)).astype(np.float32)
    w = rng.standard_normal((out, c, k, k)).astype(np.float32)
    padded = conv_fast.pad_input(x, (pad, pad), channels_last=True)
    rows = (padded.shape[2] - dilation * (k - 1) - 1) // stride + 1
    assert not conv_fast.taps_first(c, rows)  # window by window: the case it serves
    grad = rng.standard_normal((n, out, rows, rows)).astype(np.float32)
    g = conv_fast.output_rows(grad)
    geometry = (padded.shape, (k, k), (stride, stride), (dilation, dilation))
    whole = conv_fast.col2im(conv_fast.cols_gradient(grad, w, g), *geometry)
    by_tap = conv_fast.input_gradient_by_tap(g, w, *geometry)
    assert by_tap.shape == whole.shape and by_tap.strides == whole.strides and np.array_equal(by_tap, whole)
