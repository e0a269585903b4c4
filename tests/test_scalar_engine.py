"""Stage 1 engine: every op against finite differences, reuse, deep graphs, accumulation, errors."""

import math
import random

import pytest

from minigrad.scalar import Value, dot, gradcheck, topological_order, vsum

UNARY = {
    "neg": lambda x: -x,
    "exp": lambda x: x.exp(),
    "log": lambda x: (x * x + 0.5).log(),
    "tanh": lambda x: x.tanh(),
    "relu": lambda x: x.relu(),
    "sigmoid": lambda x: x.sigmoid(),
    "pow2": lambda x: x**2,
    "pow3": lambda x: x**3,
    "pow_half": lambda x: (x * x + 1.0) ** 0.5,
    "pow_neg": lambda x: (x * x + 1.0) ** -1.5,
    "rpow": lambda x: 2.0**x,
    "rsub": lambda x: 3.0 - x,
    "rdiv": lambda x: 3.0 / (x * x + 1.0),
    "radd": lambda x: 3.0 + x,
    "rmul": lambda x: 3.0 * x,
}

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 0.5),
    "pow_value": lambda a, b: (a * a + 0.5) ** b,
    "mixed": lambda a, b: ((a * b).tanh() + (a - b).sigmoid() * b.exp()) / (1.0 + a * a),
    "dot": lambda a, b: dot([a, b, a], [b, 2.0, a]),
    "vsum": lambda a, b: vsum([a, b, a * b, 3.0]),
}


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_match_finite_differences(name):
    rng = random.Random(name)
    for _ in range(5):
        x = rng.uniform(-2, 2)
        if name == "relu" and abs(x) < 1e-3:
            continue
        result = gradcheck(UNARY[name], [x])
        assert result.ok, str(result)


@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_match_finite_differences(name):
    rng = random.Random(name)
    for _ in range(5):
        result = gradcheck(BINARY[name], [rng.uniform(-2, 2), rng.uniform(-2, 2)])
        assert result.ok, str(result)


def test_forward_values():
    a, b = Value(2.0), Value(-3.0)
    assert (a + b).data == -1.0 and (a - b).data == 5.0 and (a * b).data == -6.0
    assert (a / b).data == pytest.approx(-2 / 3) and (a**b).data == pytest.approx(0.125)
    assert (a**3).data == 8.0 and (-a).data == -2.0 and (b**2).data == 9.0
    assert a.exp().data == pytest.approx(math.exp(2)) and a.log().data == pytest.approx(math.log(2))
    assert b.relu().data == 0.0 and a.relu().data == 2.0
    assert Value(0.0).sigmoid().data == 0.5


def test_reuse_accumulates_over_paths():
    a = Value(3.0)
    b = a + a
    c = b * b
    c.backward()
    assert b.grad == 12.0  # dc/db = 2b
    assert a.grad == 24.0  # dc/da = 2b * 2
    x = Value(1.5)
    y = x * x * x
    y.backward()
    assert x.grad == pytest.approx(3 * 1.5**2)


def test_pow_with_value_exponent_gradients():
    a, b = Value(2.0), Value(3.0)
    c = a**b
    c.backward()
    assert c.data == 8.0
    assert a.grad == pytest.approx(3 * 2.0**2)
    assert b.grad == pytest.approx(8.0 * math.log(2.0))


def test_division_gradients():
    a, b = Value(3.0), Value(4.0)
    (a / b).backward()
    assert a.grad == pytest.approx(0.25) and b.grad == pytest.approx(-3 / 16)


def test_relu_derivative_at_zero_is_zero():
    x = Value(0.0)
    x.relu().backward()
    assert x.grad == 0.0


def test_deep_chain_of_100k_nodes():
    x = Value(0.5)
    y = x
    for _ in range(100_000):
        y = y * 1.0 + 0.0
    y.backward()  # no RecursionError
    assert x.grad == 1.0
    assert len(topological_order(y)) == 1 + 4 * 100_000  # x, then per step: constant, *, constant, +


def test_topological_order_puts_children_first():
    a, b = Value(1.0), Value(2.0)
    c = a * b
    d = c + a
    order = topological_order(d)
    position = {n: i for i, n in enumerate(order)}
    assert order[-1] is d and position[a] < position[c] and position[b] < position[c] < position[d]
    assert len(order) == 4


def test_gradients_accumulate_across_backward_calls_until_zero_grad():
    x = Value(2.0)
    y = x * x
    y.backward()
    y.backward()
    assert x.grad == 8.0  # 2 * 2x: leaves accumulate, like PyTorch
    assert y.grad == 1.0  # intermediate and output nodes hold the latest pass only
    y.zero_grad()
    assert x.grad == 0.0 and y.grad == 0.0
    y.backward()
    assert x.grad == 4.0


def test_backward_with_upstream_gradient():
    x = Value(2.0)
    (x * 3.0).backward(gradient=0.5)
    assert x.grad == 1.5


def test_sigmoid_is_stable_for_large_inputs():
    assert Value(-1000.0).sigmoid().data == 0.0
    assert Value(1000.0).sigmoid().data == 1.0


@pytest.mark.parametrize(
    "make, error, text",
    [
        (lambda: Value(1.0) + "a", TypeError, "unsupported operand types Value and str"),
        (lambda: "a" * Value(1.0), TypeError, "convert with float(x)"),
        (lambda: Value(1.0) ** "x", TypeError, "**"),
        (lambda: Value("1"), TypeError, "data must be an int or float"),
        (lambda: Value(True), TypeError, "data must be an int or float"),
        (lambda: Value(-1.0).log(), ValueError, "log: input must be positive, got -1"),
        (lambda: Value(0.0).log(), ValueError, "log: input must be positive"),
        (lambda: Value(1.0) / 0.0, ZeroDivisionError, "divisor is 0"),
        (lambda: Value(0.0) ** -1, ZeroDivisionError, "pow: 0 ** -1"),
        (lambda: Value(-2.0) ** 0.5, ValueError, "negative base, fractional exponent"),
        (lambda: Value(-2.0) ** Value(2.0), ValueError, "needs a > 0"),
        (lambda: Value(1000.0).exp(), OverflowError, "exp: exp(1000) overflows"),
        (lambda: dot([Value(1.0)], [1.0, 2.0]), ValueError, "dot: 1 weights but 2 inputs"),
        (lambda: vsum([]), ValueError, "vsum: needs at least one value"),
    ],
)
def test_errors_are_clear(make, error, text):
    with pytest.raises(error, match=None) as info:
        make()
    assert text in str(info.value)


def test_gradcheck_catches_a_wrong_derivative():
    class Broken(Value):
        __slots__ = ()

        def tanh(self):
            t = math.tanh(self.data)
            return Value(t, (self,), (1.0 - t,), "tanh")  # wrong: should be 1 - t**2

    assert gradcheck(lambda x: x.tanh(), [0.7]).ok
    bad = gradcheck(lambda x: Broken.tanh(x), [0.7])
    assert not bad.ok and "MISMATCH" in str(bad)


def test_matches_pytorch_on_a_sanity_set():
    torch = pytest.importorskip("torch")
    rng = random.Random(0)
    for name, f in {**BINARY}.items():
        if name in ("dot", "vsum"):
            continue
        xs = [rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5)]
        ours = [Value(x) for x in xs]
        out = f(*ours)
        out.backward()
        theirs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
        ref = f(*theirs)
        ref.backward()
        assert out.data == pytest.approx(ref.item(), rel=1e-9), name
        for o, t in zip(ours, theirs):
            assert o.grad == pytest.approx(t.grad.item(), rel=1e-7, abs=1e-10), name


def test_fused_ops_equal_the_chains_of_plus_and_times_they_replace():
    rng = random.Random(11)
    ws, xs = [rng.uniform(-2, 2) for _ in range(6)], [rng.uniform(-2, 2) for _ in range(6)]
    fused_w, fused_x = [Value(w) for w in ws], [Value(x) for x in xs]
    chain_w, chain_x = [Value(w) for w in ws], [Value(x) for x in xs]
    fused = dot(fused_w, fused_x) + vsum(fused_x).tanh()
    chain = sum((w * x for w, x in zip(chain_w, chain_x)), Value(0.0)) + sum(chain_x, Value(0.0)).tanh()
    fused.backward()
    chain.backward()
    assert fused.data == pytest.approx(chain.data, rel=1e-12)
    for a, b in zip(fused_w + fused_x, chain_w + chain_x):
        assert a.grad == pytest.approx(b.grad, rel=1e-12, abs=1e-15)
    assert len(topological_order(fused)) < len(topological_order(chain))
