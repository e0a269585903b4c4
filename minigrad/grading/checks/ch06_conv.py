"""Graded checks for chapter 06, exercises 6.1-6.2: ``minigrad/nn/functional/conv.py`` (im2col, col2im, conv backward).

Every check draws fresh random shapes (batch, channels, size, kernel, stride,
padding, dilation) and float64 values, and compares the learner's code with a
plain loop over output pixels and taps, or with central finite differences
(``minigrad.tensor.gradcheck``).

The two exercises are checked independently: 6.2's checks put the library's
``im2col`` in the learner's module, so a missing or wrong 6.1 costs 6.1's
points only.
"""

from __future__ import annotations

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.nn.functional import conv as reference
from minigrad.tensor import gradcheck

# ---------------------------------------------------------------- helpers


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _geometry(gen, max_side: int = 9):
    """Random (N, C, H, W), kernel, stride, dilation of a valid (already padded) im2col call."""
    while True:
        N, C = int(gen.integers(1, 4)), int(gen.integers(1, 4))
        H, W = int(gen.integers(3, max_side + 1)), int(gen.integers(3, max_side + 1))
        kernel = (int(gen.integers(1, 4)), int(gen.integers(1, 4)))
        stride = (int(gen.integers(1, 4)), int(gen.integers(1, 4)))
        dilation = (int(gen.integers(1, 3)), int(gen.integers(1, 3)))
        if all(d * (k - 1) + 1 <= s for d, k, s in zip(dilation, kernel, (H, W))):
            return (N, C, H, W), kernel, stride, dilation


def _naive_im2col(x: np.ndarray, kernel, stride, dilation) -> np.ndarray:
    """Row (n, oh, ow) holds x[n, c, oh*sh + i*dh, ow*sw + j*dw] in (i, j, c) order: the definition, as loops."""
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    Ho = reference.conv_output_size(H, kh, sh, 0, dh)
    Wo = reference.conv_output_size(W, kw, sw, 0, dw)
    rows = []
    for n in range(N):
        for oh in range(Ho):
            for ow in range(Wo):
                rows.append([x[n, c, oh * sh + i * dh, ow * sw + j * dw]
                             for i in range(kh) for j in range(kw) for c in range(C)])
    return np.array(rows, dtype=x.dtype).reshape(N * Ho * Wo, kh * kw * C)


def _naive_conv(x, w, b, stride, padding, dilation) -> np.ndarray:
    """The convolution (cross-correlation, as in PyTorch) by loops over output pixels."""
    ph, pw = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    N, C, H, W = xp.shape
    O, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    Ho = reference.conv_output_size(H, kh, sh, 0, dh)
    Wo = reference.conv_output_size(W, kw, sw, 0, dw)
    out = np.zeros((N, O, Ho, Wo))
    for oh in range(Ho):
        for ow in range(Wo):
            patch = xp[:, :, oh * sh : oh * sh + dh * (kh - 1) + 1 : dh, ow * sw : ow * sw + dw * (kw - 1) + 1 : dw]
            out[:, :, oh, ow] = np.einsum("nchw,ochw->no", patch, w)
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def _close(actual, expected, what: str, rtol: float = 1e-9, atol: float = 1e-9) -> None:
    actual = np.asarray(actual)
    assert actual.shape == np.shape(expected), f"{what}: shape {actual.shape}, expected {np.shape(expected)}"
    if not np.allclose(actual, expected, rtol=rtol, atol=atol):
        worst = np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape)
        raise AssertionError(
            f"{what}: wrong values; worst at index {tuple(int(i) for i in worst)}: got {actual[worst]:.8g}, "
            f"expected {np.asarray(expected)[worst]:.8g}"
        )


def _layouts(gen, shape):
    """The same random values as a contiguous NCHW array and as an NCHW view of channels-last memory."""
    N, C, H, W = shape
    nhwc = gen.standard_normal((N, H, W, C))
    return {"contiguous": np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2)), "channels-last": nhwc.transpose(0, 3, 1, 2)}


def _describe(shape, kernel, stride, dilation) -> str:
    return f"input {shape}, kernel {kernel}, stride {stride}, dilation {dilation}"


# ---------------------------------------------------------------- 6.1 im2col


@pytest.mark.exercise("6.1")
def test_im2col_matches_the_definition(submission, rng):
    gen = _np(rng)
    for _ in range(12):
        shape, kernel, stride, dilation = _geometry(gen)
        for layout, x in _layouts(gen, shape).items():
            got = submission.im2col(x, kernel, stride, dilation)
            what = f"im2col({layout} {_describe(shape, kernel, stride, dilation)})"
            _close(got, _naive_im2col(x, kernel, stride, dilation), what, rtol=0, atol=0)


@pytest.mark.exercise("6.1")
def test_im2col_of_a_strided_view(submission, rng):
    """x may be any strided view (a slice with a step, a transposed image): use x's own strides."""
    gen = _np(rng)
    for _ in range(6):
        shape, kernel, stride, dilation = _geometry(gen, max_side=6)
        N, C, H, W = shape
        big = gen.standard_normal((N, C + 1, 2 * H, W + 3))
        x = big[:, 1:, ::2, 2 : 2 + W]  # a view with a step along H and an offset
        got = submission.im2col(x, kernel, stride, dilation)
        _close(got, _naive_im2col(np.ascontiguousarray(x), kernel, stride, dilation),
               f"im2col(a sliced view, {_describe(shape, kernel, stride, dilation)})", rtol=0, atol=0)
        swapped = gen.standard_normal((N, C, W, H)).transpose(0, 1, 3, 2)  # (N, C, H, W), H and W strides swapped
        got = submission.im2col(swapped, kernel, stride, dilation)
        _close(got, _naive_im2col(np.ascontiguousarray(swapped), kernel, stride, dilation),
               f"im2col(a transposed view, {_describe(shape, kernel, stride, dilation)})", rtol=0, atol=0)


@pytest.mark.exercise("6.1")
def test_conv2d_forward_with_your_im2col(submission, rng):
    """The library's conv2d forward (padding, channels-last copy, one matmul) runs on your im2col."""
    gen = _np(rng)
    for _ in range(8):
        shape, kernel, stride, dilation = _geometry(gen, max_side=7)
        padding = (int(gen.integers(0, 3)), int(gen.integers(0, 3)))
        O = int(gen.integers(1, 5))
        x = gen.standard_normal(shape)
        w = gen.standard_normal((O, shape[1], *kernel))
        b = gen.standard_normal(O)
        out = submission.conv2d(mt.tensor(x), mt.tensor(w), mt.tensor(b), stride, padding, dilation)
        _close(out.numpy(), _naive_conv(x, w, b, stride, padding, dilation),
               f"conv2d({_describe(shape, kernel, stride, dilation)}, padding {padding}, {O} filters)")


# ---------------------------------------------------------------- 6.2 col2im and conv backward


@pytest.fixture
def with_reference_im2col(submission, monkeypatch):
    """The learner's module with the library's im2col, so 6.2 does not depend on 6.1."""
    monkeypatch.setattr(submission, "im2col", reference.im2col)
    return submission


def _naive_col2im(dcols, padded_shape, kernel, stride, dilation) -> np.ndarray:
    """Each entry of dcols added back to the input element it was copied from: the adjoint, as loops."""
    N, C, H, W = padded_shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    Ho = reference.conv_output_size(H, kh, sh, 0, dh)
    Wo = reference.conv_output_size(W, kw, sw, 0, dw)
    rows = dcols.reshape(N, Ho, Wo, kh, kw, C)
    dx = np.zeros(padded_shape)
    for oh in range(Ho):
        for ow in range(Wo):
            for i in range(kh):
                for j in range(kw):
                    dx[:, :, oh * sh + i * dh, ow * sw + j * dw] += rows[:, oh, ow, i, j, :]
    return dx


@pytest.mark.exercise("6.2")
def test_col2im_matches_the_loops(with_reference_im2col, rng):
    gen = _np(rng)
    for _ in range(12):
        shape, kernel, stride, dilation = _geometry(gen)
        rows = reference.im2col(np.zeros(shape), kernel, stride, dilation).shape[0]
        dcols = gen.standard_normal((rows, kernel[0] * kernel[1] * shape[1]))
        got = with_reference_im2col.col2im(dcols, shape, kernel, stride, dilation)
        _close(got, _naive_col2im(dcols, shape, kernel, stride, dilation),
               f"col2im(dcols of shape {dcols.shape}, {_describe(shape, kernel, stride, dilation)})")


@pytest.mark.exercise("6.2")
def test_col2im_is_the_adjoint_of_im2col(with_reference_im2col, rng):
    """<im2col(x), D> == <x, col2im(D)> for every x and D: overlapping windows must *add* their gradients."""
    gen = _np(rng)
    for _ in range(20):
        shape, kernel, stride, dilation = _geometry(gen)
        stride = (int(gen.integers(1, 3)), int(gen.integers(1, 3)))  # mostly overlapping windows
        x = gen.standard_normal(shape)
        cols = reference.im2col(x, kernel, stride, dilation)
        d = gen.standard_normal(cols.shape)
        back = np.asarray(with_reference_im2col.col2im(d, shape, kernel, stride, dilation))
        assert back.shape == shape, f"col2im returned shape {back.shape}, expected the padded input's {shape}"
        lhs, rhs = float((cols * d).sum()), float((x * back).sum())
        assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9), (
            f"col2im is not the adjoint of im2col for {_describe(shape, kernel, stride, dilation)}: "
            f"<im2col(x), d> = {lhs:.10g} but <x, col2im(d)> = {rhs:.10g}"
        )


def _t64(gen, *shape, requires_grad=True):
    return mt.tensor(gen.standard_normal(shape), dtype=mt.float64, requires_grad=requires_grad)


def _conv_case(gen):
    N, C, O = int(gen.integers(1, 3)), int(gen.integers(1, 3)), int(gen.integers(1, 4))
    kernel = (int(gen.integers(1, 4)), int(gen.integers(1, 4)))
    stride = (int(gen.integers(1, 3)), int(gen.integers(1, 3)))
    padding = (int(gen.integers(0, 3)), int(gen.integers(0, 3)))
    dilation = (int(gen.integers(1, 3)), int(gen.integers(1, 3)))
    H = int(gen.integers(max(1, dilation[0] * (kernel[0] - 1) + 1 - 2 * padding[0]), 7))
    W = int(gen.integers(max(1, dilation[1] * (kernel[1] - 1) + 1 - 2 * padding[1]), 7))
    return (N, C, H, W), (O, C, *kernel), stride, padding, dilation


@pytest.mark.exercise("6.2")
def test_conv2d_backward_gradcheck(with_reference_im2col, rng):
    """Finite differences of the whole conv2d (x, weight and bias) on random geometries, with your backward."""
    gen = _np(rng)
    conv2d = with_reference_im2col.conv2d
    for _ in range(6):
        xs, ws, stride, padding, dilation = _conv_case(gen)
        bias = bool(gen.integers(0, 2))
        x, w, b = _t64(gen, *xs), _t64(gen, *ws), _t64(gen, ws[0])
        args = [x, w, b] if bias else [x, w]
        result = gradcheck(lambda x, w, b=None: conv2d(x, w, b, stride, padding, dilation), args,
                           raise_exception=False, seed=int(gen.integers(2**31)))
        assert result, (f"conv2d(x {xs}, weight {ws}, stride {stride}, padding {padding}, dilation {dilation}, "
                        f"bias={bias}): {result}")


@pytest.mark.exercise("6.2")
def test_conv2d_backward_matches_the_library(with_reference_im2col, rng):
    """Same gradients as the reference, also when only some inputs need one and for a channels-last input."""
    gen = _np(rng)
    for trial in range(6):
        xs, ws, stride, padding, dilation = _conv_case(gen)
        x0, w0, b0 = gen.standard_normal(xs), gen.standard_normal(ws), gen.standard_normal(ws[0])
        g = None
        needs = [(True, True, True), (True, False, False), (False, True, True), (False, True, False)][trial % 4]
        grads = {}
        for name, module in (("yours", with_reference_im2col), ("library", reference)):
            if trial >= 4:  # channels-last memory, viewed as (N, C, H, W)
                x = mt.from_numpy(np.ascontiguousarray(x0.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2).detach()
            else:
                x = mt.tensor(x0)
            x.requires_grad_(needs[0])
            w, b = mt.tensor(w0, requires_grad=needs[1]), mt.tensor(b0, requires_grad=needs[2])
            out = module.conv2d(x, w, b, stride, padding, dilation)
            g = gen.standard_normal(out.shape) if g is None else g
            (out * mt.tensor(g)).sum().backward()
            grads[name] = [t.grad for t in (x, w, b)]
        what = f"conv2d(x {xs}, weight {ws}, stride {stride}, padding {padding}, dilation {dilation})"
        for label, mine, ref, need in zip(("x", "weight", "bias"), grads["yours"], grads["library"], needs):
            if not need:
                continue
            assert mine is not None, f"{what}: no gradient for {label}"
            _close(mine.numpy(), ref.numpy(), f"{what}: gradient of {label}", rtol=1e-9, atol=1e-9)
