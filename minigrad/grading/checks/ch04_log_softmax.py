"""Graded checks for chapter 04, exercise 4.4: the ``LogSoftmax`` Function of ``minigrad.tensor.ops.log_softmax``.

In the sandboxed child the learner's file *is* ``minigrad.tensor.ops.log_softmax``,
so ``t.log_softmax(dim)`` (and the cross-entropy built from it) runs the
learner's ``forward`` and ``backward``. Every check draws fresh random shapes,
dims and scores; the child sends back outputs and gradients, and they are
compared here with log-softmax written in NumPy and with central finite
differences (float64) of the library's reference.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.checks._tensors import analytic, gradcheck_here, reference_outputs
from minigrad.grading.probing import exercise, probe


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _log_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    """The reference, in NumPy (float64)."""
    shifted = x - x.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def _pick(t, labels):
    import minigrad.tensor as mt

    return t[mt.arange(t.shape[0]), labels]


FUNCTIONS = {
    "rows": lambda t: t.log_softmax(dim=1),
    "columns": lambda t: t.log_softmax(dim=0),
    "transposed": lambda t: t.T.log_softmax(dim=1),  # a non-contiguous input
    "middle_dim": lambda t: t.log_softmax(dim=1),
    "cross_entropy": lambda t, labels: -_pick(t.log_softmax(dim=-1), labels).mean(),
    "two_layers": lambda x, w: (x @ w).tanh().log_softmax(dim=-1) * 2.0,
}


@probe
def outputs(submission, state, arrays, dims, dtype):
    """``log_softmax`` of each array along its dim (in ``dtype``), as float64 arrays; the output dtypes."""
    import minigrad.tensor as mt

    results = []
    for x, dim in zip(arrays, dims):
        y = mt.tensor(x, dtype=getattr(mt, dtype)).log_softmax(dim=dim)
        results.append({"values": np.array(y.detach().numpy(), dtype=np.float64), "dtype": str(y.dtype)})
    return results


@probe
def gradients(submission, state, name, arrays, requires, weights):
    """Outputs of ``FUNCTIONS[name]`` and the gradients of ``sum(w * out)`` (through the learner's Function)."""
    return analytic(FUNCTIONS[name], arrays, requires, weights)


def _values_close(got: dict, x: np.ndarray, dim: int, what: str, rtol: float, atol: float) -> None:
    values = got["values"]
    assert values.shape == x.shape, f"{what}: output of shape {values.shape}, expected {x.shape} (log_softmax keeps the shape)"
    assert np.isfinite(values).all(), (
        f"{what}: the output holds inf or nan; exp of a large score overflows unless the scores are shifted first"
    )
    expected = _log_softmax(x, dim)
    if not np.allclose(values, expected, rtol=rtol, atol=atol):
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(values - expected)), values.shape))
        raise AssertionError(f"{what}: wrong value at {worst}: got {values[worst]:.8g}, expected {expected[worst]:.8g}")


def _random_case(gen):
    ndim = int(gen.integers(1, 4))
    shape = tuple(int(s) for s in gen.integers(1, 6, size=ndim))
    return shape, int(gen.integers(0, ndim))


@exercise("4.4")
def test_forward_values_at_random_points(learner, rng):
    gen = _np(rng)
    cases = smallest_first([_random_case(gen) for _ in range(12)], lambda case: (int(np.prod(case[0])), len(case[0])))
    arrays = [3.0 * gen.standard_normal(shape) for shape, _ in cases]
    dims = [dim for _, dim in cases]

    def attempt(answer):
        got, x, dim = answer
        _values_close(got, x, dim, f"log_softmax of shape {x.shape} along dim {dim}", 1e-9, 1e-12)
        assert got["dtype"] == "float64", f"log_softmax of a float64 tensor gave {got['dtype']}: keep the input's dtype"

    answers = list(zip(learner.probe("outputs", arrays, dims, "float64"), arrays, dims))
    first_failure(answers, attempt, lambda answer: f"scores of shape {answer[1].shape}, dim={answer[2]}")


@exercise("4.4")
def test_forward_keeps_float32(learner, rng):
    gen = _np(rng)
    x = gen.standard_normal((4, 6)).astype(np.float32)
    [got] = learner.probe("outputs", [x], [1], "float32")
    assert got["dtype"] == "float32", f"log_softmax of a float32 tensor gave {got['dtype']}: keep the input's dtype"
    _values_close(got, x.astype(np.float64), 1, "log_softmax in float32", 1e-5, 1e-5)


@exercise("4.4")
def test_forward_large_and_very_negative_scores(learner, rng):
    gen = _np(rng)
    big = 50.0 * gen.standard_normal((3, 5)) + 1000.0  # exp overflows float64 above ~709
    small = 50.0 * gen.standard_normal((4, 3)) - 1000.0  # every exp underflows to 0 unless shifted
    answers = learner.probe("outputs", [big, small], [1, 0], "float64")
    _values_close(answers[0], big, 1, "log_softmax of scores near +1000", 1e-9, 1e-9)
    _values_close(answers[1], small, 0, "log_softmax of scores near -1000", 1e-9, 1e-9)


def _gradcheck(learner, rng, name, arrays, requires=None, what=None):
    requires = [isinstance(a, np.ndarray) and a.dtype == np.float64 for a in arrays] if requires is None else requires
    gen = np.random.default_rng(rng.randrange(2**31))
    weights = [gen.standard_normal(o.shape) for o in reference_outputs(FUNCTIONS[name], arrays)]
    answer = learner.probe("gradients", name, list(arrays), list(requires), weights)
    what = what or name
    for i, (got, r) in enumerate(zip(answer["grads"], requires)):
        assert not r or got is not None, (
            f"{what}: no gradient reached input {i}: backward returns one gradient per argument of forward, "
            f"in the same order (None for dim)"
        )
    gradcheck_here(FUNCTIONS[name], arrays, requires, answer, weights, what)


@exercise("4.4")
def test_backward_matches_finite_differences(learner, rng):
    gen = _np(rng)
    n, c = int(gen.integers(2, 6)), int(gen.integers(2, 6))
    _gradcheck(learner, rng, "rows", [2.0 * gen.standard_normal((n, c))], what=f"log_softmax(dim=1) of ({n}, {c})")
    _gradcheck(learner, rng, "columns", [2.0 * gen.standard_normal((n, c))], what=f"log_softmax(dim=0) of ({n}, {c})")
    _gradcheck(learner, rng, "middle_dim", [gen.standard_normal((2, c, 3))], what=f"log_softmax(dim=1) of (2, {c}, 3)")
    _gradcheck(learner, rng, "transposed", [gen.standard_normal((c, n))], what="log_softmax of a transposed (non-contiguous) tensor")


@exercise("4.4")
def test_backward_with_large_scores(learner, rng):
    gen = _np(rng)
    x = 30.0 * gen.standard_normal((3, 4)) + 1000.0
    weights = [gen.standard_normal((3, 4))]
    answer = learner.probe("gradients", "rows", [x], [True], weights)
    got = answer["grads"][0]
    assert got is not None, "log_softmax near +1000: no gradient reached the input"
    assert np.isfinite(got).all(), (
        "log_softmax near +1000: the gradient holds inf or nan; compute it from what forward saved, "
        "which never overflows"
    )
    shifted = x - x.max(axis=1, keepdims=True)
    probabilities = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    w = weights[0]
    expected = w - probabilities * w.sum(axis=1, keepdims=True)
    if not np.allclose(got, expected, rtol=1e-7, atol=1e-9):
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(got - expected)), got.shape))
        raise AssertionError(f"log_softmax near +1000: wrong gradient at {worst}: got {got[worst]:.8g}, expected {expected[worst]:.8g}")
    assert np.allclose(got.sum(axis=1), 0.0, atol=1e-9), (
        "log_softmax: the gradient of each row must sum to 0 (adding a constant to all scores changes nothing)"
    )


@exercise("4.4")
def test_training_losses_through_your_function(learner, rng):
    """Cross-entropy and a two-layer net: the gradients of what chapter 04 trains, through your LogSoftmax."""
    gen = _np(rng)
    n, c, k = int(gen.integers(3, 6)), int(gen.integers(2, 5)), int(gen.integers(2, 4))
    logits, labels = gen.standard_normal((n, c)), gen.integers(0, c, size=n)
    _gradcheck(learner, rng, "cross_entropy", [logits, labels], [True, False], "cross-entropy of random logits")
    _gradcheck(learner, rng, "two_layers", [gen.standard_normal((n, k)), gen.standard_normal((k, c))],
               what="log_softmax after a matmul and tanh")
