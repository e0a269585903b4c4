"""The code of chapter 04's exercises: the backward rules (pure functions on arrays), LogSoftmax, the backward driver."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad.tensor as mt
from minigrad.grading.carve import find_regions
from minigrad.tensor import autograd, grad_rules
from minigrad.tensor.ops import log_softmax as ops_log_softmax

TENSOR_DIR = Path(grad_rules.__file__).parent


# ------------------------------------------------------------------ unbroadcast


@st.composite
def broadcast_pairs(draw):
    shape = tuple(draw(st.lists(st.sampled_from([1, 1, 2, 3]), max_size=3)))
    prefix = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    stretched = tuple(draw(st.integers(1, 4)) if s == 1 else s for s in shape)
    return shape, prefix + stretched


@given(broadcast_pairs(), st.integers(0, 2**32 - 1))
def test_unbroadcast_is_the_adjoint_of_broadcast_to(pair, seed):
    shape, out_shape = pair
    gen = np.random.default_rng(seed)
    grad, x = gen.standard_normal(out_shape), gen.standard_normal(shape)
    got = grad_rules.unbroadcast(grad, shape)
    assert got.shape == shape
    assert np.isclose((got * x).sum(), (grad * np.broadcast_to(x, out_shape)).sum())


def test_unbroadcast_examples_and_no_copy_when_shapes_match():
    g = np.ones((4, 3))
    assert grad_rules.unbroadcast(g, (3,)).tolist() == [4, 4, 4]
    assert grad_rules.unbroadcast(g, (4, 1)).tolist() == [[3]] * 4
    assert grad_rules.unbroadcast(g, ()) == 12
    assert grad_rules.unbroadcast(g, (4, 3)) is g


# ------------------------------------------------------------------ matmul


MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
    ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_SHAPES)
def test_matmul_backward_is_the_adjoint_of_matmul(a_shape, b_shape):
    gen = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a, b = gen.standard_normal(a_shape), gen.standard_normal(b_shape)
    grad = gen.standard_normal(np.matmul(a, b).shape)
    ga, gb = grad_rules.matmul_backward(grad, a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    # d/dt sum(grad * (a + t da) @ b) = sum(ga * da), and likewise for b
    da, db = gen.standard_normal(a_shape), gen.standard_normal(b_shape)
    assert np.isclose((ga * da).sum(), (grad * np.matmul(da, b)).sum())
    assert np.isclose((gb * db).sum(), (grad * np.matmul(a, db)).sum())


def test_matmul_backward_skips_what_is_not_needed_and_keeps_float16():
    a, b, g = np.ones((2, 3)), np.ones((3, 4)), np.ones((2, 4))
    assert grad_rules.matmul_backward(g, a, b, need_a=False)[0] is None
    assert grad_rules.matmul_backward(g, a, b, need_b=False)[1] is None
    half = [x.astype(np.float16) for x in (a, b, g)]
    ga, gb = grad_rules.matmul_backward(half[2], half[0], half[1])
    assert ga.dtype == gb.dtype == np.float16


# ------------------------------------------------------------------ reductions, log_softmax


@pytest.mark.parametrize("shape, dim, keepdim", [
    ((2, 3, 4), (1,), False), ((2, 3, 4), (0, 2), True), ((2, 3), None, False), ((2, 3), None, True), ((), None, False),
])
def test_sum_and_mean_backward_spread_the_gradient(shape, dim, keepdim):
    gen = np.random.default_rng(0)
    x = gen.standard_normal(shape)
    out = x.sum(axis=dim, keepdims=keepdim)
    grad = gen.standard_normal(np.shape(out))
    kept = np.reshape(grad, np.sum(x, axis=dim, keepdims=True).shape)
    n = x.size // max(np.size(out), 1)
    np.testing.assert_allclose(grad_rules.sum_backward(grad, shape, dim, keepdim), np.broadcast_to(kept, shape))
    np.testing.assert_allclose(grad_rules.mean_backward(grad, shape, dim, keepdim), np.broadcast_to(kept / n, shape))


@pytest.mark.parametrize("dim", [0, 1])
def test_log_softmax_survives_large_logits_and_its_gradient_sums_to_zero(dim):
    gen = np.random.default_rng(1)
    x = gen.standard_normal((3, 5)) * 30 + 1000.0
    t = mt.tensor(x, dtype=mt.float64, requires_grad=True)
    y = t.log_softmax(dim=dim)
    shifted = x - x.max(axis=dim, keepdims=True)
    np.testing.assert_allclose(y.detach().cpu().numpy(), shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True)))
    assert y.grad_fn.saved_tensors[0] is not None and len(y.grad_fn.saved_tensors) == 1  # the output, nothing else
    (y * mt.tensor(gen.standard_normal((3, 5)))).sum().backward()
    dx = t.grad.cpu().numpy()
    assert np.isfinite(dx).all()
    np.testing.assert_allclose(dx.sum(axis=dim), 0.0, atol=1e-12)


def test_log_softmax_gradcheck_on_a_non_contiguous_input():
    x = mt.randn(4, 3, dtype=mt.float64).T.requires_grad_()
    assert mt.gradcheck(lambda t: t.log_softmax(dim=0), [x])


# ------------------------------------------------------------------ topological order


def test_topological_order_is_iterative_and_skips_falsy_parents():
    x = mt.tensor([1.0], requires_grad=True)
    c = mt.tensor([2.0])  # needs no gradient: a None parent
    y = x * c + 1.0  # 1.0: a NOT_A_TENSOR parent
    for _ in range(5000):
        y = y + 1.0
    order = autograd.topological_order(y.grad_fn)
    assert len(order) == 5003 and order[0] is x._accum and order[-1] is y.grad_fn
    assert mt.topological_order(y.grad_fn) == order


# ------------------------------------------------------------------ the ops call the rules at call time


@pytest.mark.parametrize("owner, rule, run", [
    (grad_rules, "unbroadcast", lambda x: (x + mt.ones(2, 3, dtype=mt.float64)).sum()),
    (grad_rules, "matmul_backward", lambda x: (x @ mt.ones(3, 2, dtype=mt.float64)).sum()),
    (grad_rules, "sum_backward", lambda x: x.sum(dim=0).sum()),
    (grad_rules, "mean_backward", lambda x: x.mean()),
    (ops_log_softmax.LogSoftmax, "backward", lambda x: x.log_softmax(dim=1)[0, 1] * 3.0),
    (autograd, "topological_order", lambda x: (x * 2.0).sum()),
    (autograd, "run_backward", lambda x: (x * x).sum()),
], ids=lambda v: v if isinstance(v, str) else "")
def test_each_rule_is_looked_up_when_it_is_used(monkeypatch, owner, rule, run):
    calls = []
    original = vars(owner)[rule]

    def spy(*args, **kwargs):
        calls.append(rule)
        return original(*args, **kwargs)

    x = mt.tensor(np.arange(6.0).reshape(2, 3) / 7, dtype=mt.float64, requires_grad=True)
    loss = run(x)  # built before the swap: the rule is found when backward runs, not when the op was made
    monkeypatch.setattr(owner, rule, spy)
    loss.backward()
    assert calls, f"{rule} was not looked up on {owner.__name__} when backward ran"
    expected = mt.tensor(x.detach().cpu().numpy(), requires_grad=True)
    monkeypatch.setattr(owner, rule, original)
    run(expected).backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected.grad.cpu().numpy())


def test_chapter_04_regions_live_in_the_rules_the_op_and_the_driver():
    owners = {}
    for path in sorted(TENSOR_DIR.rglob("*.py")):
        for region in find_regions(path.read_text().splitlines(), str(path)):
            if region.exercise.startswith("4."):
                owners.setdefault(region.exercise, set()).add(path.relative_to(TENSOR_DIR).as_posix())
    assert owners == {"4.1": {"grad_rules.py"}, "4.2": {"grad_rules.py"}, "4.3": {"grad_rules.py"},
                      "4.4": {"ops/log_softmax.py"}, "4.5": {"autograd.py"}}


def test_a_plugged_in_copy_of_the_driver_never_lets_two_leaves_share_a_gradient(tmp_path):
    """use_exercise swaps run_backward for a copy whose helpers see no backward() in progress: they must copy."""
    from minigrad.grading import use_exercise

    solutions = Path(__file__).resolve().parents[2] / "solutions" / "04_backward.py"
    a = mt.tensor([1.0, 2.0], requires_grad=True)
    b = mt.tensor([3.0, 4.0], requires_grad=True)
    with use_exercise("4.5", path=solutions):
        ((a + b) * mt.tensor([5.0, 6.0])).sum().backward()  # Add sends the same fresh array to both leaves
    assert not np.shares_memory(a.grad.cpu().numpy(), b.grad.cpu().numpy())
    a.grad += 1.0
    assert b.grad.tolist() == [5.0, 6.0]
