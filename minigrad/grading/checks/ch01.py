"""Graded checks for chapter 01 (exercises 1.1-1.5), on fresh random inputs each run."""

import math

import pytest

from minigrad.grading.checks._support import check_gradients, reference_backward
from minigrad.scalar import engine as reference


# ---------------------------------------------------------------- 1.1 multiply

@pytest.mark.exercise("1.1")
def test_mul_value_and_local_grads(submission, rng):
    V = submission.Value
    for _ in range(20):
        a, b = rng.uniform(-5, 5), rng.uniform(-5, 5)
        out = V(a) * V(b)
        assert math.isclose(out.data, a * b, rel_tol=1e-12, abs_tol=1e-12), f"{a} * {b} gave {out.data}"
        check_gradients(V, lambda x, y: x * y, [a, b])


@pytest.mark.exercise("1.1")
def test_mul_with_numbers_and_reuse(submission, rng):
    V = submission.Value
    a, k = rng.uniform(-3, 3), rng.uniform(-3, 3)
    check_gradients(V, lambda x: x * k, [a])
    check_gradients(V, lambda x: k * x, [a])
    check_gradients(V, lambda x: x * x, [a])  # reuse: d(x*x)/dx = 2x
    check_gradients(V, lambda x, y: (x * y + x) * y, [a, k])


# ------------------------------------------------------------------- 1.2 power

@pytest.mark.exercise("1.2")
def test_pow_number_exponent(submission, rng):
    V = submission.Value
    for n in (2, 3, 0.5, -1, -2.5, rng.uniform(-3, 3)):
        a = rng.uniform(0.2, 3.0)
        out = V(a) ** n
        assert math.isclose(out.data, a**n, rel_tol=1e-12), f"{a} ** {n} gave {out.data}"
        check_gradients(V, lambda x: x**n, [a])
    check_gradients(V, lambda x: x**3, [rng.uniform(-3, -0.5)])  # integer power of a negative base


@pytest.mark.exercise("1.2")
def test_pow_value_exponent(submission, rng):
    V = submission.Value
    for _ in range(10):
        a, b = rng.uniform(0.2, 3.0), rng.uniform(-2, 2)
        out = V(a) ** V(b)
        assert math.isclose(out.data, a**b, rel_tol=1e-12), f"{a} ** {b} gave {out.data}"
        check_gradients(V, lambda x, y: x**y, [a, b])
    check_gradients(V, lambda y: 2.0**y, [rng.uniform(-2, 2)])  # reflected: number ** Value


# -------------------------------------------------------------------- 1.3 tanh

@pytest.mark.exercise("1.3")
def test_tanh_value_and_gradient(submission, rng):
    V = submission.Value
    for _ in range(20):
        x = rng.uniform(-4, 4)
        assert math.isclose(V(x).tanh().data, math.tanh(x), rel_tol=1e-12, abs_tol=1e-15)
        check_gradients(V, lambda v: v.tanh(), [x])


@pytest.mark.exercise("1.3")
def test_tanh_saturates_without_overflow(submission):
    V = submission.Value
    for x in (50.0, -50.0, 800.0):
        out = V(x).tanh()
        reference_backward(out)
        assert abs(out.data) == 1.0
        assert out._children[0].grad == pytest.approx(0.0, abs=1e-12)


# ------------------------------------------------------------ 1.4 topological

def _random_graph(V, rng, n_leaves=4, n_ops=30):
    """A random DAG built only from +, sigmoid and relu (not exercises), with reuse."""
    nodes = [V(rng.uniform(-1, 1)) for _ in range(n_leaves)]
    for _ in range(n_ops):
        pick = nodes[rng.randrange(len(nodes))]
        roll = rng.random()
        if roll < 0.15:
            nodes.append(pick.sigmoid())
        elif roll < 0.3:
            nodes.append(pick.relu() + rng.uniform(-1, 1))
        else:
            nodes.append(pick + nodes[rng.randrange(len(nodes))])
    return nodes[-1]


def _reachable(root):
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node._children)
    return seen


@pytest.mark.exercise("1.4")
def test_topological_order_properties(submission, rng):
    V = submission.Value
    for _ in range(20):
        root = _random_graph(V, rng)
        order = submission.topological_order(root)
        assert len(order) == len(set(order)), "a node appears more than once"
        assert set(order) == _reachable(root), "the order must hold exactly the nodes reachable from the root"
        position = {node: i for i, node in enumerate(order)}
        for node in order:
            for child in node._children:
                assert position[child] < position[node], "a node is listed before one of its children"
        assert order[-1] is root


@pytest.mark.exercise("1.4")
def test_topological_order_deep_chain(submission):
    V = submission.Value
    x = V(0.0)
    for _ in range(100_000):
        x = x + 1.0
    order = submission.topological_order(x)  # a recursive version raises RecursionError here
    assert len(order) == 200_001 and order[-1] is x


# ---------------------------------------------------------------- 1.5 backward

@pytest.fixture
def engine(submission, monkeypatch):
    """The learner's module with the reference topological sort, so 1.5 does not depend on 1.4."""
    monkeypatch.setattr(submission, "topological_order", reference.topological_order)
    return submission


def _learners_backward(out):
    out.backward()


@pytest.mark.exercise("1.5")
def test_backward_matches_finite_differences(engine, rng):
    V = engine.Value
    functions = [
        lambda a, b, c: ((a + b).exp() + (b - c).relu()) / (c.sigmoid() + 1.0),
        lambda a, b, c: (a + b + a).exp() - (c + b).sigmoid(),
        lambda a, b, c: ((a - b).exp() + 2.0).log() + (a + c) / 3.0,
    ]
    for f in functions:
        xs = [rng.uniform(-1, 1) for _ in range(3)]
        check_gradients(V, f, xs, backward=_learners_backward)


@pytest.mark.exercise("1.5")
def test_backward_with_reused_node(engine, rng):
    V = engine.Value
    a0 = rng.uniform(0.1, 1)
    a = V(a0)
    b = a + a
    c = b.exp() + b  # b is used twice: its gradient must be the sum of both paths
    c.backward()
    assert c.grad == 1.0
    assert b.grad == pytest.approx(math.exp(2 * a0) + 1)
    assert a.grad == pytest.approx(2 * (math.exp(2 * a0) + 1))


@pytest.mark.exercise("1.5")
def test_backward_accumulates_in_leaves(engine, rng):
    V = engine.Value
    x0 = rng.uniform(-1, 1)
    x = V(x0)
    y = (x + x).exp()
    y.backward()
    first = x.grad
    y.backward()
    assert x.grad == pytest.approx(2 * first), "leaf gradients must accumulate across backward() calls"
    assert y.grad == 1.0, "the output's gradient is d(out)/d(out) = 1 for each pass, not accumulated"


@pytest.mark.exercise("1.5")
def test_backward_deep_chain(engine):
    V = engine.Value
    x = V(1.0)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.backward()
    assert x.grad == 1.0
