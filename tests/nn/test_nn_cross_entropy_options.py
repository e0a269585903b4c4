"""The cross-entropy extension (ignore_index, label_smoothing) agrees with the clear fused node where they overlap."""

import numpy as np
import pytest

import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad.nn.functional.cross_entropy_options import CrossEntropyWithOptionsFunction
from minigrad.nn.functional.loss import CrossEntropyFunction


def _value_and_grad(function, logits, target, *options):
    z = mt.tensor(logits, requires_grad=True)
    out = function.apply(z, mt.tensor(target), *options)
    (out * mt.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(out.shape))).sum().backward()
    return out.detach().cpu().numpy(), z.grad.cpu().numpy()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_without_options_the_extension_equals_the_clear_node(rng, reduction):
    logits, target = 5 * rng.standard_normal((6, 4)), rng.integers(0, 4, size=6)
    clear = _value_and_grad(CrossEntropyFunction, logits, target, reduction)
    extension = _value_and_grad(CrossEntropyWithOptionsFunction, logits, target, None, 0.0, reduction)
    for a, b in zip(clear, extension):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_cross_entropy_takes_the_clear_node_unless_an_option_is_used(rng):
    z = mt.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    y = mt.tensor(np.array([0, 3, 1]))
    assert type(F.cross_entropy(z, y).grad_fn).__name__.startswith("CrossEntropyFunction")
    assert type(F.cross_entropy(z, y, label_smoothing=0.1).grad_fn).__name__.startswith("CrossEntropyWithOptions")
    assert type(F.cross_entropy(z, mt.tensor(np.array([0, -100, 1]))).grad_fn).__name__.startswith("CrossEntropyWithOptions")


def test_label_smoothing_matches_the_smoothed_target_written_out(rng):
    logits, target, eps = rng.standard_normal((5, 3)), rng.integers(0, 3, size=5), 0.2
    z = mt.tensor(logits, requires_grad=True)
    F.cross_entropy(z, mt.tensor(target), label_smoothing=eps, reduction="sum").backward()
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    smoothed = (1 - eps) * np.eye(3)[target] + eps / 3
    np.testing.assert_allclose(z.grad.cpu().numpy(), np.exp(logp) - smoothed, rtol=1e-10, atol=1e-12)
    loss = F.cross_entropy(mt.tensor(logits), mt.tensor(target), label_smoothing=eps, reduction="sum").item()
    assert loss == pytest.approx(-(smoothed * logp).sum(), rel=1e-12)
