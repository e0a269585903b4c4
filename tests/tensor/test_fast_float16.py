"""The float16 speed path gives what the clear version gives: float32 arithmetic, rounded once to float16."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.tensor import fast_float16, grad_rules


def _halves(gen, *shapes):
    return [gen.standard_normal(s).astype(np.float16) for s in shapes]


@pytest.mark.parametrize("a_shape, b_shape", [((4, 3), (3, 5)), ((3,), (3, 2)), ((2, 4, 3), (3, 5)), ((2, 1, 4, 3), (3, 3, 2))])
def test_product_is_the_float32_product_rounded(a_shape, b_shape):
    a, b = _halves(np.random.default_rng(0), a_shape, b_shape)
    got = fast_float16.product(a, b)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, exact, rtol=2e-3, atol=2e-3)  # float16 keeps ~3 decimal digits


def test_product_is_plain_matmul_for_other_dtypes():
    gen = np.random.default_rng(1)
    a, b = gen.standard_normal((3, 4)), gen.standard_normal((4, 2))
    np.testing.assert_array_equal(fast_float16.product(a, b), a @ b)
    assert not fast_float16.applies(a.astype(np.float32)) and fast_float16.applies(a.astype(np.float16))


@pytest.mark.parametrize("a_shape, b_shape", [((4, 3), (3, 5)), ((3,), (3, 2)), ((4, 3), (3,)), ((2, 1, 4, 3), (3, 3, 2))])
def test_matmul_backward_is_the_clear_rule_in_float32_rounded(a_shape, b_shape):
    gen = np.random.default_rng(2)
    a, b = _halves(gen, a_shape, b_shape)
    grad = gen.standard_normal(np.matmul(a, b).shape).astype(np.float16)
    fast = fast_float16.matmul_backward(grad, a, b)
    clear = grad_rules.matmul_backward(*(x.astype(np.float32) for x in (grad, a, b)))
    exact = grad_rules.matmul_backward(*(x.astype(np.float64) for x in (grad, a, b)))
    for got, wide, truth, like in zip(fast, clear, exact, (a, b)):
        assert got.dtype == np.float16 and got.shape == like.shape
        np.testing.assert_array_equal(got, wide.astype(np.float16))
        np.testing.assert_allclose(got, truth, rtol=2e-3, atol=5e-3)
    assert fast_float16.matmul_backward(grad, a, b, need_a=False)[0] is None
    assert fast_float16.matmul_backward(grad, a, b, need_b=False)[1] is None


def test_float16_matmul_op_takes_the_speed_path_and_agrees_with_float32(device):
    if device.type != "cpu":
        pytest.skip("the speed path is for NumPy arrays")
    gen = np.random.default_rng(3)
    a, b = _halves(gen, (5, 4), (4, 3))
    ta, tb = mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)
    out = ta @ tb
    assert out.dtype == mt.float16
    out.sum().backward()
    wa, wb = mt.tensor(a.astype(np.float32), requires_grad=True), mt.tensor(b.astype(np.float32), requires_grad=True)
    wide = wa @ wb
    wide.sum().backward()
    np.testing.assert_array_equal(out.detach().cpu().numpy(), wide.detach().cpu().numpy().astype(np.float16))
    np.testing.assert_array_equal(ta.grad.cpu().numpy(), wa.grad.cpu().numpy().astype(np.float16))
    np.testing.assert_array_equal(tb.grad.cpu().numpy(), wb.grad.cpu().numpy().astype(np.float16))
