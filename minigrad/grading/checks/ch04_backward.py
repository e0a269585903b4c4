"""Graded checks for chapter 04, exercise 4.5: the backward driver ``run_backward`` of ``minigrad.tensor.autograd``.

In the sandboxed child the learner's file *is* ``minigrad.tensor.autograd``, so
every ``loss.backward()`` there runs the learner's driver. The probes build
graphs chosen here (DAGs with reuse, constants and numbers, drawn as recipes
and tried smallest first; chains 20,000 ops deep; a small network) and send back ``.grad``
values and what happened; the same graphs are built here with the library's
reference, and the gradients compared (and for the network, checked against
central finite differences).
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.checks._tensors import analytic, gradcheck_here, reference_outputs
from minigrad.grading.probing import exercise, probe


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _array(t):
    return None if t is None else np.array(t.detach().numpy())


# ---------------------------------------------------------------- graphs (built the same way in the child and here)


def _recipe(gen, n_leaves: int = 4, n_ops: int = 30) -> list:
    """A random DAG of tensor ops with reuse and a constant, as steps: ``("tanh", i)``, ``("add", i, j)``, ...

    Node ``i`` is the ``i``-th leaf for ``i < n_leaves``, else the result of step ``i - n_leaves``.
    """
    steps = []
    for _ in range(n_ops):
        a, b = int(gen.integers(n_leaves + len(steps))), int(gen.integers(n_leaves + len(steps)))
        roll = gen.random()
        steps.append(("tanh", a) if roll < 0.2 else ("shift", a) if roll < 0.35 else ("mul", a, b) if roll < 0.5 else ("add", a, b))
    return [n_leaves, steps]


# The smallest graphs first: a leaf used twice by one op, two leaves, a leaf used by two ops.
SMALL_RECIPES = [[1, []], [2, []], [1, [("tanh", 0)]], [2, [("add", 0, 1)]], [1, [("shift", 0)]]]


def _random_graph(recipe, values):
    """(loss, leaves, constant, intermediates) for ``recipe``; ``values``: one array per leaf, then the constant's."""
    import minigrad.tensor as mt

    n_leaves, steps = recipe
    leaves = [mt.tensor(v, requires_grad=True) for v in values[:n_leaves]]
    constant = mt.tensor(values[n_leaves])  # needs no gradient
    nodes = list(leaves)
    for op, *args in steps:
        a, b = nodes[args[0]], nodes[args[-1]]
        nodes.append(a.tanh() if op == "tanh" else a * 0.5 + constant if op == "shift" else a * b if op == "mul" else a + b)
    loss = (nodes[-1] * nodes[-2 if len(nodes) > 1 else -1]).sum()
    return loss, leaves, constant, nodes[n_leaves:]


def _describe_recipe(recipe) -> str:
    """``a graph of 4 nodes: x0, x1 leaves; loss = (x1 * x0).sum()``: the tensors the loss depends on, counted."""
    n_leaves, steps = recipe
    names = [f"x{i}" for i in range(n_leaves)] + [f"t{i + n_leaves}" for i in range(len(steps))]
    text = {"tanh": "{a}.tanh()", "shift": "{a} * 0.5 + c", "mul": "{a} * {b}", "add": "{a} + {b}"}
    last = [len(names) - 1, len(names) - 2 if len(names) > 1 else len(names) - 1]
    used, todo = set(), list(last)
    while todo:
        i = todo.pop()
        if i not in used:
            used.add(i)
            todo += [] if i < n_leaves else list(steps[i - n_leaves][1:])
    lines = [f"{names[i]} = {text[steps[i - n_leaves][0]].format(a=names[steps[i - n_leaves][1]], b=names[steps[i - n_leaves][-1]])}"
             for i in sorted(used) if i >= n_leaves]
    shifts = any(steps[i - n_leaves][0] == "shift" for i in used if i >= n_leaves)
    count = len(used) + sum(1 for i in used if i >= n_leaves and steps[i - n_leaves][0] == "shift") + shifts + 2
    leaves = [names[i] for i in sorted(used) if i < n_leaves]
    constant = "; c a constant (no grad)" if shifts else ""
    return (f"a graph of {count} nodes: {'leaf' if len(leaves) == 1 else 'leaves'} {', '.join(leaves)} of shape (3,){constant}; "
            + "".join(f"{line}; " for line in lines) + f"loss = ({names[last[0]]} * {names[last[1]]}).sum()")


def _reused(values):
    """``x`` used several times: by two ops, twice by one op, and through a shared intermediate."""
    import minigrad.tensor as mt

    x = mt.tensor(values, requires_grad=True)
    h = x.tanh()
    loss = (x * x).sum() + (h + h * x).sum() + x.sum()
    return loss, x


def _chain(values, length: int):
    import minigrad.tensor as mt

    x = mt.tensor(values, requires_grad=True)
    y = x
    for i in range(length):
        y = y * 0.9999 if i % 100 == 0 else y + 0.001
    return y.sum(), x


def _saving_graph(values):
    """A graph whose nodes keep saved arrays (exp saves its output, mul its operands)."""
    import minigrad.tensor as mt

    w = mt.tensor(values, requires_grad=True)
    return (w.exp() * w).sum(), w


def _leaf_grads(leaves):
    return [_array(leaf.grad) for leaf in leaves]


# ---------------------------------------------------------------- probes (child side)


@probe
def random_graph(submission, state, recipe, values):
    loss, leaves, constant, intermediates = _random_graph(recipe, values)
    loss.backward()
    return {
        "leaves": _leaf_grads(leaves),
        "constant": constant.grad is None,
        "intermediates": sum(t.grad is not None for t in intermediates),
    }


@probe
def reused(submission, state, values):
    loss, x = _reused(values)
    loss.backward()
    return _array(x.grad)


def _square(values):
    import minigrad.tensor as mt

    x = mt.tensor(values, requires_grad=True)
    return (x * x).sum(), x


FIRST_GRAPHS = {  # name -> (build, description), smallest first
    "square": (_square, "a graph of 3 nodes: loss = (x * x).sum()"),
    "reused": (_reused, "a graph of 10 nodes: h = x.tanh(); loss = (x * x).sum() + (h + h * x).sum() + x.sum()"),
}
SECOND_GRAPH = "then a second graph of 4 nodes on the same leaf: (x * c).sum() with a constant c"
SAVING_GRAPH = "a graph of 4 nodes that saves tensors for backward: loss = (w.exp() * w).sum()"
RETAINED_GRAPH = "a graph of 5 nodes: h = x.tanh(); h.retain_grad(); g = h * 3.0; loss = (g * h).sum()"


@probe
def accumulate(submission, state, first, second, graph="reused"):
    """Two backward calls through two graphs on the same leaf: .grad after each."""
    import minigrad.tensor as mt

    loss, x = FIRST_GRAPHS[graph][0](first)
    loss.backward()
    after_one = _array(x.grad)
    (x * mt.tensor(second)).sum().backward()  # the same leaf in a second graph: d/dx = second
    return {"one": after_one, "two": _array(x.grad)}


@probe
def retained(submission, state, values):
    import minigrad.tensor as mt

    x = mt.tensor(values, requires_grad=True)
    h = x.tanh()
    h.retain_grad()
    g = h * 3.0  # a non-leaf that did not ask
    loss = (g * h).sum()
    loss.backward()
    return {"h": _array(h.grad), "g": g.grad is None, "x": _array(x.grad)}


@probe
def second_backward(submission, state, values, retain):
    """backward twice through one graph; the first with retain_graph=``retain``."""
    loss, w = _saving_graph(values)
    loss.backward(retain_graph=retain)
    first = _array(w.grad)
    try:
        loss.backward()
    except Exception as err:  # noqa: BLE001 (which error it is, is the answer)
        return {"first": first, "error": type(err).__name__, "message": str(err)[:300], "second": _array(w.grad)}
    return {"first": first, "error": None, "message": "", "second": _array(w.grad)}


@probe
def deep_chain(submission, state, values, length):
    loss, x = _chain(values, length)
    loss.backward()
    return _array(x.grad)


@probe
def gradients(submission, state, name, arrays, requires, weights):
    return analytic(FUNCTIONS[name], arrays, requires, weights)


FUNCTIONS = {
    "network": lambda x, w1, b1, w2, labels: -(
        ((x @ w1 + b1).tanh() @ w2).log_softmax(dim=1) * _one_hot(labels, w2.shape[1])
    ).sum() / x.shape[0],
    "shared_weights": lambda x, w: ((x @ w).tanh() @ w.T * x).sum(dim=1),
}


def _one_hot(labels, classes):
    import minigrad.tensor as mt

    return mt.one_hot(labels, classes).double()


# ---------------------------------------------------------------- helpers (grader side)


def _close(got, expected, what: str, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    assert got is not None, f"{what}: .grad is None"
    got = np.asarray(got)
    assert got.shape == np.shape(expected), f"{what}: .grad has shape {got.shape}, expected {np.shape(expected)}"
    if not np.allclose(got, expected, rtol=rtol, atol=atol):
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(got - expected)), got.shape)) if got.ndim else ()
        raise AssertionError(f"{what}: wrong gradient at {worst}: got {got[worst]:.8g}, expected {np.asarray(expected)[worst]:.8g}")


def _reference(build, *args):
    out = build(*args)
    loss, leaf = out[0], out[1]
    loss.backward()
    return leaf.grad.numpy()


# ---------------------------------------------------------------- checks


@exercise("4.5")
def test_random_graphs(learner, rng):
    gen = _np(rng)
    drawn = [_recipe(gen, int(gen.integers(1, 4)), n_ops) for n_ops in range(1, 5) for _ in range(2)]
    drawn += [_recipe(gen) for _ in range(6)]
    cases = smallest_first([(r, [gen.standard_normal(3) for _ in range(r[0] + 1)]) for r in SMALL_RECIPES + drawn],
                           lambda case: int(_describe_recipe(case[0]).split()[3]))
    where = learner.defined_at("run_backward")
    first_failure(cases, lambda case: _check_random_graph(learner, where, *case), lambda case: _describe_recipe(case[0]))


def _check_random_graph(learner, where, recipe, values):
    got = learner.probe("random_graph", recipe, values)
    loss, leaves, _, _ = _random_graph(recipe, values)
    loss.backward()
    what = f"your run_backward ({where})"
    assert isinstance(got["leaves"], list) and len(got["leaves"]) == len(leaves), f"{what}: one .grad per leaf"
    for i, (mine, leaf) in enumerate(zip(got["leaves"], leaves)):
        if leaf.grad is None:
            assert mine is None, f"{what}: leaf x{i} is not used by the loss, yet it got a .grad"
        else:
            _close(mine, leaf.grad.numpy(), f"{what}: x{i}.grad")
    assert got["constant"] is True, f"{what}: a tensor that does not require grad got a .grad"
    assert got["intermediates"] == 0, (
        f"{what}: {got['intermediates']} intermediate (non-leaf) tensors kept a .grad; only leaves "
        f"and tensors that called retain_grad() keep one"
    )


@exercise("4.5")
def test_a_tensor_used_several_times_gets_the_sum(learner, rng):
    gen = _np(rng)
    values = gen.standard_normal(int(gen.integers(2, 6)))
    got = learner.probe("reused", values)
    _close(got, _reference(_reused, values),
           "x used by several ops (x * x, tanh(x) used twice, x.sum()): its gradient must add every use's contribution")


@exercise("4.5")
def test_leaves_accumulate_across_backward_calls(learner, rng):
    gen = _np(rng)
    n = int(gen.integers(2, 6))
    first, second = gen.standard_normal(n), gen.standard_normal(n)
    where = learner.defined_at("run_backward")

    def two_graphs(graph):
        got = learner.probe("accumulate", first, second, graph)
        one = _reference(FIRST_GRAPHS[graph][0], first)
        _close(got["one"], one, f"your run_backward ({where}): x.grad after the first backward()")
        _close(got["two"], one + second, f"your run_backward ({where}): x.grad after a second backward() through "
                                         f"another graph: .grad must add up, not be replaced")

    first_failure(FIRST_GRAPHS, two_graphs, lambda graph: f"{FIRST_GRAPHS[graph][1]}; {SECOND_GRAPH}")
    values = np.random.default_rng(int(gen.integers(2**31))).standard_normal(n)

    def twice_retained(values):
        got = learner.probe("second_backward", values, True)
        loss, w = _saving_graph(values)
        loss.backward()
        once = w.grad.numpy()
        _close(got["first"], once, f"your run_backward ({where}): w.grad after backward(retain_graph=True)")
        assert got["error"] is None, (f"your run_backward ({where}): backward twice with retain_graph=True on the "
                                      f"first: the second raised {got['error']}: {got['message']}")
        _close(got["second"], 2 * once, "after two backward() calls through one graph: .grad must be the sum of both")

    first_failure([values], twice_retained, lambda _: f"{SAVING_GRAPH}, backward(retain_graph=True) then backward()")


@exercise("4.5")
def test_retain_grad_keeps_a_non_leaf_gradient(learner, rng):
    gen = _np(rng)
    values = gen.standard_normal(int(gen.integers(2, 6)))
    first_failure([values], lambda v: _check_retained(learner, v), lambda _: RETAINED_GRAPH)


def _check_retained(learner, values):
    import minigrad.tensor as mt

    where = learner.defined_at("run_backward")
    got = learner.probe("retained", values)
    x = mt.tensor(values, requires_grad=True)
    h = x.tanh()
    h.retain_grad()
    g = h * 3.0
    (g * h).sum().backward()
    _close(got["h"], h.grad.numpy(), f"your run_backward ({where}): h.grad (the sum of both uses of h)")
    assert got["g"] is True, f"your run_backward ({where}): g = h * 3 did not call retain_grad(), yet it kept a .grad"
    _close(got["x"], x.grad.numpy(), f"your run_backward ({where}): the leaf x")


@exercise("4.5")
def test_without_retain_graph_a_second_backward_raises(learner, rng):
    gen = _np(rng)
    values = gen.standard_normal(int(gen.integers(2, 6)))
    first_failure([values], lambda v: _check_second_raises(learner, v), lambda _: f"{SAVING_GRAPH}, backward() twice")


def _check_second_raises(learner, values):
    got = learner.probe("second_backward", values, False)
    assert got["error"] is not None, (
        f"your run_backward ({learner.defined_at('run_backward')}): the second backward() did not raise: the first "
        f"backward must free what each node saved, so that the second one fails with the library's error"
    )
    assert got["error"] == "RuntimeError" and "second time" in got["message"], (
        f"the second backward() raised {got['error']}: {got['message']} — expected the library's RuntimeError "
        f"about a second backward through freed saved tensors"
    )


@exercise("4.5")
def test_a_graph_20000_ops_deep(learner, rng):
    gen = _np(rng)
    values = gen.standard_normal(3)
    got = learner.probe("deep_chain", values, 20_000)  # recursion over the graph overflows Python's stack here
    _close(got, _reference(_chain, values, 20_000), "a chain of 20,000 ops", rtol=1e-7)


@exercise("4.5")
def test_gradients_of_a_network_match_finite_differences(learner, rng):
    gen = _np(rng)
    n, d, h, c = 4, 3, int(gen.integers(2, 5)), 3
    arrays = [gen.standard_normal((n, d)), gen.standard_normal((d, h)), gen.standard_normal(h),
              gen.standard_normal((h, c)), gen.integers(0, c, size=n)]
    _check_network(learner, rng, "network", arrays, [True, True, True, True, False], "a two-layer network's cross-entropy")
    shared = [gen.standard_normal((n, d)), gen.standard_normal((d, d))]
    _check_network(learner, rng, "shared_weights", shared, [True, True], "a weight matrix used twice (w and w.T)")


def _check_network(learner, rng, name, arrays, requires, what):
    weights = [np.random.default_rng(rng.randrange(2**31)).standard_normal(o.shape)
               for o in reference_outputs(FUNCTIONS[name], arrays)]
    answer = learner.probe("gradients", name, list(arrays), list(requires), weights)
    for i, (got, r) in enumerate(zip(answer["grads"], requires)):
        assert not r or got is not None, f"{what}: input {i} requires grad but got no .grad"
    gradcheck_here(FUNCTIONS[name], arrays, requires, answer, weights, what)
