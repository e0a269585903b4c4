"""Op dispatch per device type: a registered kernel runs on its device type, everything else keeps the default."""

import gc

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.tensor.ops.elementwise import Exp, Mul

pytestmark = pytest.mark.host_only  # the tests name their devices themselves


@pytest.fixture
def fake_device():
    """A device type backed by NumPy, as a GPU backend would register itself."""
    mt.register_backend(mt.Backend(
        "fake", np, to_numpy=lambda a: np.array(a, copy=True),
        from_numpy=lambda a, index=None: np.array(a, copy=True), default_index=0,
    ))
    try:
        yield mt.device("fake")
    finally:
        for op in (Mul, Exp):
            mt.unregister_op_impl(op, "fake")
        mt.unregister_backend("fake")


def test_a_registered_forward_runs_on_its_device_type_only(fake_device):
    calls = []

    def fused_mul(ctx, a, b):
        calls.append((a.shape, b.shape))
        ctx.save_for_backward(a, b)  # what Mul.backward reads
        return a * b

    assert mt.register_op_impl("mul", "fake", fused_mul) is Mul
    assert ("mul", "fake") in mt.registered_op_impls()
    x = mt.tensor([1.0, 2.0, 3.0], device=fake_device, requires_grad=True)
    y = x * mt.tensor([4.0, 5.0, 6.0], device=fake_device)
    assert calls == [((3,), (3,))]
    np.testing.assert_array_equal(y.detach().cpu().numpy(), [4, 10, 18])
    y.sum().backward()  # the op's own backward, reading what the kernel saved
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [4, 5, 6])
    (x + x).exp()  # unregistered ops take the default path
    mt.tensor([1.0]) * mt.tensor([2.0])  # and so does mul on the CPU
    assert len(calls) == 1


def test_a_registered_backward_replaces_the_ops_own(fake_device):
    def exp_forward(ctx, a):
        out = np.exp(a)
        ctx.out = out
        return out

    def exp_backward(ctx, grad):
        return grad * ctx.out * 0 + 7.0  # recognisable: proves this backward ran

    mt.register_op_impl(Exp, "fake", exp_forward, exp_backward)
    x = mt.zeros(2, device=fake_device, requires_grad=True)
    x.exp().sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [7, 7])
    c = mt.zeros(2, requires_grad=True)  # the CPU keeps the true derivative
    c.exp().sum().backward()
    np.testing.assert_array_equal(c.grad.numpy(), [1, 1])


def test_unregistering_restores_the_default(fake_device):
    mt.register_op_impl(Mul, "fake", lambda ctx, a, b: a * b * 0)
    x = mt.ones(2, device=fake_device)
    assert (x * x).sum().item() == 0
    mt.unregister_op_impl(Mul, "fake")
    assert (x * x).sum().item() == 2 and mt.get_backend("fake") and not mt.registered_op_impls()


def test_registration_errors_name_the_problem():
    with pytest.raises(KeyError, match="no op named 'mull'"):
        mt.register_op_impl("mull", "fake", lambda ctx, a, b: a)
    with pytest.raises(ValueError, match="no index"):
        mt.register_op_impl("mul", "cuda:0", lambda ctx, a, b: a)
    with pytest.raises(TypeError, match="not a subclass"):
        mt.register_op_impl(int, "fake", lambda ctx, a: a)
    with pytest.raises(TypeError, match="callables"):
        mt.register_op_impl("mul", "fake", None)

    class Twice(mt.Function):
        op = "mul"  # a second op of the same name: the name is ambiguous now

        def forward(ctx, a):
            return a * 2

    with pytest.raises(KeyError, match="shared by"):
        mt.register_op_impl("mul", "fake", lambda ctx, a, b: a)
    assert mt.register_op_impl(Twice, "fake", lambda ctx, a: a * 3) is Twice
    mt.unregister_op_impl(Twice, "fake")
    assert not mt.registered_op_impls()
    del Twice
    gc.collect()  # the name "mul" is unambiguous again
