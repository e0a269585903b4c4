"""The strict test device refuses every implicit trip to the host, exactly where CuPy does, and allows the explicit ones."""

import copy
import pickle

import numpy as np
import pytest

import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim
import minigrad.tensor as mt
from minigrad.testing.strict_backend import StrictArray, register, strict_numpy as xp

pytestmark = pytest.mark.host_only  # the tests name their devices themselves


@pytest.fixture
def strict():
    return register()


def a(values, dtype=np.float64):
    return xp.asarray(np.array(values, dtype=dtype))


# ----------------------------------------------------------------------------- what raises, as on CuPy


def test_implicit_conversions_to_numpy_raise():
    x = a([1.0, 2.0])
    for convert in (np.asarray, np.array, np.ascontiguousarray, lambda v: np.testing.assert_allclose(v, [1, 2]),
                    lambda v: np.lib.stride_tricks.as_strided(v, (2,), (8,)), lambda v: memoryview(v),
                    lambda v: np.zeros(2).__setitem__(slice(None), v), lambda v: np.float64(v)):
        with pytest.raises(TypeError):
            convert(x)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array"):
        np.asarray(x)
    with pytest.raises(AttributeError):
        x.__array_interface__  # noqa: B018 - NumPy must not find the memory


def test_mixing_with_host_arrays_raises():
    x, host = a([1.0, 2.0]), np.ones(2)
    for mix in (lambda: x + host, lambda: host + x, lambda: host * x, lambda: np.add(x, host),
                lambda: np.concatenate([x, host]), lambda: xp.stack([x, host]), lambda: np.where(x > 1, x, host),
                lambda: x.__setitem__(slice(None), host), lambda: np.add(x, 1, out=host), lambda: x + [1.0, 2.0],
                lambda: np.multiply([1.0, 2.0], x)):
        with pytest.raises(TypeError, match="host numpy.ndarray|Implicit|unsupported operand"):
            mix()


def test_tensors_on_the_strict_device_refuse_numpy(strict):
    t = mt.tensor([1.0, 2.0], device=strict)
    with pytest.raises(mt.DeviceError, match=r"x\.cpu\(\)\.numpy\(\)"):
        t.numpy()
    with pytest.raises((TypeError, mt.DeviceError)):
        np.asarray(t)
    with pytest.raises(TypeError):
        mt.tensor(t._data)  # building a host tensor from device memory must be explicit


# ----------------------------------------------------------------------------- what works, as on CuPy


def test_ufuncs_functions_methods_and_operators_stay_on_the_device():
    x = a([[1.0, -2.0], [3.0, 4.0]])
    for value in (np.exp(x), np.sum(x, axis=0), np.where(x > 0, x, 0.0), x @ x, x.T, x.reshape(4), -x, ~(x > 0),
                  abs(x), x[0], x[x > 0], np.concatenate([x, x]), np.maximum(x, 1.0), x.astype(np.float32)):
        assert type(value) is StrictArray
    total = x.sum()
    assert type(total) is StrictArray and total.shape == ()  # reductions give 0-d arrays, as CuPy
    assert total.item() == 6.0 and float(total) == 6.0 and int(x[1, 0]) == 3 and x.tolist() == [[1, -2], [3, 4]]
    assert bool(x[0, 0] > 0) and len(x) == 2 and x.shape == (2, 2) and x.dtype == np.float64
    np.testing.assert_array_equal(x.get(), [[1, -2], [3, 4]])  # the explicit copy
    np.testing.assert_array_equal((~(x > 0)).get(), [[False, True], [False, False]])
    y = x.copy()
    z = y
    z += 1
    assert z is y and y.get()[0, 0] == 2.0  # in-place operators keep the object
    np.add(y, 1, out=y)
    assert y.get()[0, 0] == 3.0
    y[0] = a([9.0, 9.0])
    y[1, 1] = 0.0
    assert y.tolist() == [[9, 9], [5, 0]]


def test_views_know_their_base_and_memory_sharing():
    x = xp.zeros((4, 4))
    v = x[1:, ::2]
    assert x.base is None and v.base is x and v.T.base is x
    assert xp.shares_memory(x, v) and not xp.shares_memory(x[0], x[1])
    w = xp.lib.stride_tricks.as_strided(x, (3, 2), (32, 8))
    assert type(w) is StrictArray and w.shape == (3, 2)
    assert isinstance(x, xp.ndarray) and not isinstance(x, np.ndarray)


def test_copies_and_pickles(strict):
    x = a([1.0, 2.0])
    assert copy.deepcopy(x).tolist() == [1, 2] and pickle.loads(pickle.dumps(x)).tolist() == [1, 2]
    t = mt.randn(3, device=strict)
    back = pickle.loads(pickle.dumps(t))
    assert back.device is strict and type(back._data) is StrictArray and back.tolist() == t.tolist()


def test_explicit_transfers_and_gradients_across(strict):
    host = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    on_device = host.to(strict)
    assert type(on_device._data) is StrictArray and on_device.device is strict
    (on_device * on_device).sum().backward()
    np.testing.assert_array_equal(host.grad.numpy(), [2, 4, 6])
    np.testing.assert_array_equal(on_device.detach().cpu().numpy(), [1, 2, 3])
    forced = on_device.numpy(force=True)  # PyTorch's explicit copy to the host
    assert type(forced) is np.ndarray and forced.tolist() == [1, 2, 3]
    assert repr(mt.zeros(2, device=strict)) == "tensor([0., 0.], device='strict:0')"
    assert mt.shares_memory(on_device, on_device[1:]) and not mt.shares_memory(on_device[:1], on_device[1:])


def test_a_training_step_keeps_every_buffer_on_the_device(strict):
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Dropout(0.3), nn.Flatten(), nn.Linear(4 * 4 * 4, 10)).to(strict)
    opt = optim.Adam(net.parameters(), lr=1e-3)
    x, y = mt.randn(8, 1, 8, 8, device=strict), mt.randint(0, 10, (8,), device=strict)
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    arrays = [p._data for p in net.parameters()] + [p.grad._data for p in net.parameters()]
    arrays += [b._data for b in net.buffers()] + [loss._data]
    assert all(type(arr) is StrictArray for arr in arrays)
    assert np.isfinite(loss.item())


def test_index_keys_may_come_from_the_host_and_scatter_add_works(strict):
    x = mt.arange(6.0, device=strict).reshape(2, 3).requires_grad_()
    for key in ([0, 0], np.array([1, 0, 1]), mt.tensor([0, 0], device=strict)):
        x.grad = None
        x[key].sum().backward()  # backward scatters with np.add.at through the array module
        assert type(x.grad._data) is StrictArray
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[2, 2, 2], [0, 0, 0]])
    target = xp.zeros(3)
    np.add.at(target, (a([0, 0, 2], np.int64),), 1.0)
    assert target.tolist() == [2, 0, 1]
