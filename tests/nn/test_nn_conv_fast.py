"""The speed path of conv2d (``functional/conv_fast.py``) computes what the clear version (``functional/conv.py``) does.

The library runs the speed path whenever conv.py's exercise functions are its
own, and the clear version as soon as a learner's are swapped in: both are
checked here, on the same inputs, in both im2col memory orders and for
contiguous and channels-last inputs.
"""

import numpy as np
import pytest

import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad.nn.functional import conv, conv_fast
from minigrad.nn.functional._utils import library_defines

GEOMETRIES = [
    # x shape, weight shape, stride, padding, dilation
    ((3, 4, 9, 8), (5, 4, 3, 2), (1, 2), (1, 2), (2, 1)),
    ((2, 1, 10, 9), (4, 1, 5, 5), 1, 0, 1),  # the MNIST shape: few channels, wide rows
    ((2, 16, 6, 5), (8, 16, 3, 3), 1, 1, 1),  # many channels, narrow rows
    ((1, 3, 7, 7), (2, 3, 2, 3), (3, 2), (1, 0), (2, 3)),
    ((2, 3, 4, 4), (2, 3, 1, 1), 1, 0, 1),
]


def _run(rng_seed, xs, ws, stride, padding, dilation, channels_last):
    """(output, dx, dw, db) of sum(upstream * conv2d(x, w, b)) on fixed float64 data."""
    rng = np.random.default_rng(rng_seed)
    data, weight, bias = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    if channels_last:
        x = mt.tensor(np.ascontiguousarray(data.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2).detach()
    else:
        x = mt.tensor(data)
    x.requires_grad_(True)
    w, b = mt.tensor(weight, requires_grad=True), mt.tensor(bias, requires_grad=True)
    out = F.conv2d(x, w, b, stride, padding, dilation)
    upstream = np.random.default_rng(rng_seed + 1).standard_normal(out.shape)
    (out * mt.tensor(upstream)).sum().backward()
    return out, [out.detach().cpu().numpy(), x.grad.cpu().numpy(), w.grad.cpu().numpy(), b.grad.cpu().numpy()]


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels-last"])
@pytest.mark.parametrize("order", ["chosen", "taps-first", "rows-first"])
@pytest.mark.parametrize("xs, ws, stride, padding, dilation", GEOMETRIES)
def test_speed_path_equals_the_clear_version(monkeypatch, xs, ws, stride, padding, dilation, order, channels_last):
    if order != "chosen":
        monkeypatch.setattr(conv_fast, "taps_first", lambda channels, out_width: order == "taps-first")
    fast_out, fast = _run(7, xs, ws, stride, padding, dilation, channels_last)
    assert fast_out.grad_fn.name == "FastConv2dFunctionBackward"
    assert fast_out.is_contiguous() != (channels_last and xs[1] > 1)  # PyTorch's rule: the input's memory format
    monkeypatch.setattr(conv, "library_defines", lambda file_name, *functions: False)
    clear_out, clear = _run(7, xs, ws, stride, padding, dilation, channels_last)
    assert clear_out.grad_fn.name == "Conv2dFunctionBackward"
    for name, a, b in zip(("output", "dx", "dweight", "dbias"), fast, clear):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


def test_fast_im2col_is_the_clear_matrix_in_either_order(monkeypatch, rng):
    x = rng.standard_normal((2, 3, 9, 7))[:, :, ::2, 1:]  # a strided view
    expected = conv.im2col(x, (2, 3), (1, 2), (2, 1))
    for taps_first in (True, False):
        monkeypatch.setattr(conv_fast, "taps_first", lambda channels, out_width: taps_first)
        got = conv_fast.im2col(x, (2, 3), (1, 2), (2, 1))
        assert got.flags.f_contiguous == taps_first
        np.testing.assert_array_equal(got, expected)


def test_fast_col2im_reads_any_memory_order(rng):
    """The fast col2im takes dcols as a C- or Fortran-ordered matrix, or as the 6-D window array: all equal the clear one."""
    shape, kernel, stride, dilation = (2, 3, 7, 6), (3, 2), (2, 1), (1, 2)
    dcols = rng.standard_normal((2 * 3 * 4, 3 * 2 * 3))  # (N * Ho * Wo, kh * kw * C)
    expected = conv.col2im(dcols, shape, kernel, stride, dilation)
    for form in (dcols, np.asfortranarray(dcols), dcols.reshape(2, 3, 4, 3, 2, 3)):
        np.testing.assert_array_equal(conv_fast.col2im(form, shape, kernel, stride, dilation), expected)


def test_the_speed_path_replaces_only_the_library_own_functions():
    """A function defined anywhere but the library's conv.py (a learner's, under use_exercise) keeps the clear path."""
    assert library_defines("conv.py", conv.im2col, conv.col2im, conv.Conv2dFunction.backward)

    def my_im2col(x, kernel_size, stride, dilation):
        return conv.im2col(x, kernel_size, stride, dilation)

    assert not library_defines("conv.py", my_im2col, conv.col2im, conv.Conv2dFunction.backward)
    assert not library_defines("pooling.py", conv.im2col)
