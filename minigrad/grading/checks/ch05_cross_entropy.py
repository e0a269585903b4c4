"""Graded checks for chapter 05, exercise 5.2: the fused, stable cross-entropy (``exercises/05_cross_entropy.py``).

Fresh random logits and targets each run. The loss is compared with
log-sum-exp written in NumPy (float64), the gradient with finite differences
(``minigrad.tensor.gradcheck``) and with ``softmax - one_hot``, and both are
tried on logits of size 1e4, where a naive ``exp`` overflows. The checks call
the learner's ``cross_entropy``, which runs the learner's
``CrossEntropyFunction``; everything else is the library's.
"""

from __future__ import annotations

import numpy as np
import pytest

import minigrad.tensor as mt


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
    assert np.all(np.isfinite(actual)), f"{what}: got non-finite values {actual} (overflow in exp? subtract the row max first)"
    if not np.allclose(actual, expected, rtol=rtol, atol=atol):
        worst = np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape) if actual.ndim else ()
        raise AssertionError(f"{what}: worst at {worst}: got {actual[worst]:.10g}, expected {expected[worst]:.10g}")


@pytest.mark.exercise("5.2")
def test_loss_matches_log_sum_exp(submission, rng):
    gen = _np(rng)
    for _ in range(10):
        logits, target = _problem(gen)
        per_row = -_log_softmax(logits)[np.arange(len(target)), target]
        z, t = mt.tensor(logits), mt.tensor(target)
        _close(submission.cross_entropy(z, t, reduction="none").numpy(), per_row, "cross_entropy(reduction='none')")
        _close(submission.cross_entropy(z, t).numpy(), per_row.mean(), "cross_entropy (the mean over the batch)")
        _close(submission.cross_entropy(z, t, reduction="sum").numpy(), per_row.sum(), "cross_entropy(reduction='sum')")


@pytest.mark.exercise("5.2")
def test_gradient_matches_finite_differences(submission, rng):
    gen = _np(rng)
    for reduction in ("mean", "sum", "none"):
        logits, target = _problem(gen)
        z = mt.tensor(logits, requires_grad=True)
        t = mt.tensor(target)
        mt.gradcheck(lambda z: submission.cross_entropy(z, t, reduction=reduction), [z])
    # the options handled outside the exercise region still have to work with your logp and gradient
    logits, target = _problem(gen)
    z, t = mt.tensor(logits, requires_grad=True), mt.tensor(target)
    mt.gradcheck(lambda z: submission.cross_entropy(z, t, label_smoothing=0.1), [z])
    ignored = target.copy()
    ignored[0] = -100
    z, t = mt.tensor(logits, requires_grad=True), mt.tensor(ignored)
    mt.gradcheck(lambda z: submission.cross_entropy(z, t, ignore_index=-100, reduction="sum"), [z])


@pytest.mark.exercise("5.2")
def test_gradient_is_softmax_minus_one_hot(submission, rng):
    gen = _np(rng)
    for _ in range(5):
        logits, target = _problem(gen)
        n, c = logits.shape
        z = mt.tensor(logits, requires_grad=True)
        submission.cross_entropy(z, mt.tensor(target)).backward()
        assert z.grad is not None, "backward() left no gradient on the logits"
        expected = (_softmax(logits) - np.eye(c)[target]) / n
        _close(z.grad.numpy(), expected, "d(mean loss)/d(logits) = (softmax - one_hot) / N")


@pytest.mark.exercise("5.2")
def test_huge_logits_do_not_overflow(submission, rng):
    """Logits of size 1e4: exp(1e4) is inf in any float type; shifting by the row max keeps every exponent <= 0."""
    gen = _np(rng)
    for dtype in (np.float64, np.float32):
        logits, target = _problem(gen, scale=1.0, dtype=dtype)
        n, c = logits.shape
        big = (logits * 1e4).astype(dtype)
        per_row = -_log_softmax(big.astype(np.float64))[np.arange(n), target]
        z = mt.tensor(big, requires_grad=True)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            loss = submission.cross_entropy(z, mt.tensor(target), reduction="sum")
            loss.backward()
        rtol = 1e-9 if dtype == np.float64 else 1e-5
        _close(loss.detach().numpy(), per_row.sum(), f"the loss of logits of size 1e4 ({np.dtype(dtype).name})", rtol=rtol, atol=1e-3)
        expected = _softmax(big.astype(np.float64)) - np.eye(c)[target]
        _close(z.grad.numpy(), expected, f"the gradient for logits of size 1e4 ({np.dtype(dtype).name})", rtol=1e-4, atol=1e-5)

    # adding the same constant to a row changes nothing
    logits, target = _problem(gen)
    shift = gen.uniform(-1e4, 1e4, size=(len(target), 1))
    a = submission.cross_entropy(mt.tensor(logits), mt.tensor(target), reduction="none").numpy()
    b = submission.cross_entropy(mt.tensor(logits + shift), mt.tensor(target), reduction="none").numpy()
    _close(b, a, "cross_entropy(logits + c) (must equal cross_entropy(logits))", rtol=1e-7, atol=1e-8)
