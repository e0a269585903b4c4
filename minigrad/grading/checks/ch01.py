"""Graded checks for chapter 01 (exercises 1.1-1.3), on fresh random inputs each run.

The checks run in the grader; the learner's ``Value`` lives in the sandboxed
child. A probe builds an expression from the learner's ``Value`` and sends
back its graph as plain data: each node's ``data``, its children and its
``_local_grads``. The grader then runs the chain rule on that graph itself
(so 1.1, the local derivatives, does not depend on the learner's backward), and compares the
gradients with central differences of the *library's* ``Value`` (computed
here, never in the child). For 1.3 the grader computes the topological order
of the learner's graph and hands it to the learner's ``backward`` (so 1.3 does
not depend on 1.2).
"""

import math

import numpy as np

from minigrad.grading.checks._graph_order import assert_order, children_first, number_graph, order_answer
from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe, sequence
from minigrad.grading.recursion import require_iterative

# ------------------------------------------------------------------ expressions
# name -> f(*values, *constants); built from the learner's Value in the child, from the library's here.

EXPRESSIONS = {
    "mul": lambda x, y: x * y,
    "mul_by_number": lambda x, k: x * k,
    "number_times": lambda x, k: k * x,
    "square": lambda x: x * x,
    "mul_reuse": lambda x, y: (x * y + x) * y,
    "pow_number": lambda x, n: x**n,
    "pow_value": lambda x, y: x**y,
    "number_pow": lambda y: 2.0**y,
    "tanh": lambda v: v.tanh(),
    "mixed_1": lambda a, b, c: ((a + b).exp() + (b - c).relu()) / (c.sigmoid() + 1.0),
    "mixed_2": lambda a, b, c: (a + b + a).exp() - (c + b).sigmoid(),
    "mixed_3": lambda a, b, c: ((a - b).exp() + 2.0).log() + (a + c) / 3.0,
}


def _children(value):
    return sequence(value._children, "Value._children")


def _graph_of(root):
    """(nodes, children) of a Value graph, numbered alike on both sides (see ``_graph_order``)."""
    return number_graph(root, _children)


@probe
def build(submission, state, name, xs, constants):
    """Build expression ``name`` on learner Values; answer its graph (data, children, local gradients)."""
    V = submission.Value
    leaves = [V(x) for x in xs]
    out = EXPRESSIONS[name](*leaves, *constants)
    nodes, children = _graph_of(out)
    state.update(nodes=nodes, leaves=leaves, out=out)
    index = {id(n): i for i, n in enumerate(nodes)}
    return {
        "data": [n.data for n in nodes],
        "children": children,
        "local": [list(sequence(n._local_grads, "Value._local_grads")) for n in nodes],
        "leaves": [index.get(id(leaf), -1) for leaf in leaves],
    }


_order = children_first  # a topological order (children first) of a graph given as child-index lists; 0 is the root


def chain_rule(graph) -> list[float]:
    """d(root)/d(node) for every node of a serialized graph, by the library's rule, computed here."""
    n = len(graph["children"])
    if len(graph["local"]) != n or any(len(c) != len(l) for c, l in zip(graph["children"], graph["local"])):
        raise AssertionError("every node needs one local derivative per child (_local_grads matches _children)")
    grads = [0.0] * n
    grads[0] = 1.0
    for i in reversed(_order(graph["children"])):
        for child, local in zip(graph["children"][i], graph["local"][i]):
            grads[child] += float(local) * grads[i]
    return grads


def _reference(name, xs, constants=()):
    from minigrad.scalar.engine import Value

    return EXPRESSIONS[name](*(Value(x) for x in xs), *constants).data


def check_gradients(learner, name, xs, constants=(), learners_backward=False, tol=1e-5):
    """Each input's gradient, from the learner's graph, against central differences of the library's Value."""
    from minigrad.scalar.gradcheck import numerical_gradient

    graph = learner.probe("build", name, list(xs), list(constants))
    if learners_backward:
        grads = learner.probe("backward_in_order", _order(graph["children"]))["leaves"]
    else:
        node_grads = chain_rule(graph)
        grads = [node_grads[i] if i >= 0 else 0.0 for i in graph["leaves"]]
    numeric = numerical_gradient(lambda *a: _reference(name, a, constants), xs)
    for i, (got, expected) in enumerate(zip(grads, numeric)):
        assert type(got) in (int, float, np.float64) and math.isclose(got, expected, rel_tol=1e-4, abs_tol=tol), (
            f"gradient of input #{i} (= {xs[i]:.6g}): backward gives {got!r}, finite differences give {expected:.8g}"
        )
    return graph


def _data(learner, name, xs, constants=()):
    got = learner.probe("build", name, list(xs), list(constants))["data"][0]
    assert type(got) in (int, float, np.float64), f"Value.data must be a number, got {got!r}"
    return got


# ------------------------------------------- 1.1 local derivatives: multiply

@exercise("1.1")
def test_mul_value_and_local_grads(learner, rng):
    for _ in range(20):
        a, b = rng.uniform(-5, 5), rng.uniform(-5, 5)
        out = _data(learner, "mul", [a, b])
        assert math.isclose(out, a * b, rel_tol=1e-12, abs_tol=1e-12), f"{a} * {b} gave {out}"
        check_gradients(learner, "mul", [a, b])


@exercise("1.1")
def test_mul_with_numbers_and_reuse(learner, rng):
    a, k = rng.uniform(-3, 3), rng.uniform(-3, 3)
    check_gradients(learner, "mul_by_number", [a], [k])
    check_gradients(learner, "number_times", [a], [k])
    check_gradients(learner, "square", [a])  # reuse: d(x*x)/dx = 2x
    check_gradients(learner, "mul_reuse", [a, k])


# ---------------------------------------------- 1.1 local derivatives: power

@exercise("1.1")
def test_pow_number_exponent(learner, rng):
    for n in (2, 3, 0.5, -1, -2.5, rng.uniform(-3, 3)):
        a = rng.uniform(0.2, 3.0)
        out = _data(learner, "pow_number", [a], [n])
        assert math.isclose(out, a**n, rel_tol=1e-12), f"{a} ** {n} gave {out}"
        check_gradients(learner, "pow_number", [a], [n])
    check_gradients(learner, "pow_number", [rng.uniform(-3, -0.5)], [3])  # integer power of a negative base


@exercise("1.1")
def test_pow_value_exponent(learner, rng):
    for _ in range(10):
        a, b = rng.uniform(0.2, 3.0), rng.uniform(-2, 2)
        out = _data(learner, "pow_value", [a, b])
        assert math.isclose(out, a**b, rel_tol=1e-12), f"{a} ** {b} gave {out}"
        check_gradients(learner, "pow_value", [a, b])
    check_gradients(learner, "number_pow", [rng.uniform(-2, 2)])  # reflected: number ** Value


# ----------------------------------------------- 1.1 local derivatives: tanh

@exercise("1.1")
def test_tanh_value_and_gradient(learner, rng):
    for _ in range(20):
        x = rng.uniform(-4, 4)
        out = _data(learner, "tanh", [x])
        assert math.isclose(out, math.tanh(x), rel_tol=1e-12, abs_tol=1e-15), f"tanh({x}) gave {out}"
        check_gradients(learner, "tanh", [x])


@exercise("1.1")
def test_tanh_saturates_without_overflow(learner, rng):
    for x in (50.0, -50.0, 800.0):
        graph = learner.probe("build", "tanh", [x], [])
        out = graph["data"][0]
        assert type(out) in (int, float, np.float64) and abs(out) == 1.0, f"tanh({x}) gave {out!r}"
        grads = chain_rule(graph)
        leaf = graph["leaves"][0]
        assert leaf >= 0 and abs(grads[leaf]) <= 1e-12, f"the gradient of tanh at {x} must be 0, got {grads[leaf]}"


# ------------------------------------------------------------ 1.2 topological

# The smallest graphs first: one node, a chain, a node used twice by one op, a diamond.
SMALL_RECIPES = [
    [("leaf", 0.5)],
    [("leaf", 0.5), ("sigmoid", 0)],
    [("leaf", 0.5), ("add", 0, 0)],
    [("leaf", 0.5), ("leaf", -0.25), ("add", 0, 1)],
    [("leaf", 0.5), ("sigmoid", 0), ("add", 1, 0)],
    [("leaf", 0.5), ("sigmoid", 0), ("sigmoid", 1)],
    [("leaf", 0.5), ("leaf", -0.25), ("add", 0, 1), ("add", 2, 0)],
    [("leaf", 0.5), ("sigmoid", 0), ("sigmoid", 0), ("add", 1, 2)],
]


def describe_graph(root) -> str:
    """``a graph of 3 nodes: n0 = n1 + n2, n1 = sigmoid(n2), n2 = Value(0.5)``, numbered as the probes number it."""
    nodes, children = _graph_of(root)
    parts = []
    for i, (node, kids) in enumerate(zip(nodes, children)):
        if not kids:
            parts.append(f"n{i} = Value({node.data:.3g})")
        elif node._op in ("+", "-", "*", "/") and len(kids) == 2:
            parts.append(f"n{i} = n{kids[0]} {node._op} n{kids[1]}")
        else:
            parts.append(f"n{i} = {node._op}({', '.join(f'n{k}' for k in kids)})")
    return f"a graph of {len(nodes)} nodes: {', '.join(parts)}"


def _recipe(rng, n_leaves=4, n_ops=30):
    """A random DAG built only from +, sigmoid and relu (not exercises), with reuse, as a list of steps."""
    steps = [("leaf", rng.uniform(-1, 1)) for _ in range(n_leaves)]
    for _ in range(n_ops):
        pick = rng.randrange(len(steps))
        roll = rng.random()
        if roll < 0.15:
            steps.append(("sigmoid", pick))
        elif roll < 0.3:
            steps.append(("relu_plus", pick, rng.uniform(-1, 1)))
        else:
            steps.append(("add", pick, rng.randrange(len(steps))))
    return steps


def _build_recipe(V, steps):
    nodes = []
    for step in steps:
        if step[0] == "leaf":
            nodes.append(V(step[1]))
        elif step[0] == "sigmoid":
            nodes.append(nodes[step[1]].sigmoid())
        elif step[0] == "relu_plus":
            nodes.append(nodes[step[1]].relu() + step[2])
        else:
            nodes.append(nodes[step[1]] + nodes[step[2]])
    return nodes[-1]


def _chain(V, length):
    x = V(0.0)
    for _ in range(length):
        x = x + 1.0
    return x


def _answer_order(root, order):
    return order_answer(root, order, _children, "children")


@probe
def order_of_recipe(submission, state, steps):
    root = _build_recipe(submission.Value, [tuple(s) for s in steps])
    return _answer_order(root, submission.topological_order(root))


@probe
def order_of_chain(submission, state, length):
    root = _chain(submission.Value, length)
    return _answer_order(root, submission.topological_order(root))


def assert_topological(answer, expected_children, what=""):
    """The learner's order holds each node of the (grader-built) graph once, children first, root last."""
    assert answer["children"] == expected_children, (
        f"{what}the graph of your Values differs from the library's for the same expression "
        f"(+, relu and sigmoid are given code: keep their _children as they were)"
    )
    assert_order(answer["order"].tolist(), expected_children, what, "children")


@exercise("1.2")
def test_topological_order_properties(learner, rng):
    from minigrad.scalar.engine import Value

    drawn = [_recipe(rng, rng.randint(1, 3), n_ops) for n_ops in range(1, 6) for _ in range(3)]
    drawn += [_recipe(rng) for _ in range(20)]
    recipes = smallest_first(SMALL_RECIPES + drawn, lambda steps: len(_graph_of(_build_recipe(Value, steps))[0]))
    where = learner.defined_at("topological_order")

    def attempt(steps):
        answer = learner.probe("order_of_recipe", steps)
        assert_topological(answer, _graph_of(_build_recipe(Value, steps))[1], f"your topological_order ({where}): ")

    first_failure(recipes, attempt, lambda steps: describe_graph(_build_recipe(Value, steps)))


@exercise("1.2")
def test_topological_order_deep_chain(learner, rng):
    from minigrad.scalar.engine import Value

    answer = learner.probe("order_of_chain", 100_000)  # a recursive version raises RecursionError here
    assert len(answer["order"]) == 200_001, f"a chain of 100000 additions has 200001 nodes, the order has {len(answer['order'])}"
    assert_topological(answer, _graph_of(_chain(Value, 100_000))[1])


@exercise("1.2", required=True)
def test_topological_order_is_iterative(learner, rng):
    """Required: a recursive sort (even with a raised recursion limit) scores nothing on 1.2."""
    require_iterative(learner.source, "topological_order")
    answer, depth = learner.probe("order_of_chain", 5000, depth=True)
    assert depth < 50, (
        f"topological_order reached a call depth of {depth} on a chain of 5000 additions: "
        f"it must be iterative (an explicit stack), not recursive"
    )


# ---------------------------------------------------------------- 1.3 backward

def _reused(V, a0):
    a = V(a0)
    b = a + a
    c = b.exp() + b  # b is used twice: its gradient must be the sum of both paths
    return c, [c, b, a]


def _accumulating(V, x0):
    x = V(x0)
    y = (x + x).exp()
    return y, [y, x]


def _deep(V, _):
    x = V(1.0)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    return y, [y, x]


GRAPHS = {"reused": _reused, "accumulating": _accumulating, "deep": _deep}


@probe
def build_named(submission, state, name, x0):
    out, named = GRAPHS[name](submission.Value, x0)
    nodes, children = _graph_of(out)
    state.update(nodes=nodes, out=out, named=named)
    return children


@probe
def backward_in_order(submission, state, order, passes=1):
    """Run the learner's ``out.backward()`` with the grader's topological order in place of theirs."""
    nodes = state["nodes"]
    ordered = [nodes[i] for i in order]
    submission.topological_order = lambda root: list(ordered)
    grads = []
    for _ in range(passes):
        state["out"].backward()
        grads.append([n.grad for n in state.get("named", state.get("leaves", []))])
    return {"passes": grads, "leaves": grads[-1]}


def _learners_backward(learner, name, x0, passes=1):
    children = learner.probe("build_named", name, x0)
    return learner.probe("backward_in_order", _order(children), passes)["passes"]


@exercise("1.3")
def test_backward_matches_finite_differences(learner, rng):
    for name in ("mixed_1", "mixed_2", "mixed_3"):
        xs = [rng.uniform(-1, 1) for _ in range(3)]
        check_gradients(learner, name, xs, learners_backward=True)


def _approx(got, expected, rel=1e-6, abs=1e-12):
    return type(got) in (int, float, np.float64) and math.isclose(got, expected, rel_tol=rel, abs_tol=abs)


@exercise("1.3")
def test_backward_with_reused_node(learner, rng):
    a0 = rng.uniform(0.1, 1)
    [[c, b, a]] = _learners_backward(learner, "reused", a0)
    assert c == 1.0, f"the output's gradient must be 1.0, got {c!r}"
    assert _approx(b, math.exp(2 * a0) + 1), f"b is used twice: its gradient is the sum of both paths, got {b!r}"
    assert _approx(a, 2 * (math.exp(2 * a0) + 1)), f"a's gradient: expected {2 * (math.exp(2 * a0) + 1)}, got {a!r}"


@exercise("1.3")
def test_backward_accumulates_in_leaves(learner, rng):
    x0 = rng.uniform(-1, 1)
    [[_, first], [y, second]] = _learners_backward(learner, "accumulating", x0, passes=2)
    assert _approx(first, 2 * math.exp(2 * x0)), f"d exp(2x)/dx: expected {2 * math.exp(2 * x0)}, got {first!r}"
    assert _approx(second, 2 * first), "leaf gradients must accumulate across backward() calls"
    assert y == 1.0, "the output's gradient is d(out)/d(out) = 1 for each pass, not accumulated"


@exercise("1.3")
def test_backward_deep_chain(learner, rng):
    [[_, x]] = _learners_backward(learner, "deep", 0.0)
    assert x == 1.0, f"the gradient of x + 1 + 1 + ... with respect to x is 1, got {x!r}"
