"""Graded checks for chapter 04 (exercises 4.1-4.5): the backward rules of ``minigrad.tensor.grad_rules``.

Every check draws fresh random shapes and values (float64), and compares the
learner's rule with central finite differences of the scalar
``L = sum(grad * forward(x))`` (whose gradient the rule must return) and with
the formula written in NumPy. A second kind of check plugs the learner's rule
into the library and runs ``minigrad.tensor.gradcheck`` through real ops.

Each exercise is checked on its own: where a rule may call another exercise's
function (matmul backward calls ``unbroadcast``), the reference is put in its
place, and the library keeps its reference rules for everything but the rule
under test.
"""

from __future__ import annotations

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.tensor import grad_rules as reference

# ---------------------------------------------------------------- helpers


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _finite_differences(loss, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d loss / d x by central differences, one element at a time (x is float64)."""
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        keep = x[index]
        x[index] = keep + eps
        up = loss(x)
        x[index] = keep - eps
        down = loss(x)
        x[index] = keep
        out[index] = (up - down) / (2 * eps)
    return out


def _close(actual, expected, what: str, rtol: float = 1e-6, atol: float = 1e-8) -> None:
    assert actual is not None, f"{what}: got None"
    actual = np.asarray(actual)
    assert actual.shape == np.shape(expected), f"{what}: shape {actual.shape}, expected {np.shape(expected)}"
    if not np.allclose(actual, expected, rtol=rtol, atol=atol):
        worst = np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape) if actual.ndim else ()
        raise AssertionError(
            f"{what}: wrong values; worst at {worst}: got {np.asarray(actual)[worst]:.8g}, "
            f"expected {np.asarray(expected)[worst]:.8g}"
        )


def _unchanged(before: np.ndarray, after: np.ndarray, what: str) -> None:
    assert np.array_equal(before, after), f"{what}: the rule modified grad in place; compute new arrays instead"


@pytest.fixture
def library(monkeypatch):
    """``install(name, fn)`` puts one learner rule into the library for the rest of the check."""

    def install(name: str, fn) -> None:
        monkeypatch.setattr(reference, name, fn)

    return install


# ---------------------------------------------------------------- 4.1 unbroadcast


def _broadcast_pair(gen) -> tuple[tuple, tuple]:
    """(operand shape, broadcast shape): prepend 0-2 dims, stretch some size-1 dims; never equal."""
    while True:
        ndim = int(gen.integers(0, 4))
        shape = tuple(int(gen.choice([1, 1, 2, 3, 4])) for _ in range(ndim))
        prefix = tuple(int(s) for s in gen.integers(1, 5, size=int(gen.integers(0, 3))))
        stretched = tuple(int(gen.integers(2, 5)) if s == 1 and gen.random() < 0.7 else s for s in shape)
        out = prefix + stretched
        if out != shape:
            return shape, out


@pytest.mark.exercise("4.1")
def test_unbroadcast_matches_finite_differences(submission, rng):
    gen = _np(rng)
    for _ in range(25):
        shape, out_shape = _broadcast_pair(gen)
        x = gen.standard_normal(shape)
        grad = gen.standard_normal(out_shape)
        copy = grad.copy()
        got = submission.unbroadcast(grad, shape)
        _unchanged(copy, grad, f"unbroadcast(grad of shape {out_shape}, {shape})")
        numeric = _finite_differences(lambda v: float((grad * np.broadcast_to(v, out_shape)).sum()), x)
        _close(got, numeric, f"unbroadcast(grad of shape {out_shape}, {shape})", rtol=1e-5, atol=1e-6)


@pytest.mark.exercise("4.1")
def test_unbroadcast_is_the_adjoint_of_broadcasting(submission, rng):
    """<unbroadcast(g), x> == <g, broadcast_to(x)> for every x: summing is what broadcasting's copies call for."""
    gen = _np(rng)
    for _ in range(40):
        shape, out_shape = _broadcast_pair(gen)
        grad = gen.standard_normal(out_shape)
        got = np.asarray(submission.unbroadcast(grad, shape))
        assert got.shape == shape, f"unbroadcast(grad of shape {out_shape}, {shape}) has shape {got.shape}"
        x = gen.standard_normal(shape)
        assert np.isclose((got * x).sum(), (grad * np.broadcast_to(x, out_shape)).sum(), rtol=1e-9, atol=1e-9)


@pytest.mark.exercise("4.1")
def test_unbroadcast_worked_examples(submission, rng):
    gen = _np(rng)
    n, m = int(gen.integers(2, 6)), int(gen.integers(2, 6))
    g = gen.standard_normal((n, m))
    _close(submission.unbroadcast(g, (m,)), g.sum(axis=0), f"bias of shape ({m},) added to ({n}, {m}) rows")
    _close(submission.unbroadcast(g, (n, 1)), g.sum(axis=1, keepdims=True), f"({n}, 1) column stretched to ({n}, {m})")
    _close(submission.unbroadcast(g, (1, m)), g.sum(axis=0, keepdims=True), f"(1, {m}) row stretched to ({n}, {m})")
    _close(submission.unbroadcast(g, ()), g.sum(), "a 0-d operand (a scalar tensor) broadcast to a matrix")
    _close(submission.unbroadcast(g, (1, 1)), g.sum(keepdims=True), "a (1, 1) operand")
    g3 = gen.standard_normal((2, n, m))
    _close(submission.unbroadcast(g3, (n, 1)), g3.sum(axis=(0, 2))[:, None], f"(2, {n}, {m}) back to ({n}, 1)")


@pytest.mark.exercise("4.1")
def test_unbroadcast_through_the_library(submission, rng, library):
    library("unbroadcast", submission.unbroadcast)
    gen = _np(rng)
    n, m = int(gen.integers(2, 5)), int(gen.integers(2, 5))
    x = mt.tensor(gen.standard_normal((n, m)), requires_grad=True)
    bias = mt.tensor(gen.standard_normal(m), requires_grad=True)
    column = mt.tensor(gen.standard_normal((n, 1)), requires_grad=True)
    scale = mt.tensor(gen.standard_normal((1, m)) + 3.0, requires_grad=True)
    mt.gradcheck(lambda a, b, c, s: (a + b) * c - a / s + b, [x, bias, column, scale])
    wide = mt.tensor(gen.standard_normal((m, n)), requires_grad=True)
    mt.gradcheck(lambda w, b, c: w.T * b + c, [wide, bias, column])  # w.T: a non-contiguous operand


# ---------------------------------------------------------------- 4.2 matmul backward


@pytest.fixture
def matmul_rules(submission, monkeypatch):
    """The learner's module with the reference unbroadcast, so 4.2 does not depend on 4.1."""
    monkeypatch.setattr(submission, "unbroadcast", reference.unbroadcast)
    return submission


def _check_matmul(rules, gen, a_shape, b_shape) -> None:
    a, b = gen.standard_normal(a_shape), gen.standard_normal(b_shape)
    out_shape = np.matmul(a, b).shape
    grad = gen.standard_normal(out_shape)
    copy = grad.copy()
    what = f"matmul {a_shape} @ {b_shape}"
    result = rules.matmul_backward(grad, a, b)
    assert isinstance(result, tuple) and len(result) == 2, f"{what}: return a pair (grad_a, grad_b), got {type(result).__name__}"
    ga, gb = result
    _unchanged(copy, grad, what)
    numeric_a = _finite_differences(lambda v: float((grad * np.matmul(v, b)).sum()), a)
    numeric_b = _finite_differences(lambda v: float((grad * np.matmul(a, v)).sum()), b)
    _close(ga, numeric_a, f"{what}: grad_a", rtol=1e-5, atol=1e-6)
    _close(gb, numeric_b, f"{what}: grad_b", rtol=1e-5, atol=1e-6)


@pytest.mark.exercise("4.2")
def test_matmul_backward_matrices(matmul_rules, rng):
    gen = _np(rng)
    for _ in range(5):
        n, k, m = (int(s) for s in gen.integers(1, 6, size=3))
        _check_matmul(matmul_rules, gen, (n, k), (k, m))
    n, k, m = (int(s) for s in gen.integers(2, 7, size=3))
    a, b, grad = gen.standard_normal((n, k)), gen.standard_normal((k, m)), gen.standard_normal((n, m))
    ga, gb = matmul_rules.matmul_backward(grad, a, b)
    _close(ga, grad @ b.T, "grad_a of a 2-D matmul (expected grad @ b.T)")
    _close(gb, a.T @ grad, "grad_b of a 2-D matmul (expected a.T @ grad)")


@pytest.mark.exercise("4.2")
def test_matmul_backward_vectors(matmul_rules, rng):
    gen = _np(rng)
    n, k, m = (int(s) for s in gen.integers(2, 6, size=3))
    for a_shape, b_shape in [((k,), (k, m)), ((n, k), (k,)), ((k,), (k,))]:
        _check_matmul(matmul_rules, gen, a_shape, b_shape)


@pytest.mark.exercise("4.2")
def test_matmul_backward_batches(matmul_rules, rng):
    gen = _np(rng)
    B, C, n, k, m = (int(s) for s in gen.integers(2, 4, size=5))
    cases = [
        ((B, n, k), (B, k, m)),  # a batch of products
        ((B, n, k), (k, m)),  # one weight matrix for a whole batch
        ((n, k), (B, k, m)),
        ((B, 1, n, k), (C, k, m)),  # batch dimensions that broadcast
        ((k,), (B, k, m)),
        ((B, n, k), (k,)),
    ]
    for a_shape, b_shape in cases:
        _check_matmul(matmul_rules, gen, a_shape, b_shape)


@pytest.mark.exercise("4.2")
def test_matmul_backward_through_the_library(matmul_rules, rng, library):
    library("matmul_backward", matmul_rules.matmul_backward)
    gen = _np(rng)
    n, k, m = (int(s) for s in gen.integers(2, 5, size=3))
    a = mt.tensor(gen.standard_normal((n, k)), requires_grad=True)
    w = mt.tensor(gen.standard_normal((m, k)), requires_grad=True)  # used as w.T: a non-contiguous operand
    bias = mt.tensor(gen.standard_normal(m), requires_grad=True)
    mt.gradcheck(lambda x, w, b: (x @ w.T + b).tanh(), [a, w, bias])
    batch = mt.tensor(gen.standard_normal((2, n, k)), requires_grad=True)
    mt.gradcheck(lambda x, w: x @ w.T, [batch, w])
    x = mt.tensor(gen.standard_normal((n, k)))  # needs no gradient: only w's is asked for
    mt.gradcheck(lambda w: (x @ w.T).sum(0), [w])


# ---------------------------------------------------------------- 4.3 sum / mean backward


def _reduction_case(gen):
    ndim = int(gen.integers(0, 5))
    shape = tuple(int(s) for s in gen.integers(1, 4, size=ndim))
    if ndim == 0 or gen.random() < 0.2:
        dim = None
    else:
        dim = tuple(sorted(int(d) for d in gen.choice(ndim, size=int(gen.integers(1, ndim + 1)), replace=False)))
    return shape, dim, bool(gen.random() < 0.5)


def _check_reduction(fn, reduce, gen, shape, dim, keepdim, name: str) -> None:
    x = gen.standard_normal(shape)
    out = reduce(x, axis=dim, keepdims=keepdim)
    grad = gen.standard_normal(np.shape(out))
    copy = grad.copy()
    what = f"{name}_backward(grad of shape {np.shape(out)}, input_shape={shape}, dim={dim}, keepdim={keepdim})"
    got = fn(grad, shape, dim, keepdim)
    _unchanged(copy, grad, what)
    numeric = _finite_differences(lambda v: float((grad * reduce(v, axis=dim, keepdims=keepdim)).sum()), x)
    _close(got, numeric, what, rtol=1e-5, atol=1e-6)


@pytest.mark.exercise("4.3")
def test_sum_backward_random_dims(submission, rng):
    gen = _np(rng)
    for _ in range(25):
        _check_reduction(submission.sum_backward, np.sum, gen, *_reduction_case(gen), "sum")
    n, m = int(gen.integers(2, 5)), int(gen.integers(2, 5))
    grad = gen.standard_normal(m)
    _close(submission.sum_backward(grad, (n, m), (0,), False), np.tile(grad, (n, 1)), f"x.sum(0) of shape ({n}, {m})")
    g0 = np.asarray(gen.standard_normal())
    _close(submission.sum_backward(g0, (n, m), None, False), np.full((n, m), float(g0)), "x.sum() of everything")


@pytest.mark.exercise("4.3")
def test_mean_backward_random_dims(submission, rng):
    gen = _np(rng)
    for _ in range(25):
        _check_reduction(submission.mean_backward, np.mean, gen, *_reduction_case(gen), "mean")
    n, m = int(gen.integers(2, 5)), int(gen.integers(2, 5))
    grad = gen.standard_normal((n, 1))
    _close(submission.mean_backward(grad, (n, m), (1,), True), np.tile(grad / m, (1, m)), f"x.mean(1, keepdim=True) of ({n}, {m})")


@pytest.mark.exercise("4.3")
def test_reductions_through_the_library(submission, rng, library):
    library("sum_backward", submission.sum_backward)
    library("mean_backward", submission.mean_backward)
    gen = _np(rng)
    x = mt.tensor(gen.standard_normal((3, 4, 2)), requires_grad=True)
    mt.gradcheck(lambda t: t.sum(dim=(0, 2)) * t.mean(dim=-1).sum(0), [x])
    mt.gradcheck(lambda t: (t - t.mean(dim=1, keepdim=True)).sum(dim=-1, keepdim=True), [x])
    wide = mt.tensor(gen.standard_normal((4, 3)), requires_grad=True)
    mt.gradcheck(lambda w: w.T.mean(0) + w.T.sum(), [wide])  # a non-contiguous input


# ---------------------------------------------------------------- 4.4 log_softmax backward


def _log_softmax(x, dim):
    shifted = x - x.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


@pytest.mark.exercise("4.4")
def test_log_softmax_backward_matches_finite_differences(submission, rng):
    gen = _np(rng)
    for _ in range(12):
        ndim = int(gen.integers(1, 4))
        shape = tuple(int(s) for s in gen.integers(1, 5, size=ndim))
        dim = int(gen.integers(0, ndim))
        x = 2.0 * gen.standard_normal(shape)
        y = _log_softmax(x, dim)
        grad = gen.standard_normal(shape)
        copy = grad.copy()
        what = f"log_softmax_backward on shape {shape}, dim={dim}"
        got = submission.log_softmax_backward(grad, y, dim)
        _unchanged(copy, grad, what)
        numeric = _finite_differences(lambda v: float((grad * _log_softmax(v, dim)).sum()), x)
        _close(got, numeric, what, rtol=1e-5, atol=1e-6)
        _close(got, grad - np.exp(y) * grad.sum(axis=dim, keepdims=True), what)


@pytest.mark.exercise("4.4")
def test_log_softmax_backward_large_logits(submission, rng):
    gen = _np(rng)
    x = gen.standard_normal((3, 5)) * 50 + 1000.0  # exp(x) overflows; exp(output) does not
    y = _log_softmax(x, 1)
    grad = gen.standard_normal((3, 5))
    with np.errstate(all="ignore"):
        got = np.asarray(submission.log_softmax_backward(grad, y, 1))
    assert np.isfinite(got).all(), "log_softmax_backward gave inf/nan for large logits: use exp(output), which is <= 1"
    _close(got, grad - np.exp(y) * grad.sum(axis=1, keepdims=True), "log_softmax_backward with logits near 1000")
    g = gen.standard_normal((4, 6))
    sums = np.asarray(submission.log_softmax_backward(g, _log_softmax(gen.standard_normal((4, 6)), 0), 0)).sum(axis=0)
    _close(sums, np.zeros(6), "the gradient should sum to 0 along dim (shifting all logits changes nothing)", atol=1e-9)


@pytest.mark.exercise("4.4")
def test_log_softmax_through_the_library(submission, rng, library):
    library("log_softmax_backward", submission.log_softmax_backward)
    gen = _np(rng)
    x = mt.tensor(gen.standard_normal((4, 5)), requires_grad=True)
    mt.gradcheck(lambda t: t.log_softmax(dim=1), [x])
    mt.gradcheck(lambda t: t.T.log_softmax(dim=1), [x])  # along the other dimension, non-contiguous
    labels = mt.tensor(gen.integers(0, 5, size=4))
    mt.gradcheck(lambda t: -t.log_softmax(dim=-1)[mt.arange(4), labels].mean(), [x])  # cross-entropy


# ---------------------------------------------------------------- 4.5 topological order


def _random_graph(gen, n_leaves: int = 4, n_ops: int = 30):
    """A random DAG of tensor ops with reuse, numbers (no node) and a constant that needs no gradient."""
    leaves = [mt.tensor(gen.standard_normal(3), requires_grad=True) for _ in range(n_leaves)]
    constant = mt.tensor(gen.standard_normal(3))
    nodes = list(leaves)
    for _ in range(n_ops):
        a = nodes[int(gen.integers(len(nodes)))]
        b = nodes[int(gen.integers(len(nodes)))]
        roll = gen.random()
        if roll < 0.2:
            nodes.append(a.tanh())
        elif roll < 0.35:
            nodes.append(a * 0.5 + constant)
        elif roll < 0.5:
            nodes.append(a * b)
        else:
            nodes.append(a + b)
    return (nodes[-1] * nodes[-2]).sum(), leaves


def _reachable(root) -> set:
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(p for p in node._parents if p)
    return seen


@pytest.mark.exercise("4.5")
def test_topological_order_properties(submission, rng):
    gen = _np(rng)
    for _ in range(15):
        loss, _ = _random_graph(gen)
        root = loss.grad_fn
        order = list(submission.topological_order(root))
        assert len(order) == len(set(order)), "a node appears more than once"
        assert set(order) == _reachable(root), (
            "the order must hold exactly the nodes reachable from the root (skip falsy parents: None, NOT_A_TENSOR)"
        )
        position = {node: i for i, node in enumerate(order)}
        for node in order:
            for parent in node._parents:
                if parent:
                    assert position[parent] < position[node], f"{node.name} is listed before its input {parent.name}"
        assert order[-1] is root, "the root must come last"


@pytest.mark.exercise("4.5")
def test_topological_order_deep_chain(submission):
    x = mt.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y + 1.0
    order = submission.topological_order(y.grad_fn)  # a recursive version raises RecursionError here
    assert len(order) == 20_001 and order[-1] is y.grad_fn and order[0] is x._accum


@pytest.mark.exercise("4.5")
def test_backward_with_your_order(submission, rng, library):
    gen = _np(rng)
    seed = int(gen.integers(2**31))
    loss, leaves = _random_graph(np.random.default_rng(seed))
    loss.backward()
    expected = [None if leaf.grad is None else leaf.grad.numpy() for leaf in leaves]
    library("topological_order", submission.topological_order)
    loss, leaves = _random_graph(np.random.default_rng(seed))
    loss.backward()
    for i, (leaf, want) in enumerate(zip(leaves, expected)):
        got = None if leaf.grad is None else leaf.grad.numpy()
        assert (got is None) == (want is None), f"leaf {i}: gradient missing"
        if got is not None:
            _close(got, want, f"leaf {i}: gradient after backward() with your order")
