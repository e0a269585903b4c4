"""Graded checks for chapter 05, exercise 5.5: ``LinearFunction``'s forward and backward (``exercises/05_linear.py``).

Fresh random sizes and values each run, in float64. In the sandboxed child
the learner's file *is* ``minigrad.nn.functional.linear``, so ``nn.Linear``
runs the learner's node; it gets weights chosen here. Its outputs are
compared with the affine map written in NumPy here, and the gradients it
sends to the input, the weight and the bias (for inputs with one, two and
three leading dimensions) with finite differences of the reference computed
here (the tolerances of ``minigrad.tensor.gradcheck``).
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.checks._tensors import as_array, gradcheck_here
from minigrad.grading.probing import exercise, probe


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _layer(submission, seed, W, b):
    import minigrad.tensor as mt

    n_out, n_in = W.shape
    from minigrad.nn import Linear

    layer = Linear(n_in, n_out, bias=b is not None, dtype=mt.float64, generator=seed)
    with mt.no_grad():
        layer.weight.copy_(mt.tensor(W))
        if b is not None:
            layer.bias.copy_(mt.tensor(b))
    return layer


@probe
def forward(submission, state, seed, W, b, xs):
    """The learner's Linear with weight ``W`` and bias ``b`` (None: bias=False) on each input of ``xs``."""
    import minigrad.tensor as mt

    layer = _layer(submission, seed, W, b)
    outs = [layer(mt.tensor(x)) for x in xs]
    return {
        "is_tensor": all(isinstance(o, mt.Tensor) for o in outs),
        "bias_is_none": layer.bias is None,
        "outputs": [as_array(o) for o in outs],
    }


@probe
def gradients(submission, state, seed, W, b, x, weights):
    """Gradients of ``sum(weights * layer(x))`` for x, the weight and the bias (as the layer holds them)."""
    import minigrad.tensor as mt

    layer = _layer(submission, seed, W, b)
    xt = mt.tensor(x, requires_grad=True)
    (layer(xt).double() * mt.tensor(weights)).sum().backward()
    grads = [xt.grad, layer.weight.grad] + ([layer.bias.grad] if b is not None else [])
    return {"grads": [None if g is None else as_array(g) for g in grads]}


def _weights(gen, n_in, n_out, bias=True):
    """Random values of a normal size (the default init is fine too, but wider is a stronger test)."""
    return gen.standard_normal((n_out, n_in)), (gen.standard_normal(n_out) if bias else None)


def _close(actual, expected, what: str) -> None:
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: output shape {actual.shape}, expected {expected.shape}"
    if not np.allclose(actual, expected, rtol=1e-10, atol=1e-10):
        worst = np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape) if actual.ndim else ()
        raise AssertionError(
            f"{what}: wrong values; worst at index {worst}: got {actual[worst]:.8g}, expected {expected[worst]:.8g} "
            f"(the weight is stored (out_features, in_features))"
        )


def _reference(x, w, b=None):
    out = x @ w.T
    return out + b if b is not None else out


@exercise("5.5")
def test_forward_matches_numpy(learner, rng):
    gen = _np(rng)

    def attempt(sizes):
        n_in, n_out, batch = sizes
        W, b = _weights(gen, n_in, n_out)
        x = gen.standard_normal((batch, n_in))
        answer = learner.probe("forward", int(gen.integers(2**31)), W, b, [x])
        assert answer["is_tensor"] is True, "Linear.forward must return a Tensor"
        _close(answer["outputs"][0], x @ W.T + b, f"Linear({n_in}, {n_out}) on a ({batch}, {n_in}) batch")

    drawn = smallest_first([tuple(int(v) for v in gen.integers(1, 9, size=3)) for _ in range(10)],
                           lambda sizes: sizes[0] * sizes[1] + sizes[2] * sizes[0])
    first_failure(drawn, attempt, lambda sizes: f"Linear({sizes[0]}, {sizes[1]}) on a ({sizes[2]}, {sizes[0]}) batch")


@exercise("5.5")
def test_forward_without_bias_and_with_any_leading_dimensions(learner, rng):
    gen = _np(rng)
    n_in, n_out = int(gen.integers(2, 7)), int(gen.integers(2, 7))
    W, _ = _weights(gen, n_in, n_out, bias=False)
    x = gen.standard_normal((int(gen.integers(1, 6)), n_in))
    answer = learner.probe("forward", int(gen.integers(2**31)), W, None, [x])
    assert answer["bias_is_none"] is True, "Linear(..., bias=False) has bias None"
    _close(answer["outputs"][0], x @ W.T, f"Linear({n_in}, {n_out}, bias=False)")

    W, b = _weights(gen, n_in, n_out)
    xs = [gen.standard_normal(shape) for shape in [(n_in,), (2, 3, n_in), (int(gen.integers(1, 4)), 1, 2, n_in)]]
    answer = learner.probe("forward", int(gen.integers(2**31)), W, b, xs)
    for x, out in zip(xs, answer["outputs"]):
        _close(out, x @ W.T + b, f"Linear({n_in}, {n_out}) on shape {x.shape}")


def _gradcheck(learner, gen, x, W, b, what):
    """The learner's gradients for x, W (and b) against finite differences of x @ W.T + b, computed here."""
    arrays = [x, W] + ([b] if b is not None else [])
    weights = [gen.standard_normal((*x.shape[:-1], W.shape[0]))]
    answer = learner.probe("gradients", int(gen.integers(2**31)), W, b, x, weights[0])
    gradcheck_here(_reference, arrays, [True] * len(arrays), answer, weights, what)


@exercise("5.5")
def test_gradients_match_finite_differences(learner, rng):
    gen = _np(rng)
    for shape_prefix in [(int(gen.integers(1, 5)),), (2, int(gen.integers(1, 4))), (int(gen.integers(1, 3)), 2, 3), ()]:
        n_in, n_out = int(gen.integers(1, 6)), int(gen.integers(1, 6))
        W, b = _weights(gen, n_in, n_out)
        x = gen.standard_normal(shape_prefix + (n_in,))
        _gradcheck(learner, gen, x, W, b, f"Linear({n_in}, {n_out}) on shape {x.shape}")
    W, _ = _weights(gen, 3, 4, bias=False)
    _gradcheck(learner, gen, gen.standard_normal((5, 3)), W, None, "Linear(3, 4, bias=False)")


@probe
def parameter_grads(submission, state, seed, W, b, x, upstream):
    import minigrad.tensor as mt

    layer = _layer(submission, seed, W, b)
    (layer(mt.tensor(x)) * mt.tensor(upstream)).sum().backward()
    grads = (layer.weight.grad, layer.bias.grad)
    return [None if g is None else as_array(g) for g in grads]


@exercise("5.5")
def test_parameters_receive_the_gradient_of_a_loss(learner, rng):
    """Training needs .grad on the layer's own Parameters (not on copies), summed over the batch."""
    gen = _np(rng)
    n_in, n_out, batch = int(gen.integers(2, 6)), int(gen.integers(2, 6)), int(gen.integers(2, 8))
    W, b = _weights(gen, n_in, n_out)
    x = gen.standard_normal((batch, n_in))
    upstream = gen.standard_normal((batch, n_out))
    weight_grad, bias_grad = learner.probe("parameter_grads", int(gen.integers(2**31)), W, b, x, upstream)
    assert weight_grad is not None and bias_grad is not None, (
        "after backward(), layer.weight.grad and layer.bias.grad must be set: backward returns one gradient per input"
    )
    _close(weight_grad, upstream.T @ x, f"weight.grad of Linear({n_in}, {n_out}) on a ({batch}, {n_in}) batch")
    _close(bias_grad, upstream.sum(axis=0), f"bias.grad of Linear({n_in}, {n_out}) on a ({batch}, {n_in}) batch")
