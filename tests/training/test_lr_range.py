"""lr_range_test: the exponential schedule, the smoothing, the stop, the suggestion, and a bitwise restore."""

import math

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.tensor import AnomalyError, detect_anomaly
from minigrad.training import lr_range_test, suggest_lr

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflows a diverging run provokes


def _data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return mt.tensor(x), mt.tensor((x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0))


def _scripted(values):
    """A loss whose value at call k is values[k] (its gradient is 0): the test's arithmetic, by hand."""
    calls = iter(values)

    def loss_fn(out, y):
        return (out * 0).sum() + next(calls)

    return loss_fn


def test_the_rate_grows_by_one_factor_and_the_smoothing_is_bias_corrected():
    model = nn.Linear(4, 3)
    opt = optim.SGD(model.parameters(), lr=0.5)
    x, y = _data()
    values = [2.0, 1.0, 1.0, 0.5]
    r = lr_range_test(model, opt, [(x, y)], _scripted(values), start_lr=1e-3, end_lr=1e-0, steps=4, smoothing=0.5)
    assert r.lrs == pytest.approx([1e-3, 1e-2, 1e-1, 1.0], rel=1e-12) and r.diverged_at is None
    a, out = 0.0, []
    for t, v in enumerate(values, start=1):
        a = 0.5 * a + 0.5 * v
        out.append(a / (1 - 0.5**t))
    assert r.losses == values and r.smoothed == pytest.approx(out, rel=1e-15)
    assert r.suggestion == pytest.approx(1.0 / 10) and opt.param_groups[0]["lr"] == 0.5


def test_it_stops_when_the_smoothed_loss_passes_the_factor_and_suggests_below():
    x, y = _data()
    values = [4.0, 3.0, 2.0, 1.0, 1.5, 4.5, 9.0, 9.0]
    model = nn.Linear(4, 3)
    r = lr_range_test(model, optim.SGD(model.parameters(), lr=0.1), [(x, y)], _scripted(values), start_lr=1e-4,
                      end_lr=1e3, steps=8, smoothing=0.0, diverge_factor=4.0)
    assert r.losses == [4.0, 3.0, 2.0, 1.0, 1.5, 4.5]  # 4.5 > 4 x 1.0: stopped there
    assert r.diverged_at == r.lrs[5] and r.suggestion == pytest.approx(r.lrs[3] / 10)
    assert r.suggestion < r.diverged_at and "passed 4 x its lowest 1" in r.reason


def test_a_nan_loss_stops_the_test_and_a_first_nan_gives_no_suggestion():
    x, y = _data()
    model = nn.Linear(4, 3)
    opt = optim.SGD(model.parameters(), lr=0.1)
    r = lr_range_test(model, opt, [(x, y)], _scripted([3.0, 2.0, 1.0, math.nan, 1.0]), steps=5, smoothing=0.0)
    assert len(r.losses) == 4 and math.isnan(r.smoothed[-1]) and r.diverged_at == r.lrs[3]
    assert r.suggestion == pytest.approx(r.lrs[2] / 10) and "the loss was nan at step 4" in r.reason
    r = lr_range_test(model, opt, [(x, y)], _scripted([math.nan, 1.0]), steps=2)
    assert r.suggestion is None and "no suggestion" in r.reason
    assert suggest_lr([1.0, 2.0], [1.0, 2.0]) is None and suggest_lr([], []) is None


def _state(model, opt):
    arrays = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    arrays.update({f"grad {k}": p.grad.detach().numpy().copy() for k, p in model.named_parameters()
                   if p.grad is not None})
    saved = opt.state_dict()
    for i, s in saved["state"].items():
        arrays.update({f"opt {i} {k}": (v.detach().numpy().copy() if hasattr(v, "detach") else v) for k, v in s.items()})
    groups = [{k: v for k, v in g.items()} for g in saved["param_groups"]]
    return arrays, groups, [m.training for m in model.modules()], mt.get_rng_state()


def _same(a, b):
    arrays_a, groups_a, modes_a, rng_a = a
    arrays_b, groups_b, modes_b, rng_b = b
    assert arrays_a.keys() == arrays_b.keys() and groups_a == groups_b and modes_a == modes_b
    for k in arrays_a:
        assert np.array_equal(np.asarray(arrays_a[k]), np.asarray(arrays_b[k])) and \
            np.asarray(arrays_a[k]).dtype == np.asarray(arrays_b[k]).dtype, k
    assert _equal(rng_a, rng_b)


def _equal(a, b) -> bool:
    """Bitwise equality of nested dicts, lists and arrays (a generator's state)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, z) for x, z in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def test_model_optimizer_and_rng_are_restored_bitwise_also_after_an_error():
    mt.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8),
                          nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 3))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x, y = _data()
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(2):  # some Adam state, some gradients left in place
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    model.eval()
    before = _state(model, opt)
    r = lr_range_test(model, opt, [(x[:16], y[:16]), (x[16:], y[16:])], loss_fn, steps=30)
    assert len(r.lrs) > 2
    _same(before, _state(model, opt))

    def failing(out, target, calls=iter(range(100))):
        if next(calls) == 3:
            raise RuntimeError("broken loss")
        return loss_fn(out, target)

    with pytest.raises(RuntimeError, match="broken loss"):
        lr_range_test(model, opt, [(x, y)], failing, steps=10)
    _same(before, _state(model, opt))


def test_the_rate_it_finds_too_high_makes_detect_anomaly_name_the_op():
    """The broken run: at lr 10 the weights grow each step until a matmul overflows; detect_anomaly names it."""
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = optim.SGD(model.parameters(), lr=0.01)
    x, y = _data(64)
    x = x * 10
    loss_fn = nn.CrossEntropyLoss()
    r = lr_range_test(model, opt, [(x, y)], loss_fn, start_lr=1e-4, end_lr=100.0, steps=60)
    assert r.diverged_at is not None and r.diverged_at < 100 and r.suggestion < r.diverged_at / 10
    opt.param_groups[0]["lr"] = 10.0
    with detect_anomaly(names=dict(model.named_parameters())), pytest.raises(AnomalyError) as info:
        for _ in range(100):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
    text = str(info.value)
    assert ("LinearFunction" in text or "parameter '" in text) and "test_lr_range.py" in text


@pytest.mark.parametrize("kwargs, match", [
    ({"steps": 0}, "steps=0 must be a whole number >= 2"), ({"steps": 1}, "steps=1"), ({"steps": 2.5}, "steps=2.5"),
    ({"steps": True}, "steps=True"), ({"start_lr": 0.0}, "start_lr=0.0 must be a finite number > 0"),
    ({"end_lr": math.inf}, "end_lr=inf"), ({"start_lr": 1.0, "end_lr": 0.1}, "must be larger than start_lr"),
    ({"smoothing": 1.0}, r"smoothing=1.0 must be in \[0, 1\)"), ({"diverge_factor": 1.0}, "diverge_factor=1.0"),
])
def test_bad_arguments_are_refused_before_anything_runs(kwargs, match):
    model = nn.Linear(4, 3)
    with pytest.raises(ValueError, match=match):
        lr_range_test(model, optim.SGD(model.parameters(), lr=0.1), [], nn.CrossEntropyLoss(), **kwargs)


def test_an_empty_loader_is_an_error_and_a_short_one_is_reused():
    model = nn.Linear(4, 3)
    opt = optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="the loader gave no batch"):
        lr_range_test(model, opt, [], nn.CrossEntropyLoss(), steps=3)
    x, y = _data()
    r = lr_range_test(model, opt, [(x, y)], nn.CrossEntropyLoss(), start_lr=1e-6, end_lr=1e-5, steps=5)
    assert len(r.lrs) == 5 and r.diverged_at is None
