"""Graded checks for chapter 06, exercise 6.4: the training-mode BatchNorm backward in ``minigrad/nn/functional/normalization.py``.

Fresh random shapes ((N, C), (N, C, L) and (N, C, H, W)), scales and shifts
each run, float64. The learner's ``BatchNormFunction.backward`` is compared
with central finite differences (``minigrad.tensor.gradcheck``), with the
gradient of the same computation built from elementary tensor ops (so the
chapter-04 autograd derives it), and with two properties of any correct
answer: per channel, the input gradient sums to zero and is orthogonal to
``xhat`` (shifting or scaling a channel's inputs does not change its output).
The learner's code runs in the sandboxed child; finite differences and the
elementary-ops gradient are computed here with the library's reference.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.checks._tensors import as_array, gradcheck_here
from minigrad.grading.probing import exercise, probe


@probe
def batch_norm_gradients(submission, state, x0, w0, b0, stats, eps, g):
    """Gradients of ``sum(g * batch_norm(x, ...))`` (training mode) for x, weight and bias (None: not affine)."""
    import minigrad.tensor as mt

    x = mt.tensor(x0, requires_grad=True)
    w = None if w0 is None else mt.tensor(w0, requires_grad=True)
    b = None if b0 is None else mt.tensor(b0, requires_grad=True)
    C = x0.shape[1]
    rm, rv = (mt.zeros(C, dtype=mt.float64), mt.ones(C, dtype=mt.float64)) if stats else (None, None)
    options = {} if eps is None else {"eps": eps}
    out = submission.batch_norm(x, rm, rv, w, b, training=True, **options)
    (out.double() * mt.tensor(g)).sum().backward()
    return {"grads": [None if t is None or t.grad is None else as_array(t.grad) for t in (x, w, b)]}


def _reference(x, w=None, b=None):
    from minigrad.nn.functional.normalization import batch_norm

    return batch_norm(x, None, None, w, b, training=True)


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _shape(gen) -> tuple[int, ...]:
    """(N, C), (N, C, L) or (N, C, H, W), with at least 3 values per channel (with 2, every correct dx is 0)."""
    C = int(gen.integers(1, 4))
    kind = int(gen.integers(0, 3))
    if kind == 0:
        return (int(gen.integers(3, 7)), C)
    if kind == 1:
        return (int(gen.integers(1, 4)), C, int(gen.integers(3, 5)))
    return (int(gen.integers(1, 4)), C, int(gen.integers(2, 4)), int(gen.integers(2, 4)))


def _shapes(gen, count: int) -> list[tuple[tuple[int, ...], int]]:
    """``count`` drawn ``(shape, trial)`` cases, the smallest input first (``trial``: the draw's index)."""
    return smallest_first([(_shape(gen), trial) for trial in range(count)], lambda case: int(np.prod(case[0])))


def _inputs(gen, shape):
    C = shape[1]
    # each channel its own offset and spread, so the statistics matter
    scale = np.exp(gen.uniform(-1, 1, size=C)).reshape((1, C) + (1,) * (len(shape) - 2))
    shift = gen.uniform(-3, 3, size=C).reshape(scale.shape)
    x = gen.standard_normal(shape) * scale + shift
    return x, gen.uniform(0.5, 2.0, size=C), gen.standard_normal(C)


def _by_hand(x, weight, bias, eps):
    """batch_norm written with elementary tensor ops: autograd differentiates it node by node."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.mean(dim=axes, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(dim=axes, keepdim=True)
    out = centred / (var + eps) ** 0.5
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


@exercise("6.4")
def test_batch_norm_backward_gradcheck(learner, rng):
    gen = _np(rng)

    def attempt(case):
        shape, trial = case
        x0, w0, b0 = _inputs(gen, shape)
        affine = trial % 4 != 3
        stats = trial % 2 == 0  # with running statistics to update, or without
        arrays = [x0, w0, b0] if affine else [x0]
        weights = [np.random.default_rng(int(gen.integers(2**31))).standard_normal(shape)]
        answer = learner.probe("batch_norm_gradients", x0, w0 if affine else None, b0 if affine else None, stats, None, weights[0])
        gradcheck_here(_reference, arrays, [True] * len(arrays), answer, weights,
                       f"batch_norm(input {shape}, training=True, affine={affine})")

    first_failure(_shapes(gen, 8), attempt, lambda case: f"an input of shape {case[0]}, affine={case[1] % 4 != 3}")


@exercise("6.4")
def test_batch_norm_backward_matches_autograd(learner, rng):
    gen = _np(rng)

    def attempt(case):
        shape, trial = case
        x0, w0, b0 = _inputs(gen, shape)
        eps = float(10.0 ** gen.uniform(-5, -2))
        affine = trial % 3 != 2
        import minigrad.tensor as mt

        g = gen.standard_normal(shape)
        x = mt.tensor(x0, requires_grad=True)
        w = mt.tensor(w0, requires_grad=True) if affine else None
        b = mt.tensor(b0, requires_grad=True) if affine else None
        (_by_hand(x, w, b, eps) * mt.tensor(g)).sum().backward()
        expected = x.grad.numpy()
        mine = learner.probe("batch_norm_gradients", x0, w0 if affine else None, b0 if affine else None, False, eps, g)["grads"][0]
        what = f"batch_norm(input {shape}, training=True, affine={affine}, eps={eps:.2g})"
        assert mine is not None, f"{what}: the input got no gradient"
        assert mine.shape == expected.shape, f"{what}: gradient of shape {mine.shape}, expected {expected.shape}"
        if not np.allclose(mine, expected, rtol=1e-7, atol=1e-9):
            worst = np.unravel_index(np.argmax(np.abs(mine - expected)), mine.shape)
            raise AssertionError(
                f"{what}: wrong input gradient; worst at {tuple(int(i) for i in worst)}: got {mine[worst]:.8g}, "
                f"expected {expected[worst]:.8g}"
            )

    first_failure(_shapes(gen, 8), attempt, lambda case: f"an input of shape {case[0]}, affine={case[1] % 3 != 2}")


@exercise("6.4")
def test_batch_norm_backward_properties(learner, rng):
    """Per channel, dx sums to 0 (the mean is subtracted) and is orthogonal to xhat (the variance is divided out).

    Orthogonality is exact only at eps = 0: with eps > 0, sum(dx * xhat) is
    inv_std * sum(dxhat * xhat) * eps / (var + eps) exactly, which the check
    expects (for a channel whose three values lie close together it reaches 1e-7).
    """
    gen = _np(rng)
    eps = 1e-12
    for _ in range(6):
        shape = _shape(gen)
        x0, w0, b0 = _inputs(gen, shape)
        g = gen.standard_normal(shape)
        dx = learner.probe("batch_norm_gradients", x0, w0, b0, False, eps, g)["grads"][0]
        assert dx is not None, "batch_norm: the input got no gradient"
        axes = (0,) + tuple(range(2, len(shape)))
        channel = (1, -1) + (1,) * (len(shape) - 2)
        var = x0.var(axis=axes)
        inv_std = 1.0 / np.sqrt(var + eps)
        xhat = (x0 - x0.mean(axis=axes, keepdims=True)) * inv_std.reshape(channel)
        left_by_eps = inv_std * (g * w0.reshape(channel) * xhat).sum(axis=axes) * eps / (var + eps)
        scale = np.abs(dx).sum(axis=axes) + 1.0
        sums, dots = dx.sum(axis=axes), (dx * xhat).sum(axis=axes)
        assert np.all(np.abs(sums) <= 1e-9 * scale), (
            f"batch_norm(input {shape}): per channel the input gradient must sum to 0, got {np.round(sums, 10)}"
        )
        assert np.all(np.abs(dots - left_by_eps) <= 1e-8 * scale), (
            f"batch_norm(input {shape}): per channel the input gradient must be orthogonal to xhat, "
            f"got dot products {np.round(dots, 10)}"
        )
