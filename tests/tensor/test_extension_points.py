"""What later stages plug into: the device registry, the dtype policy (events: test_events.py)."""

import gc

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.amp import casting_policy

# ----------------------------------------------------------------------------- devices


@pytest.mark.host_only
def test_cpu_is_registered_and_devices_are_interned():
    assert "cpu" in mt.registered_backends()
    assert mt.device("cpu") is mt.cpu and mt.ones(2).device is mt.cpu
    assert mt.ones(2).device == "cpu" and str(mt.cpu) == "cpu"
    assert mt.array_module(np.ones(2)) is np


@pytest.mark.host_only  # between the CPU and another device
def test_a_registered_backend_hosts_tensors_and_gradients_flow_across(twin_device):
    assert str(twin_device) == "twin:0" and mt.device("twin") is mt.device("twin:0")
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.to("twin")
    assert y.device is twin_device and y.grad_fn.name == "ToDeviceBackward"
    assert not mt.shares_memory(x, y)
    z = (y * y).sum()
    assert z.device is twin_device and "device='twin:0'" in repr(z)
    z.backward()
    assert x.grad.device is mt.cpu
    np.testing.assert_allclose(x.grad.cpu().numpy(), [2, 4, 6])
    w = mt.ones(2, 3, device="twin", requires_grad=True)
    assert w.device is twin_device and w.to(twin_device) is w
    back = w.cpu()
    assert back.device is mt.cpu and back.shape == (2, 3)
    with pytest.raises(mt.DeviceError, match=r"x\.cpu\(\)\.numpy\(\)"):
        w.detach().numpy()


def test_moving_between_devices_is_differentiable(twin_device):
    x = mt.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    assert mt.gradcheck(lambda a: (a.to(twin_device).exp() * 2).cpu(), [x])


def test_unknown_devices():
    with pytest.raises(mt.DeviceError, match="registered: cpu"):
        mt.device("tpu")
    with pytest.raises(mt.DeviceError, match="cannot be unregistered"):
        mt.unregister_backend("cpu")


# ----------------------------------------------------------------------------- dtype policy


def test_dtype_policy_sees_every_op_and_can_change_the_compute_dtype():
    calls = []

    def policy(op, dtypes):
        calls.append((op, dtypes))
        return mt.float16 if op == "matmul" else None

    x = mt.randn(4, 3)
    w = mt.randn(3, 2, requires_grad=True)
    with mt.dtype_policy(casting_policy(policy)):
        y = x @ w
        z = y.float().exp().sum()
    assert mt.get_dtype_policy() is None
    assert ("matmul", (mt.float32, mt.float32)) in calls
    assert y.dtype == mt.float16 and z.dtype == mt.float32
    assert y.grad_fn.name == "MatmulBackward"
    (cast_x, _), (cast_w, _) = y.grad_fn.next_functions  # the graph records the casts
    assert cast_x is None and cast_w.name == "CastBackward"
    z.backward()
    assert w.grad.dtype == mt.float32  # gradients come back in the parameter's dtype
    np.testing.assert_allclose(y.detach().float().cpu().numpy(), (x.cpu().numpy() @ w.detach().cpu().numpy()).astype(np.float16), rtol=1e-2, atol=1e-2)


def test_dtype_policy_leaves_integer_operands_alone():
    with mt.dtype_policy(casting_policy(lambda op, dtypes: mt.float64)):
        y = mt.ones(3)[mt.tensor([0, 2])]
        z = mt.ones(2) + mt.ones(2)
    assert y.dtype == mt.float64 and z.dtype == mt.float64


def test_set_dtype_policy_returns_the_previous_one():
    def p(cls, args):
        return args

    assert mt.set_dtype_policy(p) is None
    assert (mt.ones(2) + 1).dtype == mt.float32
    assert mt.set_dtype_policy(None) is p
    with pytest.raises(TypeError, match="callable"):
        mt.set_dtype_policy("fp16")
