"""count_dead_units: the units of each nn.ReLU that output exact 0 for every example, counted exactly."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.training import count_dead_units


def _with_dead_units(dead=(0, 2, 5)):
    """A network whose first layer has a bias of -100 on the units ``dead`` (weights at most 1 in size, inputs at
    most 1: those units' inputs are below -97 for every example) and +100 on the others."""
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 4), nn.ReLU())
    bias = np.full(6, 100.0, dtype=np.float32)
    bias[list(dead)] = -100.0
    with mt.no_grad():
        model[0].bias.copy_(mt.tensor(bias))
    return model


def _hooks(model) -> int:
    return sum(len(m._hooks.forward) for m in model.modules() if m._hooks is not None)


def test_a_large_negative_bias_kills_exactly_those_units():
    model = _with_dead_units()
    x = mt.tensor(np.random.default_rng(0).uniform(-1, 1, size=(64, 3)).astype(np.float32))
    report = count_dead_units(model, x)
    first = report["1"]
    assert (first.units, first.dead, first.dead_indices, first.examples) == (6, 3, (0, 2, 5), 64)
    assert first.fraction == 0.5
    expected = np.flatnonzero(~(np.maximum(model[:3](x).detach().numpy(), 0) != 0).any(axis=0))
    assert report["3"].dead_indices == tuple(expected) and report["3"].units == 4
    assert _hooks(model) == 0 and model.training


def test_a_unit_alive_in_one_batch_of_several_is_alive():
    model = nn.Sequential(nn.ReLU())
    batches = [mt.tensor([[0.0, -1.0, 0.0], [-2.0, 0.0, 0.0]]), mt.tensor([[0.0, 1e-30, 0.0]])]
    report = count_dead_units(model, [(b, None) for b in batches])
    assert report["0"].dead_indices == (0, 2) and report["0"].examples == 3
    assert count_dead_units(model, batches[:1])["0"].dead == 3


def test_a_channel_is_a_unit_of_a_convolution():
    mt.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU())
    with mt.no_grad():
        model[0].bias.copy_(mt.tensor(np.array([0.0, -1e3, 0.0], dtype=np.float32)))
    x = mt.tensor(np.random.default_rng(1).uniform(0.5, 1, size=(4, 1, 5, 5)).astype(np.float32))
    report = count_dead_units(model, x)["1"]
    assert report.units == 3 and 1 in report.dead_indices


def test_hostile_inputs_and_hooks_removed_after_an_error():
    with pytest.raises(ValueError, match="has no nn.ReLU module"):
        count_dead_units(nn.Sequential(nn.Linear(2, 2)), mt.randn(3, 2))
    with pytest.raises(ValueError, match="has no nn.ReLU module"):
        count_dead_units(nn.Sequential(), mt.randn(3, 2))
    model = _with_dead_units()
    with pytest.raises(ValueError, match="no batch was given"):
        count_dead_units(model, [])
    with pytest.raises(Exception):
        count_dead_units(model, mt.randn(3, 5))  # wrong input width: the forward raises
    assert _hooks(model) == 0
    with pytest.raises(ValueError, match="dimension 1"):
        count_dead_units(nn.Sequential(nn.ReLU()), mt.randn(4))

    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU()

        def forward(self, x):
            return x

    with pytest.raises(ValueError, match="'relu' never ran"):
        count_dead_units(Unused(), mt.randn(2, 2))
