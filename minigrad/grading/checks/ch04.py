"""Graded checks for chapter 04, exercises 4.1-4.3: the backward rules of ``minigrad.tensor.grad_rules``.

(4.4, the LogSoftmax Function, is checked in ``ch04_log_softmax.py``; 4.5, the
backward driver, in ``ch04_backward.py``.)

Every check draws fresh random shapes and values (float64), and compares the
learner's rule with central finite differences of the scalar
``L = sum(grad * forward(x))`` (whose gradient the rule must return) and with
the formula written in NumPy, all computed here. The rules run in the
sandboxed child, where the learner's file *is* ``minigrad.tensor.grad_rules``:
a second kind of check runs real ops of the library there (so through the
learner's rule), sends back the gradients, and compares them here with
finite differences of the library's reference.

Each exercise is checked on its own: in the child, every rule but the one
under test is replaced by the short, trusted versions below (the reference
is out of the child's reach); e.g. matmul backward calls the trusted
``unbroadcast``.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.checks._tensors import analytic as _analytic
from minigrad.grading.probing import exercise, probe

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
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(actual - expected)), actual.shape)) if actual.ndim else ()
        raise AssertionError(
            f"{what}: wrong values; worst at {worst}: got {np.asarray(actual)[worst]:.8g}, "
            f"expected {np.asarray(expected)[worst]:.8g}"
        )


def _unchanged(before: np.ndarray, after, what: str) -> None:
    assert isinstance(after, np.ndarray) and np.array_equal(before, after), (
        f"{what}: the rule modified grad in place; compute new arrays instead"
    )


# ---------------------------------------------------------------- trusted rules (child side)


def _trusted_unbroadcast(grad, shape):
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape)))) if grad.ndim > len(shape) else grad
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def _trusted_sum_backward(grad, input_shape, dim, keepdim):
    if not keepdim and dim is not None:
        grad = np.expand_dims(grad, tuple(dim))
    return np.broadcast_to(grad, input_shape)


def _trusted_mean_backward(grad, input_shape, dim, keepdim):
    count = int(np.prod([input_shape[d] for d in (range(len(input_shape)) if dim is None else dim)]))
    return _trusted_sum_backward(grad / count, input_shape, dim, keepdim)


TRUSTED = {
    "unbroadcast": _trusted_unbroadcast,
    "sum_backward": _trusted_sum_backward,
    "mean_backward": _trusted_mean_backward,
}


_LEARNERS: dict = {}  # the learner's own rules, kept while the trusted ones stand in


def _only(submission, keep):
    """The learner's rules named in ``keep``, the trusted ones for the other rules of TRUSTED."""
    if not _LEARNERS:
        _LEARNERS.update({name: getattr(submission, name) for name in TRUSTED})
    for name, rule in TRUSTED.items():
        setattr(submission, name, _LEARNERS[name] if name in keep else rule)


@probe
def rule(submission, state, name, args, trusted=()):
    """The learner's rule ``name(*args)`` (the rules in ``trusted`` replaced); the result and the arguments after."""
    _only(submission, [n for n in TRUSTED if n not in trusted])
    result = getattr(submission, name)(*args)
    return {"result": result, "args": args}


@probe
def gradients(submission, state, name, arrays, requires, weights, keep):
    """Library ops (through the learner's rules named in ``keep``) of function ``name``: outputs and gradients."""
    _only(submission, keep)
    return _analytic(FUNCTIONS[name], arrays, requires, weights)


def _rule(learner, name, *args, trusted=()):
    answer = learner.probe("rule", name, list(args), list(trusted))
    return answer["result"], answer["args"]


def _through_library(learner, keep, name, arrays, rng, requires=None):
    from minigrad.grading.checks._tensors import gradcheck_here, reference_outputs

    requires = [isinstance(a, np.ndarray) and a.dtype == np.float64 for a in arrays] if requires is None else requires
    gen = np.random.default_rng(rng.randrange(2**31))
    weights = [gen.standard_normal(o.shape) for o in reference_outputs(FUNCTIONS[name], arrays)]
    answer = learner.probe("gradients", name, list(arrays), list(requires), weights, keep)
    gradcheck_here(FUNCTIONS[name], arrays, requires, answer, weights, f"through the library: {name}")


FUNCTIONS = {
    "broadcast_ops": lambda a, b, c, s: (a + b) * c - a / s + b,
    "transposed_operand": lambda w, b, c: w.T * b + c,
    "linear_tanh": lambda x, w, b: (x @ w.T + b).tanh(),
    "batched_matmul": lambda x, w: x @ w.T,
    "matmul_constant_input": lambda w, x: (x @ w.T).sum(0),
    "sum_mean_mix": lambda t: t.sum(dim=(0, 2)) * t.mean(dim=-1).sum(0),
    "centered_sum": lambda t: (t - t.mean(dim=1, keepdim=True)).sum(dim=-1, keepdim=True),
    "transposed_reductions": lambda w: w.T.mean(0) + w.T.sum(),
}


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


def _broadcast_pairs(gen, count: int) -> list[tuple[tuple, tuple]]:
    """``count`` drawn pairs, the smallest broadcast shape first."""
    return smallest_first([_broadcast_pair(gen) for _ in range(count)], lambda pair: (int(np.prod(pair[1])), len(pair[1])))


def _describe_pair(pair) -> str:
    return f"a grad of shape {pair[1]} for an operand of shape {pair[0]}"


@exercise("4.1")
def test_unbroadcast_matches_finite_differences(learner, rng):
    gen = _np(rng)

    def attempt(pair):
        shape, out_shape = pair
        x = gen.standard_normal(shape)
        grad = gen.standard_normal(out_shape)
        got, [after, _] = _rule(learner, "unbroadcast", grad, shape)
        _unchanged(grad, after, f"unbroadcast(grad of shape {out_shape}, {shape})")
        numeric = _finite_differences(lambda v: float((grad * np.broadcast_to(v, out_shape)).sum()), x)
        _close(got, numeric, f"unbroadcast(grad of shape {out_shape}, {shape})", rtol=1e-5, atol=1e-6)

    first_failure(_broadcast_pairs(gen, 25), attempt, _describe_pair)


@exercise("4.1")
def test_unbroadcast_is_the_adjoint_of_broadcasting(learner, rng):
    """<unbroadcast(g), x> == <g, broadcast_to(x)> for every x: summing is what broadcasting's copies call for."""
    gen = _np(rng)

    def attempt(pair):
        shape, out_shape = pair
        grad = gen.standard_normal(out_shape)
        got = np.asarray(_rule(learner, "unbroadcast", grad, shape)[0])
        assert got.shape == shape, f"unbroadcast(grad of shape {out_shape}, {shape}) has shape {got.shape}"
        x = gen.standard_normal(shape)
        assert np.isclose((got * x).sum(), (grad * np.broadcast_to(x, out_shape)).sum(), rtol=1e-9, atol=1e-9), (
            f"unbroadcast(grad of shape {out_shape}, {shape}): <result, x> differs from <grad, x broadcast> for a "
            f"random x: every copy of an element must contribute its gradient once"
        )

    first_failure(_broadcast_pairs(gen, 40), attempt, _describe_pair)


@exercise("4.1")
def test_unbroadcast_worked_examples(learner, rng):
    gen = _np(rng)
    n, m = int(gen.integers(2, 6)), int(gen.integers(2, 6))
    g = gen.standard_normal((n, m))

    def unbroadcast(grad, shape):
        return _rule(learner, "unbroadcast", grad, shape)[0]

    _close(unbroadcast(g, (m,)), g.sum(axis=0), f"bias of shape ({m},) added to ({n}, {m}) rows")
    _close(unbroadcast(g, (n, 1)), g.sum(axis=1, keepdims=True), f"({n}, 1) column stretched to ({n}, {m})")
    _close(unbroadcast(g, (1, m)), g.sum(axis=0, keepdims=True), f"(1, {m}) row stretched to ({n}, {m})")
    _close(unbroadcast(g, ()), g.sum(), "a 0-d operand (a scalar tensor) broadcast to a matrix")
    _close(unbroadcast(g, (1, 1)), g.sum(keepdims=True), "a (1, 1) operand")
    g3 = gen.standard_normal((2, n, m))
    _close(unbroadcast(g3, (n, 1)), g3.sum(axis=(0, 2))[:, None], f"(2, {n}, {m}) back to ({n}, 1)")


@exercise("4.1")
def test_unbroadcast_through_the_library(learner, rng):
    gen = _np(rng)
    n, m = int(gen.integers(2, 5)), int(gen.integers(2, 5))
    x, bias = gen.standard_normal((n, m)), gen.standard_normal(m)
    column, scale = gen.standard_normal((n, 1)), gen.standard_normal((1, m)) + 3.0
    _through_library(learner, ["unbroadcast"], "broadcast_ops", [x, bias, column, scale], rng)
    wide = gen.standard_normal((m, n))
    _through_library(learner, ["unbroadcast"], "transposed_operand", [wide, bias, column], rng)  # w.T: non-contiguous


# ---------------------------------------------------------------- 4.2 matmul backward
# the trusted unbroadcast stands in for the learner's, so 4.2 does not depend on 4.1


def _check_matmul(learner, gen, a_shape, b_shape) -> None:
    a, b = gen.standard_normal(a_shape), gen.standard_normal(b_shape)
    out_shape = np.matmul(a, b).shape
    grad = gen.standard_normal(out_shape)
    what = f"matmul {a_shape} @ {b_shape}"
    result, [after, _, _] = _rule(learner, "matmul_backward", grad, a, b, trusted=["unbroadcast"])
    assert isinstance(result, tuple) and len(result) == 2, f"{what}: return a pair (grad_a, grad_b), got {type(result).__name__}"
    ga, gb = result
    _unchanged(grad, after, what)
    numeric_a = _finite_differences(lambda v: float((grad * np.matmul(v, b)).sum()), a)
    numeric_b = _finite_differences(lambda v: float((grad * np.matmul(a, v)).sum()), b)
    _close(ga, numeric_a, f"{what}: grad_a", rtol=1e-5, atol=1e-6)
    _close(gb, numeric_b, f"{what}: grad_b", rtol=1e-5, atol=1e-6)


@exercise("4.2")
def test_matmul_backward_matrices(learner, rng):
    gen = _np(rng)
    sizes = smallest_first([tuple(int(s) for s in gen.integers(1, 6, size=3)) for _ in range(5)],
                           lambda nkm: nkm[0] * nkm[1] + nkm[1] * nkm[2])
    first_failure(sizes, lambda nkm: _check_matmul(learner, gen, nkm[:2], nkm[1:]),
                  lambda nkm: f"a ({nkm[0]}, {nkm[1]}) @ ({nkm[1]}, {nkm[2]}) matmul")
    n, k, m = (int(s) for s in gen.integers(2, 7, size=3))
    a, b, grad = gen.standard_normal((n, k)), gen.standard_normal((k, m)), gen.standard_normal((n, m))
    result, _ = _rule(learner, "matmul_backward", grad, a, b, trusted=["unbroadcast"])
    assert isinstance(result, tuple) and len(result) == 2, f"return a pair (grad_a, grad_b), got {type(result).__name__}"
    ga, gb = result
    _close(ga, grad @ b.T, f"grad_a of a ({n}, {k}) @ ({k}, {m}) matmul")
    _close(gb, a.T @ grad, f"grad_b of a ({n}, {k}) @ ({k}, {m}) matmul")


@exercise("4.2")
def test_matmul_backward_vectors(learner, rng):
    gen = _np(rng)
    n, k, m = (int(s) for s in gen.integers(2, 6, size=3))
    for a_shape, b_shape in [((k,), (k, m)), ((n, k), (k,)), ((k,), (k,))]:
        _check_matmul(learner, gen, a_shape, b_shape)


@exercise("4.2")
def test_matmul_backward_batches(learner, rng):
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
        _check_matmul(learner, gen, a_shape, b_shape)


@exercise("4.2")
def test_matmul_backward_through_the_library(learner, rng):
    gen = _np(rng)
    n, k, m = (int(s) for s in gen.integers(2, 5, size=3))
    a, w, bias = gen.standard_normal((n, k)), gen.standard_normal((m, k)), gen.standard_normal(m)  # w.T: non-contiguous
    _through_library(learner, ["matmul_backward"], "linear_tanh", [a, w, bias], rng)
    batch = gen.standard_normal((2, n, k))
    _through_library(learner, ["matmul_backward"], "batched_matmul", [batch, w], rng)
    x = gen.standard_normal((n, k))  # needs no gradient: only w's is asked for
    _through_library(learner, ["matmul_backward"], "matmul_constant_input", [w, x], rng, requires=[True, False])


# ---------------------------------------------------------------- 4.3 sum / mean backward


def _reduction_case(gen):
    ndim = int(gen.integers(0, 5))
    shape = tuple(int(s) for s in gen.integers(1, 4, size=ndim))
    if ndim == 0 or gen.random() < 0.2:
        dim = None
    else:
        dim = tuple(sorted(int(d) for d in gen.choice(ndim, size=int(gen.integers(1, ndim + 1)), replace=False)))
    return shape, dim, bool(gen.random() < 0.5)


def _reduction_cases(gen, count: int) -> list:
    """``count`` drawn ``(shape, dim, keepdim)`` cases, the smallest input first."""
    return smallest_first([_reduction_case(gen) for _ in range(count)], lambda case: (int(np.prod(case[0])), len(case[0])))


def _describe_reduction(case) -> str:
    shape, dim, keepdim = case
    return f"an input of shape {shape}, dim={dim}, keepdim={keepdim}"


def _check_reduction(learner, name, reduce, gen, shape, dim, keepdim) -> None:
    x = gen.standard_normal(shape)
    out = reduce(x, axis=dim, keepdims=keepdim)
    grad = np.asarray(gen.standard_normal(np.shape(out)))
    what = f"{name}(grad of shape {np.shape(out)}, input_shape={shape}, dim={dim}, keepdim={keepdim})"
    got, [after, *_] = _rule(learner, name, grad, shape, dim, keepdim)
    _unchanged(grad, after, what)
    numeric = _finite_differences(lambda v: float((grad * reduce(v, axis=dim, keepdims=keepdim)).sum()), x)
    _close(got, numeric, what, rtol=1e-5, atol=1e-6)


@exercise("4.3")
def test_sum_backward_random_dims(learner, rng):
    gen = _np(rng)
    first_failure(_reduction_cases(gen, 25), lambda case: _check_reduction(learner, "sum_backward", np.sum, gen, *case),
                  _describe_reduction)
    n, m = int(gen.integers(2, 5)), int(gen.integers(2, 5))
    grad = gen.standard_normal(m)
    got = _rule(learner, "sum_backward", grad, (n, m), (0,), False)[0]
    _close(got, np.tile(grad, (n, 1)), f"x.sum(0) of shape ({n}, {m})")
    g0 = np.asarray(gen.standard_normal())
    got = _rule(learner, "sum_backward", g0, (n, m), None, False)[0]
    _close(got, np.full((n, m), float(g0)), "x.sum() of everything")


@exercise("4.3")
def test_mean_backward_random_dims(learner, rng):
    gen = _np(rng)
    first_failure(_reduction_cases(gen, 25), lambda case: _check_reduction(learner, "mean_backward", np.mean, gen, *case),
                  _describe_reduction)
    n, m = int(gen.integers(2, 5)), int(gen.integers(2, 5))
    grad = gen.standard_normal((n, 1))
    got = _rule(learner, "mean_backward", grad, (n, m), (1,), True)[0]
    _close(got, np.tile(grad / m, (1, m)), f"x.mean(1, keepdim=True) of ({n}, {m})")


@exercise("4.3")
def test_reductions_through_the_library(learner, rng):
    keep = ["sum_backward", "mean_backward"]
    gen = _np(rng)
    x = gen.standard_normal((3, 4, 2))
    _through_library(learner, keep, "sum_mean_mix", [x], rng)
    _through_library(learner, keep, "centered_sum", [x], rng)
    wide = gen.standard_normal((4, 3))
    _through_library(learner, keep, "transposed_reductions", [wide], rng)  # a non-contiguous input
