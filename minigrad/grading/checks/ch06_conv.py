"""Graded checks for chapter 06, exercises 6.1-6.2: ``minigrad/nn/functional/conv.py`` (im2col, col2im, conv backward).

Every check draws fresh random shapes (batch, channels, size, kernel, stride,
padding, dilation) and float64 values, and compares the learner's code with a
plain loop over output pixels and taps, or with central finite differences
(``minigrad.tensor.gradcheck``).

The learner's code runs in the sandboxed child (where the learner's file *is*
``minigrad.nn.functional.conv``); the loops, finite differences and the
library's gradients are computed here.

The two exercises are checked independently: 6.2's probes put the short,
trusted ``im2col`` below in the learner's module (the library's is out of the
child's reach), so a missing or wrong 6.1 costs 6.1's points only.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.checks._tensors import as_array, gradcheck_here
from minigrad.grading.probing import exercise, probe


def _output_size(size, k, s, d):
    from minigrad.nn.functional.conv import conv_output_size

    return conv_output_size(size, k, s, 0, d)


# ---------------------------------------------------------------- probes (child side)


def _trusted_im2col(x, kernel, stride, dilation):
    """(N*Ho*Wo, kh*kw*C) patches in (i, j, c) order, tap by tap (a copy; plain and slow is fine here)."""
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    Ho, Wo = (H - dh * (kh - 1) - 1) // sh + 1, (W - dw * (kw - 1) - 1) // sw + 1
    taps = [
        x[:, :, i * dh : i * dh + sh * (Ho - 1) + 1 : sh, j * dw : j * dw + sw * (Wo - 1) + 1 : sw]
        for i in range(kh) for j in range(kw)
    ]
    return np.stack(taps, axis=-1).transpose(0, 2, 3, 4, 1).reshape(N * Ho * Wo, kh * kw * C)


_LEARNERS: dict = {}


def _im2col(submission, trusted: bool) -> None:
    """The trusted im2col in the learner's module (6.2), or the learner's own (6.1)."""
    _LEARNERS.setdefault("im2col", submission.im2col)
    submission.im2col = _trusted_im2col if trusted else _LEARNERS["im2col"]


@probe
def im2col_of(submission, state, base, view, kernel, stride, dilation):
    """The learner's im2col of a view of ``base``: as given, channels-last, sliced, or with H and W swapped."""
    _im2col(submission, trusted=False)
    if view == "channels-last":
        x = base.transpose(0, 3, 1, 2)
    elif view == "sliced":
        x = base[:, 1:, ::2, 2:-1]
    elif view == "swapped":
        x = base.transpose(0, 1, 3, 2)
    else:
        x = base
    return submission.im2col(x, kernel, stride, dilation)


@probe
def col2im(submission, state, dcols, shape, kernel, stride, dilation):
    _im2col(submission, trusted=True)
    return submission.col2im(dcols, shape, kernel, stride, dilation)


@probe
def conv2d_forward(submission, state, x, w, b, stride, padding, dilation):
    """The library's conv2d forward (the learner's module, the learner's im2col)."""
    import minigrad.tensor as mt

    _im2col(submission, trusted=False)
    return as_array(submission.conv2d(mt.tensor(x), mt.tensor(w), mt.tensor(b), stride, padding, dilation))


@probe
def conv2d_gradients(submission, state, x0, w0, b0, geometry, needs, weights, channels_last):
    """Gradients of ``sum(weights * conv2d(x, w, b))`` through the learner's backward (trusted im2col)."""
    import minigrad.tensor as mt

    _im2col(submission, trusted=True)
    stride, padding, dilation = geometry
    if channels_last:  # channels-last memory, viewed as (N, C, H, W)
        x = mt.from_numpy(np.ascontiguousarray(x0.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2).detach()
    else:
        x = mt.tensor(x0)
    x.requires_grad_(needs[0])
    w = mt.tensor(w0, requires_grad=needs[1])
    b = None if b0 is None else mt.tensor(b0, requires_grad=needs[2])
    out = submission.conv2d(x, w, b, stride, padding, dilation)
    (out.double() * mt.tensor(weights)).sum().backward()
    return {"grads": [None if t is None or t.grad is None else as_array(t.grad) for t in (x, w, b)]}

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
    Ho = _output_size(H, kh, sh, dh)
    Wo = _output_size(W, kw, sw, dw)
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
    Ho = _output_size(H, kh, sh, dh)
    Wo = _output_size(W, kw, sw, dw)
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
    """(base array sent to the child, view the child takes, the NCHW values): contiguous and channels-last."""
    N, C, H, W = shape
    nhwc = gen.standard_normal((N, H, W, C))
    nchw = np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
    return {"contiguous": (nchw, "contiguous", nchw), "channels-last": (nhwc, "channels-last", nchw)}


def _geometries(gen, count: int, max_side: int = 9) -> list:
    """``count`` drawn geometries, the smallest input first."""
    return smallest_first([_geometry(gen, max_side) for _ in range(count)], lambda geometry: int(np.prod(geometry[0])))


def _describe(shape, kernel, stride, dilation) -> str:
    return f"input {shape}, kernel {kernel}, stride {stride}, dilation {dilation}"


# ---------------------------------------------------------------- 6.1 im2col


@exercise("6.1")
def test_im2col_matches_the_definition(learner, rng):
    gen = _np(rng)

    def attempt(geometry):
        shape, kernel, stride, dilation = geometry
        for layout, (base, view, x) in _layouts(gen, shape).items():
            got = learner.probe("im2col_of", base, view, kernel, stride, dilation)
            what = f"im2col({layout} {_describe(shape, kernel, stride, dilation)})"
            _close(got, _naive_im2col(x, kernel, stride, dilation), what, rtol=0, atol=0)

    first_failure(_geometries(gen, 12), attempt, lambda geometry: _describe(*geometry))


@exercise("6.1")
def test_im2col_of_a_strided_view(learner, rng):
    """x may be any strided view (a slice with a step, a transposed image): use x's own strides."""
    gen = _np(rng)
    for _ in range(6):
        shape, kernel, stride, dilation = _geometry(gen, max_side=6)
        N, C, H, W = shape
        big = gen.standard_normal((N, C + 1, 2 * H, W + 3))
        x = big[:, 1:, ::2, 2 : 2 + W]  # a view with a step along H and an offset
        got = learner.probe("im2col_of", big, "sliced", kernel, stride, dilation)
        _close(got, _naive_im2col(np.ascontiguousarray(x), kernel, stride, dilation),
               f"im2col(a sliced view, {_describe(shape, kernel, stride, dilation)})", rtol=0, atol=0)
        base = gen.standard_normal((N, C, W, H))
        swapped = base.transpose(0, 1, 3, 2)  # (N, C, H, W), H and W strides swapped
        got = learner.probe("im2col_of", base, "swapped", kernel, stride, dilation)
        _close(got, _naive_im2col(np.ascontiguousarray(swapped), kernel, stride, dilation),
               f"im2col(a transposed view, {_describe(shape, kernel, stride, dilation)})", rtol=0, atol=0)


@exercise("6.1")
def test_conv2d_forward_with_your_im2col(learner, rng):
    """The library's conv2d forward (padding, one matrix product) runs on your im2col."""
    gen = _np(rng)

    def attempt(geometry):
        shape, kernel, stride, dilation = geometry
        padding = (int(gen.integers(0, 3)), int(gen.integers(0, 3)))
        O = int(gen.integers(1, 5))
        x = gen.standard_normal(shape)
        w = gen.standard_normal((O, shape[1], *kernel))
        b = gen.standard_normal(O)
        out = learner.probe("conv2d_forward", x, w, b, stride, padding, dilation)
        _close(out, _naive_conv(x, w, b, stride, padding, dilation),
               f"conv2d({_describe(shape, kernel, stride, dilation)}, padding {padding}, {O} filters)")

    first_failure(_geometries(gen, 8, max_side=7), attempt, lambda geometry: _describe(*geometry))


# ---------------------------------------------------------------- 6.2 col2im and conv backward


def _naive_col2im(dcols, padded_shape, kernel, stride, dilation) -> np.ndarray:
    """Each entry of dcols added back to the input element it was copied from: the adjoint, as loops."""
    N, C, H, W = padded_shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    Ho = _output_size(H, kh, sh, dh)
    Wo = _output_size(W, kw, sw, dw)
    rows = dcols.reshape(N, Ho, Wo, kh, kw, C)
    dx = np.zeros(padded_shape)
    for oh in range(Ho):
        for ow in range(Wo):
            for i in range(kh):
                for j in range(kw):
                    dx[:, :, oh * sh + i * dh, ow * sw + j * dw] += rows[:, oh, ow, i, j, :]
    return dx


@exercise("6.2")
def test_col2im_matches_the_loops(learner, rng):
    gen = _np(rng)
    for _ in range(12):
        shape, kernel, stride, dilation = _geometry(gen)
        rows = _reference_im2col(np.zeros(shape), kernel, stride, dilation).shape[0]
        dcols = gen.standard_normal((rows, kernel[0] * kernel[1] * shape[1]))
        got = learner.probe("col2im", dcols, shape, kernel, stride, dilation)
        _close(got, _naive_col2im(dcols, shape, kernel, stride, dilation),
               f"col2im(dcols of shape {dcols.shape}, {_describe(shape, kernel, stride, dilation)})")


@exercise("6.2")
def test_col2im_is_the_adjoint_of_im2col(learner, rng):
    """<im2col(x), D> == <x, col2im(D)> for every x and D: overlapping windows must *add* their gradients."""
    gen = _np(rng)
    for _ in range(20):
        shape, kernel, stride, dilation = _geometry(gen)
        stride = (int(gen.integers(1, 3)), int(gen.integers(1, 3)))  # mostly overlapping windows
        x = gen.standard_normal(shape)
        cols = _reference_im2col(x, kernel, stride, dilation)
        d = gen.standard_normal(cols.shape)
        back = np.asarray(learner.probe("col2im", d, shape, kernel, stride, dilation))
        assert back.shape == shape, f"col2im returned shape {back.shape}, expected the padded input's {shape}"
        lhs, rhs = float((cols * d).sum()), float((x * back).sum())
        assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9), (
            f"col2im is not the adjoint of im2col for {_describe(shape, kernel, stride, dilation)}: "
            f"<im2col(x), d> = {lhs:.10g} but <x, col2im(d)> = {rhs:.10g}"
        )


def _reference_im2col(x, kernel, stride, dilation):
    from minigrad.nn.functional.conv import im2col

    return im2col(x, kernel, stride, dilation)


def _conv_case(gen):
    N, C, O = int(gen.integers(1, 3)), int(gen.integers(1, 3)), int(gen.integers(1, 4))
    kernel = (int(gen.integers(1, 4)), int(gen.integers(1, 4)))
    stride = (int(gen.integers(1, 3)), int(gen.integers(1, 3)))
    padding = (int(gen.integers(0, 3)), int(gen.integers(0, 3)))
    dilation = (int(gen.integers(1, 3)), int(gen.integers(1, 3)))
    H = int(gen.integers(max(1, dilation[0] * (kernel[0] - 1) + 1 - 2 * padding[0]), 7))
    W = int(gen.integers(max(1, dilation[1] * (kernel[1] - 1) + 1 - 2 * padding[1]), 7))
    return (N, C, H, W), (O, C, *kernel), stride, padding, dilation


@exercise("6.2")
def test_conv2d_backward_gradcheck(learner, rng):
    """Finite differences of the whole conv2d (x, weight and bias) on random geometries, with your backward."""
    from minigrad.nn.functional.conv import conv2d

    gen = _np(rng)
    for _ in range(6):
        xs, ws, stride, padding, dilation = _conv_case(gen)
        bias = bool(gen.integers(0, 2))
        x, w, b = gen.standard_normal(xs), gen.standard_normal(ws), gen.standard_normal(ws[0])
        arrays = [x, w, b] if bias else [x, w]

        def fn(x, w, b=None):
            return conv2d(x, w, b, stride, padding, dilation)

        from minigrad.grading.checks._tensors import reference_outputs

        weights = [np.random.default_rng(int(gen.integers(2**31))).standard_normal(reference_outputs(fn, arrays)[0].shape)]
        answer = learner.probe("conv2d_gradients", x, w, b if bias else None, (stride, padding, dilation),
                               [True, True, bias], weights[0], False)
        gradcheck_here(fn, arrays, [True] * len(arrays), answer, weights,
                       f"conv2d(x {xs}, weight {ws}, stride {stride}, padding {padding}, dilation {dilation}, bias={bias})")


@exercise("6.2")
def test_conv2d_backward_matches_the_library(learner, rng):
    """Same gradients as the reference, also when only some inputs need one and for a channels-last input."""
    import minigrad.tensor as mt
    from minigrad.nn.functional.conv import conv2d

    gen = _np(rng)
    for trial in range(6):
        xs, ws, stride, padding, dilation = _conv_case(gen)
        x0, w0, b0 = gen.standard_normal(xs), gen.standard_normal(ws), gen.standard_normal(ws[0])
        needs = [(True, True, True), (True, False, False), (False, True, True), (False, True, False)][trial % 4]
        x = mt.tensor(x0, requires_grad=needs[0])
        w, b = mt.tensor(w0, requires_grad=needs[1]), mt.tensor(b0, requires_grad=needs[2])
        out = conv2d(x, w, b, stride, padding, dilation)
        g = gen.standard_normal(out.shape)
        (out * mt.tensor(g)).sum().backward()
        library = [t.grad for t in (x, w, b)]
        mine = learner.probe("conv2d_gradients", x0, w0, b0, (stride, padding, dilation), list(needs), g, trial >= 4)["grads"]
        what = f"conv2d(x {xs}, weight {ws}, stride {stride}, padding {padding}, dilation {dilation})"
        for label, got, ref, need in zip(("x", "weight", "bias"), mine, library, needs):
            if not need:
                continue
            assert got is not None, f"{what}: no gradient for {label}"
            _close(got, ref.numpy(), f"{what}: gradient of {label}", rtol=1e-9, atol=1e-9)
