"""Random numbers are drawn on the tensor's device; manual_seed, get/set_rng_state and fork_rng cover every device."""

import numpy as np
import pytest

import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad.tensor import rng
from minigrad.testing.strict_backend import StrictArray, StrictGenerator, register

pytestmark = pytest.mark.host_only  # the tests name their devices themselves


@pytest.fixture
def strict():
    return register()


def test_each_device_draws_from_its_own_generator(strict):
    mt.manual_seed(5)
    assert isinstance(rng.generator_for(strict), StrictGenerator)
    on_device = mt.randn(4, device=strict)
    assert type(on_device._data) is StrictArray  # drawn there, not copied from the host
    on_cpu = mt.randn(4)
    mt.manual_seed(5)
    assert mt.randn(4).tolist() == on_cpu.tolist() == on_device.tolist()  # one seed, independent streams
    for t in (mt.rand(3, device=strict), mt.randint(0, 9, (3,), device=strict), mt.randperm(5, device=strict),
              mt.randn_like(on_device), mt.rand_like(on_device)):
        assert t.device is strict and type(t._data) is StrictArray
    assert sorted(mt.randperm(5, device=strict).tolist()) == [0, 1, 2, 3, 4]


def test_manual_seed_reseeds_every_device(strict):
    mt.manual_seed(1)
    first = (mt.randn(3, device=strict).tolist(), mt.rand(2).tolist())
    mt.manual_seed(1)
    assert (mt.randn(3, device=strict).tolist(), mt.rand(2).tolist()) == first


def test_rng_state_per_device(strict):
    mt.manual_seed(0)
    cpu_state, device_state = mt.get_rng_state(), mt.get_rng_state(strict)
    a, b = mt.randn(3).tolist(), mt.randn(3, device=strict).tolist()
    mt.set_rng_state(device_state, strict)
    assert mt.randn(3, device=strict).tolist() == b
    assert mt.randn(3).tolist() != a  # the CPU stream went on
    mt.set_rng_state(cpu_state, "cpu")
    assert mt.randn(3).tolist() == a
    mt.set_default_device(strict)
    try:  # without a device, the state is the default device's
        state = mt.get_rng_state()
        c = mt.randn(2).tolist()
        mt.set_rng_state(state)
        assert mt.randn(2).tolist() == c
    finally:
        mt.set_default_device("cpu")


def test_fork_rng_restores_every_device(strict):
    mt.manual_seed(0)
    mt.randn(1, device=strict)  # the strict generator exists now
    expected = (mt.get_rng_state(), mt.get_rng_state(strict))
    with mt.fork_rng():
        mt.randn(5), mt.randn(5, device=strict)
    assert (mt.get_rng_state(), mt.get_rng_state(strict)) == expected
    with mt.fork_rng(devices=[strict]):
        mt.rand(5, device=strict)
    assert mt.get_rng_state(strict) == expected[1]
    mt.manual_seed(3)
    with mt.fork_rng():  # a device generator first made inside the block starts afresh afterwards
        inside = mt.randn(3, device=strict).tolist()
    assert mt.randn(3, device=strict).tolist() == inside


def test_dropout_draws_its_mask_on_the_device(strict):
    mt.manual_seed(0)
    cpu_state = mt.get_rng_state()
    x = mt.ones(1000, device=strict, requires_grad=True)
    y = F.dropout(x, 0.5)
    assert type(y._data) is StrictArray and mt.get_rng_state() == cpu_state  # the host generator was not used
    kept = (y.detach() != 0).sum().item()
    assert 400 < kept < 600
    y.sum().backward()
    assert x.grad.tolist() == (y.detach() * 1.0).tolist()  # gradient 2 where kept, 0 where dropped
    mt.manual_seed(0)
    assert F.dropout(mt.ones(1000, device=strict), 0.5).tolist() == y.tolist()  # replayable from the seed


def test_a_backend_without_a_generator_draws_on_the_host(twin_device):
    mt.manual_seed(2)
    t = mt.randn(3, device=twin_device)
    mt.manual_seed(2)
    assert t.device is twin_device and t.tolist() == mt.randn(3).tolist()
