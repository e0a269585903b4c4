"""Graded checks for chapter 05, exercise 5.2: the fused, stable cross-entropy (``exercises/05_cross_entropy.py``).

Fresh random logits and targets each run. The loss is compared with
log-sum-exp written in NumPy (float64), the gradient with finite differences
(``minigrad.tensor.gradcheck``) and with ``softmax - one_hot``, and both are
tried on logits of size 1e4, where a naive ``exp`` overflows. The checks call
the learner's ``cross_entropy`` in the sandboxed child (it runs the learner's
``CrossEntropyFunction``; everything else is the library's) and compute every
expected value and finite difference here, from the library's reference.
``ignore_index`` and ``label_smoothing`` are not graded: they take the
extension's node, not the learner's.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.checks._tensors import as_array, gradcheck_here
from minigrad.grading.probing import exercise, probe


@probe
def cross_entropy(submission, state, logits, target, options, weights=None):
    """The learner's loss (and, with ``weights``, the gradient of ``sum(weights * loss)``; 1.0: ``loss.backward()``)."""
    import minigrad.tensor as mt

    z = mt.tensor(logits, requires_grad=weights is not None)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        loss = submission.cross_entropy(z, mt.tensor(target), **options)
        if weights is not None:
            if isinstance(weights, float):
                loss.backward()
            else:
                (loss.double() * mt.tensor(weights)).sum().backward()
    answer = {"loss": as_array(loss)}
    if weights is not None:
        answer["grads"] = [None if z.grad is None else as_array(z.grad), None]
    return answer


def _gradcheck(learner, gen, logits, target, what, **options):
    """The learner's gradient of the loss against finite differences of the library's cross_entropy."""
    from minigrad.nn.functional.loss import cross_entropy as reference

    def loss(z, t):
        return reference(z, t, **options)

    weights = gen.standard_normal(np.shape(reference_loss(logits, target, options)))
    answer = learner.probe("cross_entropy", logits, target, options, weights)
    gradcheck_here(loss, [logits, target], [True, False], answer, [weights], what)


def reference_loss(logits, target, options):
    import minigrad.tensor as mt
    from minigrad.nn.functional.loss import cross_entropy as reference

    return reference(mt.tensor(logits), mt.tensor(target), **options).numpy()


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _log_softmax(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


def _softmax(z: np.ndarray) -> np.ndarray:
    return np.exp(_log_softmax(z))


def _problem(gen, scale: float = 3.0, dtype=np.float64):
    n, c = int(gen.integers(1, 9)), int(gen.integers(2, 8))
    logits = (scale * gen.standard_normal((n, c))).astype(dtype)
    target = gen.integers(0, c, size=n)
    return logits, target


def _close(actual, expected, what: str, rtol: float = 1e-9, atol: float = 1e-10) -> None:
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    assert np.all(np.isfinite(actual)), f"{what}: got non-finite values {actual} (did an exponential overflow?)"
    if not np.allclose(actual, expected, rtol=rtol, atol=atol):
        worst = np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape) if actual.ndim else ()
        raise AssertionError(f"{what}: worst at {worst}: got {actual[worst]:.10g}, expected {expected[worst]:.10g}")


@exercise("5.2")
def test_loss_matches_log_sum_exp(learner, rng):
    gen = _np(rng)

    def attempt(problem):
        logits, target = problem
        per_row = -_log_softmax(logits)[np.arange(len(target)), target]
        loss = lambda **options: learner.probe("cross_entropy", logits, target, options)["loss"]  # noqa: E731
        _close(loss(reduction="none"), per_row, "cross_entropy(reduction='none')")
        _close(loss(), per_row.mean(), "cross_entropy (the mean over the batch)")
        _close(loss(reduction="sum"), per_row.sum(), "cross_entropy(reduction='sum')")

    problems = smallest_first([_problem(gen) for _ in range(10)], lambda problem: problem[0].size)
    first_failure(problems, attempt,
                  lambda problem: f"{problem[0].shape[0]} rows of {problem[0].shape[1]} logits, targets {problem[1].tolist()}")


@exercise("5.2")
def test_gradient_matches_finite_differences(learner, rng):
    gen = _np(rng)
    for reduction in ("mean", "sum", "none"):
        logits, target = _problem(gen)
        _gradcheck(learner, gen, logits, target, f"cross_entropy(reduction={reduction!r})", reduction=reduction)


@exercise("5.2")
def test_gradient_is_softmax_minus_one_hot(learner, rng):
    gen = _np(rng)
    for _ in range(5):
        logits, target = _problem(gen)
        n, c = logits.shape
        [grad, _] = learner.probe("cross_entropy", logits, target, {}, 1.0)["grads"]
        assert grad is not None, "backward() left no gradient on the logits"
        expected = (_softmax(logits) - np.eye(c)[target]) / n
        _close(grad, expected, f"d(mean loss)/d(logits) for {n} rows of {c} logits")


@exercise("5.2")
def test_huge_logits_do_not_overflow(learner, rng):
    """Logits of size 1e4: exp(1e4) is inf in any float type; shifting by the row max keeps every exponent <= 0."""
    gen = _np(rng)
    for dtype in (np.float64, np.float32):
        logits, target = _problem(gen, scale=1.0, dtype=dtype)
        n, c = logits.shape
        big = (logits * 1e4).astype(dtype)
        per_row = -_log_softmax(big.astype(np.float64))[np.arange(n), target]
        answer = learner.probe("cross_entropy", big, target, {"reduction": "sum"}, 1.0)
        rtol = 1e-9 if dtype == np.float64 else 1e-5
        _close(answer["loss"], per_row.sum(), f"the loss of logits of size 1e4 ({np.dtype(dtype).name})", rtol=rtol, atol=1e-3)
        expected = _softmax(big.astype(np.float64)) - np.eye(c)[target]
        assert answer["grads"][0] is not None, "backward() left no gradient on the logits"
        _close(answer["grads"][0], expected, f"the gradient for logits of size 1e4 ({np.dtype(dtype).name})", rtol=1e-4, atol=1e-5)

    # adding the same constant to a row changes nothing
    logits, target = _problem(gen)
    shift = gen.uniform(-1e4, 1e4, size=(len(target), 1))
    a = learner.probe("cross_entropy", logits, target, {"reduction": "none"})["loss"]
    b = learner.probe("cross_entropy", logits + shift, target, {"reduction": "none"})["loss"]
    _close(b, a, "cross_entropy(logits + c) (must equal cross_entropy(logits))", rtol=1e-7, atol=1e-8)
