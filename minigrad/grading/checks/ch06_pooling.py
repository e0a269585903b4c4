"""Graded checks for chapter 06, exercise 6.3: max-pool backward in ``minigrad/nn/functional/pooling.py``.

Fresh random shapes, kernels, strides (overlapping windows included) and
padding each run, float64. The learner's ``MaxPool2dFunction.backward`` is
compared with central finite differences (``minigrad.tensor.gradcheck``) on
inputs whose values are far apart (so a finite-difference step never changes
which element wins), and with a plain loop that sends each output's gradient
to the first maximum of its window, also on inputs full of ties. The learner's
code runs in the sandboxed child; the loops, the library's outputs and the
finite differences are computed here.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._tensors import as_array, gradcheck_here, reference_outputs
from minigrad.grading.probing import exercise, probe


@probe
def input_gradient(submission, state, x0, g, kernel, stride, padding, channels_last=False):
    """The gradient of ``sum(g * max_pool2d(x))`` for the input, through the learner's backward."""
    import minigrad.tensor as mt

    if channels_last:
        x = mt.from_numpy(np.ascontiguousarray(x0.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2).detach()
    else:
        x = mt.tensor(x0)
    x.requires_grad_(True)
    out = submission.max_pool2d(x, kernel, stride, padding)
    (out * mt.tensor(g)).sum().backward()
    return {"grads": [None if x.grad is None else as_array(x.grad)]}


def _pool(kernel, stride, padding):
    def fn(x):
        from minigrad.nn.functional.pooling import max_pool2d

        return max_pool2d(x, kernel, stride, padding)

    return fn


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _case(gen):
    """Random (N, C, H, W), kernel, stride and padding of a valid max_pool2d call."""
    kernel = (int(gen.integers(1, 4)), int(gen.integers(1, 4)))
    if kernel == (1, 1):
        kernel = (2, int(gen.integers(1, 4)))
    stride = (int(gen.integers(1, kernel[0] + 1)), int(gen.integers(1, kernel[1] + 1)))
    padding = (int(gen.integers(0, kernel[0] // 2 + 1)), int(gen.integers(0, kernel[1] // 2 + 1)))
    N, C = int(gen.integers(1, 3)), int(gen.integers(1, 4))
    H, W = int(gen.integers(kernel[0], 8)), int(gen.integers(kernel[1], 8))
    return (N, C, H, W), kernel, stride, padding


def _naive_backward(x: np.ndarray, grad: np.ndarray, kernel, stride, padding) -> np.ndarray:
    """Each output's gradient to the first (row-major) maximum of its window; padding never wins."""
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    N, C, H, W = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
    dx = np.zeros_like(padded)
    Ho, Wo = grad.shape[2:]
    for n in range(N):
        for c in range(C):
            for oh in range(Ho):
                for ow in range(Wo):
                    window = padded[n, c, oh * sh : oh * sh + kh, ow * sw : ow * sw + kw]
                    i, j = np.unravel_index(np.argmax(window), window.shape)  # argmax: the first maximum
                    dx[n, c, oh * sh + i, ow * sw + j] += grad[n, c, oh, ow]
    return dx[:, :, ph : ph + H, pw : pw + W]


def _describe(shape, kernel, stride, padding) -> str:
    return f"max_pool2d(input {shape}, kernel_size={kernel}, stride={stride}, padding={padding})"


def _close(actual, expected, what: str) -> None:
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: gradient of shape {actual.shape}, expected {expected.shape}"
    if not np.allclose(actual, expected, rtol=1e-12, atol=1e-12):
        worst = np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape)
        raise AssertionError(
            f"{what}: wrong gradient; worst at index {tuple(int(i) for i in worst)}: got {actual[worst]:.8g}, "
            f"expected {expected[worst]:.8g}"
        )


def _grad_of_input(learner, x0: np.ndarray, g: np.ndarray | None, gen, kernel, stride, padding, channels_last=False):
    g = gen.standard_normal(reference_outputs(_pool(kernel, stride, padding), [x0])[0].shape) if g is None else g
    [grad] = learner.probe("input_gradient", x0, g, kernel, stride, padding, channels_last)["grads"]
    assert grad is not None, "max_pool2d: the input got no gradient"
    return grad, g


@exercise("6.3")
def test_max_pool_backward_gradcheck(learner, rng):
    gen = _np(rng)
    for _ in range(8):
        shape, kernel, stride, padding = _case(gen)
        # distinct values 0.1 apart: a 1e-6 step never changes which element wins a window
        x = (gen.permutation(int(np.prod(shape))).reshape(shape) * 0.1).astype(np.float64)
        fn = _pool(kernel, stride, padding)
        weights = [np.random.default_rng(int(gen.integers(2**31))).standard_normal(reference_outputs(fn, [x])[0].shape)]
        answer = learner.probe("input_gradient", x, weights[0], kernel, stride, padding)
        gradcheck_here(fn, [x], [True], answer, weights, _describe(shape, kernel, stride, padding))


@exercise("6.3")
def test_max_pool_backward_routes_to_the_winner(learner, rng):
    """Against the loop, on random values and on values full of ties (the first maximum wins, as in PyTorch)."""
    gen = _np(rng)
    for trial in range(10):
        shape, kernel, stride, padding = _case(gen)
        x0 = gen.integers(-2, 3, size=shape).astype(np.float64) if trial % 2 else gen.standard_normal(shape)
        got, g = _grad_of_input(learner, x0, None, gen, kernel, stride, padding, channels_last=trial >= 7)
        what = _describe(shape, kernel, stride, padding) + (" with ties" if trial % 2 else "")
        _close(got, _naive_backward(x0, g, kernel, stride, padding), what)
        assert np.isclose(got.sum(), g.sum(), rtol=1e-10, atol=1e-10), (
            f"{what}: every output sends its whole gradient to exactly one input, so the input gradient must "
            f"sum to {g.sum():.8g}; it sums to {got.sum():.8g}"
        )


@exercise("6.3")
def test_max_pool_backward_overlapping_windows_add_up(learner, rng):
    """Stride 1, kernel 3: an element that wins several windows collects all their gradients."""
    gen = _np(rng)
    size = int(gen.integers(4, 8))
    x0 = gen.standard_normal((1, 1, size, size)) * 0.01
    peak = (int(gen.integers(1, size - 1)), int(gen.integers(1, size - 1)))
    x0[0, 0, peak[0], peak[1]] = 10.0  # wins every window that contains it
    got, g = _grad_of_input(learner, x0, None, gen, 3, 1, 0)
    windows = [(oh, ow) for oh in range(size - 2) for ow in range(size - 2)
               if oh <= peak[0] < oh + 3 and ow <= peak[1] < ow + 3]
    expected = sum(g[0, 0, oh, ow] for oh, ow in windows)
    assert np.isclose(got[0, 0, peak[0], peak[1]], expected, rtol=1e-12, atol=1e-12), (
        f"the maximum at {peak} wins {len(windows)} overlapping 3x3 windows (stride 1): its gradient must be the sum "
        f"of their gradients, {expected:.8g}; got {got[0, 0, peak[0], peak[1]]:.8g}"
    )
