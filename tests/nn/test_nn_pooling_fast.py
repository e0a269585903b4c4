"""The speed path of max pooling (``functional/pooling_fast.py``) computes what the clear version (``functional/pooling.py``) does.

The library runs the speed path whenever ``MaxPool2dFunction.backward`` is its
own, and the clear version as soon as a learner's is swapped in: both are
checked here on the same inputs (ties, padding, overlapping and disjoint
windows, contiguous and channels-last inputs).
"""

import numpy as np
import pytest

import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad.nn.functional import pooling

CASES = [
    # input shape, kernel, stride, padding
    ((4, 3, 8, 8), 2, None, 0),  # the MNIST CNN's pooling: disjoint windows
    ((2, 3, 7, 9), 3, 2, 1),
    ((2, 2, 6, 7), 3, 1, 1),  # overlapping windows
    ((1, 4, 6, 7), (2, 3), (1, 2), (1, 1)),
    ((2, 1, 5, 5), (2, 2), (3, 3), 0),  # windows with gaps between them
]


def _run(seed, shape, kernel, stride, padding, channels_last, ties):
    rng = np.random.default_rng(seed)
    data = rng.integers(-2, 3, size=shape).astype(np.float64) if ties else rng.standard_normal(shape)
    if channels_last:
        x = mt.tensor(np.ascontiguousarray(data.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2).detach()
    else:
        x = mt.tensor(data)
    x.requires_grad_(True)
    out = F.max_pool2d(x, kernel, stride, padding)
    (out * mt.tensor(np.random.default_rng(seed + 1).standard_normal(out.shape))).sum().backward()
    return out, [out.detach().cpu().numpy(), x.grad.cpu().numpy()]


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels-last"])
@pytest.mark.parametrize("shape, kernel, stride, padding", CASES)
def test_speed_path_equals_the_clear_version(monkeypatch, shape, kernel, stride, padding, channels_last, ties):
    fast_out, fast = _run(3, shape, kernel, stride, padding, channels_last, ties)
    assert fast_out.grad_fn.name == "FastMaxPool2dFunctionBackward"
    monkeypatch.setattr(pooling, "library_defines", lambda file_name, *functions: False)
    clear_out, clear = _run(3, shape, kernel, stride, padding, channels_last, ties)
    assert clear_out.grad_fn.name == "MaxPool2dFunctionBackward"
    for name, a, b in zip(("output", "dx"), fast, clear):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_a_learner_backward_runs_the_clear_version(monkeypatch):
    """A backward defined outside the library's pooling.py (as use_exercise swaps in) is the one that runs."""
    calls = []
    library_backward = pooling.MaxPool2dFunction.backward

    def my_backward(ctx, grad):
        calls.append(grad.shape)
        return library_backward(ctx, grad)

    monkeypatch.setattr(pooling.MaxPool2dFunction, "backward", my_backward)
    x = mt.randn(2, 3, 4, 4, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert calls == [(2, 3, 2, 2)]
