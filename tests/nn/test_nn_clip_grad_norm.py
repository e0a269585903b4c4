"""clip_grad_norm_: bad arguments are refused, non-finite norms behave as in PyTorch."""

import math

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn


def param_with_grad(values):
    p = nn.Parameter(mt.zeros(len(values)))
    p.grad = mt.tensor(values)
    return p


@pytest.mark.parametrize("max_norm", [-1.0, -1e-9, math.nan, -math.inf])
def test_negative_or_nan_max_norm_is_refused_and_leaves_the_gradients_alone(max_norm):
    p = param_with_grad([3.0, 4.0])
    with pytest.raises(ValueError, match=rf"clip_grad_norm_: max_norm={max_norm!r} must be >= 0"):
        nn.utils.clip_grad_norm_([p], max_norm)  # -1 used to flip the gradient's sign
    assert p.grad.tolist() == [3.0, 4.0]


def test_bad_norm_type_is_refused():
    p = param_with_grad([3.0, 4.0])
    for norm_type in (0, -2.0, math.nan):
        with pytest.raises(ValueError, match="clip_grad_norm_: norm_type=.* must be > 0"):
            nn.utils.clip_grad_norm_([p], 1.0, norm_type=norm_type)
    with pytest.raises(TypeError, match="max_norm and norm_type must be numbers"):
        nn.utils.clip_grad_norm_([p], "big")
    with pytest.raises(ValueError, match="max_norm=-1.0"):
        nn.utils.clip_grad_norm_([], -1.0)  # checked even when there is nothing to clip


def test_zero_and_infinite_max_norm():
    p = param_with_grad([3.0, 4.0])
    assert nn.utils.clip_grad_norm_([p], math.inf).item() == pytest.approx(5.0)
    assert p.grad.tolist() == [3.0, 4.0]  # inf: never clips
    nn.utils.clip_grad_norm_([p], 0.0)
    assert p.grad.tolist() == [0.0, 0.0]


def test_non_finite_total_norm_follows_pytorch():
    p = param_with_grad([math.inf, 4.0])
    with pytest.raises(RuntimeError, match=r"clip_grad_norm_: the total 2.0-norm of the gradients is inf"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert p.grad.tolist()[1] == 4.0  # untouched when it raises
    total = nn.utils.clip_grad_norm_([p], 1.0)  # PyTorch: scale by 1 / inf = 0 (inf * 0 = nan)
    assert total.item() == math.inf
    assert np.isnan(p.grad.cpu().numpy()[0]) and p.grad.cpu().numpy()[1] == 0.0
    q = param_with_grad([math.nan, 4.0])
    assert math.isnan(nn.utils.clip_grad_norm_([q], 1.0).item())
    assert np.isnan(q.grad.cpu().numpy()).all()  # PyTorch scales by the nan coefficient too


def test_non_finite_semantics_match_torch():
    torch = pytest.importorskip("torch")
    for values in ([math.inf, 4.0, 0.0], [math.nan, 4.0, 0.0], [3.0, 4.0, 0.0]):
        p = param_with_grad(values)
        t = torch.nn.Parameter(torch.zeros(3))
        t.grad = torch.tensor(values)
        ours = nn.utils.clip_grad_norm_([p], 1.0).item()
        theirs = torch.nn.utils.clip_grad_norm_([t], 1.0).item()
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
        np.testing.assert_allclose(p.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-6)
