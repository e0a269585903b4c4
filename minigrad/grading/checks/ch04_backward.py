"""Graded checks for chapter 04, exercise 4.5: the backward driver ``run_backward`` of ``minigrad.tensor.autograd``.

In the sandboxed child the learner's file *is* ``minigrad.tensor.autograd``, so
every ``loss.backward()`` there runs the learner's driver. The probes build
graphs from a seed chosen here (random DAGs with reuse, constants and
numbers; chains 20,000 ops deep; a small network) and send back ``.grad``
values and what happened; the same graphs are built here with the library's
reference, and the gradients compared (and for the network, checked against
central finite differences).
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._tensors import analytic, gradcheck_here, reference_outputs
from minigrad.grading.probing import exercise, probe


def _np(rng) -> np.random.Generator:
    return np.random.default_rng(rng.randrange(2**32))


def _array(t):
    return None if t is None else np.array(t.detach().numpy())


# ---------------------------------------------------------------- graphs (built the same way in the child and here)


def _random_graph(seed: int, n_leaves: int = 4, n_ops: int = 30):
    """(loss, leaves, constant, intermediates): a random DAG of tensor ops with reuse and a constant."""
    import minigrad.tensor as mt

    gen = np.random.default_rng(seed)
    leaves = [mt.tensor(gen.standard_normal(3), requires_grad=True) for _ in range(n_leaves)]
    constant = mt.tensor(gen.standard_normal(3))  # needs no gradient
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
    loss = (nodes[-1] * nodes[-2]).sum()
    return loss, leaves, constant, nodes[n_leaves:]


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
def random_graph(submission, state, seed):
    loss, leaves, constant, intermediates = _random_graph(seed)
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


@probe
def accumulate(submission, state, first, second):
    """Two backward calls through two graphs on the same leaf: .grad after each."""
    import minigrad.tensor as mt

    loss, x = _reused(first)
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
    for _ in range(6):
        seed = int(gen.integers(2**31))
        got = learner.probe("random_graph", seed)
        loss, leaves, _, _ = _random_graph(seed)
        loss.backward()
        what = f"a random graph of 30 ops (seed {seed})"
        assert isinstance(got["leaves"], list) and len(got["leaves"]) == len(leaves), f"{what}: one .grad per leaf"
        for i, (mine, leaf) in enumerate(zip(got["leaves"], leaves)):
            if leaf.grad is None:
                assert mine is None, f"{what}: leaf {i} is not used by the loss, yet it got a .grad"
            else:
                _close(mine, leaf.grad.numpy(), f"{what}: leaf {i}")
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
    got = learner.probe("accumulate", first, second)
    one = _reference(_reused, first)
    _close(got["one"], one, "after the first backward()")
    _close(got["two"], one + second, "after a second backward() through another graph: .grad must add up, not be replaced")
    gen2 = np.random.default_rng(int(gen.integers(2**31)))
    values = gen2.standard_normal(n)
    got = learner.probe("second_backward", values, True)
    loss, w = _saving_graph(values)
    loss.backward()
    once = w.grad.numpy()
    _close(got["first"], once, "after backward(retain_graph=True)")
    assert got["error"] is None, f"backward twice with retain_graph=True on the first: the second raised {got['error']}: {got['message']}"
    _close(got["second"], 2 * once, "after two backward() calls through one graph: .grad must be the sum of both")


@exercise("4.5")
def test_retain_grad_keeps_a_non_leaf_gradient(learner, rng):
    import minigrad.tensor as mt

    gen = _np(rng)
    values = gen.standard_normal(int(gen.integers(2, 6)))
    got = learner.probe("retained", values)
    x = mt.tensor(values, requires_grad=True)
    h = x.tanh()
    h.retain_grad()
    g = h * 3.0
    (g * h).sum().backward()
    _close(got["h"], h.grad.numpy(), "h = x.tanh() after h.retain_grad(): h.grad (the sum of both uses of h)")
    assert got["g"] is True, "g = h * 3 did not call retain_grad(), yet it kept a .grad after backward()"
    _close(got["x"], x.grad.numpy(), "the leaf x")


@exercise("4.5")
def test_without_retain_graph_a_second_backward_raises(learner, rng):
    gen = _np(rng)
    values = gen.standard_normal(int(gen.integers(2, 6)))
    got = learner.probe("second_backward", values, False)
    assert got["error"] is not None, (
        "backward() twice through one graph without retain_graph=True did not raise: the first backward must "
        "free what each node saved, so that the second one fails with the library's error"
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
