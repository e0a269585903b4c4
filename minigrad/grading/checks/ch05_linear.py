"""Graded checks for chapter 05, exercise 5.1: ``Linear.forward`` (``exercises/05_linear.py``).

Fresh random sizes and values each run, in float64: the output is compared
with ``x @ W.T + b`` written in NumPy, and the gradients that flow back
through the learner's forward (to the input, the weight and the bias) with
finite differences (``minigrad.tensor.gradcheck``).
"""

from __future__ import annotations

import numpy as np
import pytest

import minigrad.tensor as mt


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _layer(submission, gen, n_in: int, n_out: int, bias: bool = True):
    layer = submission.Linear(n_in, n_out, bias=bias, dtype=mt.float64, generator=int(gen.integers(2**31)))
    with mt.no_grad():  # random values of a normal size (the default init is fine too, but wider is a stronger test)
        layer.weight.copy_(mt.tensor(gen.standard_normal((n_out, n_in))))
        if bias:
            layer.bias.copy_(mt.tensor(gen.standard_normal(n_out)))
    return layer


def _close(actual, expected, what: str) -> None:
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: output shape {actual.shape}, expected {expected.shape}"
    if not np.allclose(actual, expected, rtol=1e-10, atol=1e-10):
        worst = np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape) if actual.ndim else ()
        raise AssertionError(
            f"{what}: wrong values; worst at {worst}: got {actual[worst]:.8g}, expected {expected[worst]:.8g} "
            f"(y = x @ W.T + b with W of shape (out_features, in_features))"
        )


@pytest.mark.exercise("5.1")
def test_forward_matches_numpy(submission, rng):
    gen = _np(rng)
    for _ in range(10):
        n_in, n_out, batch = (int(v) for v in gen.integers(1, 9, size=3))
        layer = _layer(submission, gen, n_in, n_out)
        x = gen.standard_normal((batch, n_in))
        out = layer(mt.tensor(x))
        assert isinstance(out, mt.Tensor), f"Linear.forward must return a Tensor, got {type(out).__name__}"
        W, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
        _close(out.detach().numpy(), x @ W.T + b, f"Linear({n_in}, {n_out}) on a ({batch}, {n_in}) batch")


@pytest.mark.exercise("5.1")
def test_forward_without_bias_and_with_any_leading_dimensions(submission, rng):
    gen = _np(rng)
    n_in, n_out = int(gen.integers(2, 7)), int(gen.integers(2, 7))
    plain = _layer(submission, gen, n_in, n_out, bias=False)
    assert plain.bias is None
    x = gen.standard_normal((int(gen.integers(1, 6)), n_in))
    _close(plain(mt.tensor(x)).detach().numpy(), x @ plain.weight.detach().numpy().T, f"Linear({n_in}, {n_out}, bias=False)")

    layer = _layer(submission, gen, n_in, n_out)
    W, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    for shape in [(n_in,), (2, 3, n_in), (int(gen.integers(1, 4)), 1, 2, n_in)]:
        x = gen.standard_normal(shape)
        _close(layer(mt.tensor(x)).detach().numpy(), x @ W.T + b, f"Linear({n_in}, {n_out}) on shape {shape}")


@pytest.mark.exercise("5.1")
def test_gradients_match_finite_differences(submission, rng):
    gen = _np(rng)
    for shape_prefix in [(int(gen.integers(1, 5)),), (2, int(gen.integers(1, 4)))]:
        n_in, n_out = int(gen.integers(1, 6)), int(gen.integers(1, 6))
        layer = _layer(submission, gen, n_in, n_out)
        x = mt.tensor(gen.standard_normal(shape_prefix + (n_in,)), requires_grad=True)
        mt.gradcheck(lambda x, w, b: layer(x), [x, layer.weight, layer.bias])
    layer = _layer(submission, gen, 3, 4, bias=False)
    x = mt.tensor(gen.standard_normal((5, 3)), requires_grad=True)
    mt.gradcheck(lambda x, w: layer(x), [x, layer.weight])


@pytest.mark.exercise("5.1")
def test_parameters_receive_the_gradient_of_a_loss(submission, rng):
    """Training needs .grad on the layer's own Parameters (not on copies), summed over the batch."""
    gen = _np(rng)
    n_in, n_out, batch = int(gen.integers(2, 6)), int(gen.integers(2, 6)), int(gen.integers(2, 8))
    layer = _layer(submission, gen, n_in, n_out)
    x = gen.standard_normal((batch, n_in))
    upstream = gen.standard_normal((batch, n_out))
    (layer(mt.tensor(x)) * mt.tensor(upstream)).sum().backward()
    assert layer.weight.grad is not None and layer.bias.grad is not None, (
        "after backward(), layer.weight.grad and layer.bias.grad must be set: use self.weight and self.bias in forward"
    )
    _close(layer.weight.grad.numpy(), upstream.T @ x, "weight.grad (= upstream.T @ x)")
    _close(layer.bias.grad.numpy(), upstream.sum(axis=0), "bias.grad (= upstream summed over the batch)")
