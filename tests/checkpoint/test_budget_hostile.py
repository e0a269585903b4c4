"""budget(nbytes) misused and pushed: bad budgets, nesting, re-entry, backward after the block, twice, and
modules that break the rules (changed inputs, a forward that differs when run again)."""

import re

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import memory, nn
from minigrad.checkpoint.budget import budget
from minigrad.checkpoint.budget_stats import BudgetError
from minigrad.checkpoint.errors import CheckpointError
from minigrad.tensor import gradcheck

WIDTH, BATCH = 32, 16
ONE = BATCH * WIDTH * 4  # bytes of one float32 activation of the chain


def chain(depth: int = 6, p: float = 0.2, dtype=None) -> nn.Module:
    mt.manual_seed(0)
    layers = [m for _ in range(depth) for m in (nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Dropout(p))]
    model = nn.Sequential(*layers, nn.Linear(WIDTH, 1))
    return model.double() if dtype == "float64" else model


def run(model, x, context=None, *, retain: bool = False, backward_inside: bool = True):
    """Loss and backward (twice with ``retain``); the gradients."""
    model.zero_grad()
    mt.manual_seed(5)
    if context is None:
        loss = model(x).sum()
    else:
        with context:
            loss = model(x).sum()
            if backward_inside:
                loss.backward(retain_graph=retain)
    if context is None or not backward_inside:
        loss.backward(retain_graph=retain)
    if retain:
        loss.backward()
    return [p.grad.numpy().copy() for p in model.parameters()]


def same(a, b) -> bool:
    return all(np.array_equal(u, v) for u, v in zip(a, b))


@pytest.fixture
def model_and_input():
    model = chain()
    mt.manual_seed(1)
    return model, mt.randn(BATCH, WIDTH)


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-1, ValueError), (-(2**40), ValueError),
                                        (1.5, TypeError), (1e6, TypeError), ("1000000", TypeError),
                                        (None, TypeError), (True, TypeError)])
def test_a_budget_must_be_a_positive_int(bad, error):
    with pytest.raises(error, match="budget: nbytes must be"):
        budget(bad)


def test_numpy_integers_are_budgets():
    assert budget(np.int64(4096)).nbytes == 4096 and type(budget(np.int64(4096)).nbytes) is int


def test_entering_an_active_budget_again_raises_and_leaves_it_working(model_and_input):
    model, x = model_and_input
    reference = run(model, x)
    b = budget(4 * ONE)
    with b:
        with pytest.raises(RuntimeError, match="already active"):
            b.__enter__()
        assert b.active
    assert not b.active
    assert same(run(model, x, b), reference)


def test_reentering_a_finished_budget_continues_its_figures(model_and_input):
    model, x = model_and_input
    reference = run(model, x)
    b = budget(4 * ONE)
    assert same(run(model, x, b), reference)
    calls, remats = b.stats.forward_calls, b.stats.rematerializations
    assert same(run(model, x, b), reference)
    assert b.stats.forward_calls == 2 * calls and b.stats.rematerializations == 2 * remats > 0


def test_nested_budgets_the_innermost_governs_its_block(model_and_input):
    model, x = model_and_input
    reference = run(model, x)
    outer, inner = budget(10**9), budget(4 * ONE)
    model.zero_grad()
    mt.manual_seed(5)
    with outer:
        with inner:
            out = model(x)
        assert outer.active and not inner.active
        loss = nn.MSELoss()(out, mt.zeros_like(out.detach()))  # a module call in the outer block only
        (loss * 0 + out.sum()).backward()
    assert same([p.grad.numpy() for p in model.parameters()], reference)
    assert inner.stats.forward_calls == len(model) and outer.stats.forward_calls == 1
    assert inner.stats.high_water <= inner.stats.budget and inner.stats.evictions > 0
    assert inner.stats.live == 0  # the output the block returned is no reason to keep its inputs


def test_backward_after_the_block_still_rematerializes_under_the_budget(model_and_input):
    model, x = model_and_input
    reference = run(model, x)
    b = budget(4 * ONE)
    assert same(run(model, x, b, backward_inside=False), reference)
    assert b.stats.rematerializations > 0 and b.stats.high_water <= b.stats.budget
    assert b.pool.handles == 0 and b.pool._listeners == [] and b.stats.live == 0  # nothing left listening


def test_a_second_backward_through_a_retained_graph(model_and_input):
    model, x = model_and_input
    reference = run(model, x, retain=True)
    for backward_inside in (True, False):
        b = budget(4 * ONE)
        assert same(run(model, x, b, retain=True, backward_inside=backward_inside), reference)
        assert b.stats.high_water <= b.stats.budget


def test_modules_that_save_nothing_and_ops_outside_modules():
    class Residual(nn.Module):  # a container whose own ops (the sum) run outside any leaf module
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU())

        def forward(self, x):
            return x + self.inner(x) * 0.5

    mt.manual_seed(0)
    model = nn.Sequential(nn.Identity(), Residual(), nn.Flatten(), Residual(), nn.Identity(), nn.Linear(WIDTH, 1))
    x = mt.randn(BATCH, WIDTH)
    reference = run(model, x)
    b = budget(2 * ONE)
    assert same(run(model, x, b), reference)
    assert b.stats.high_water <= b.stats.budget

    lone = nn.Identity()  # a leaf called on its own, saving nothing
    with budget(ONE) as b:
        assert lone(x) is x
    assert b.stats.saved_buffers == 0 and b.stats.forward_calls == 1


def test_too_small_names_the_module_its_bytes_and_a_budget_that_works(model_and_input):
    model, x = model_and_input
    reference = run(model, x)
    with pytest.raises(BudgetError) as error:
        run(model, x, budget(100))
    message = str(error.value)
    assert isinstance(error.value, MemoryError)
    assert "module '1' (ReLU)" in message and f"{ONE:,} bytes" in message and "budget of 100 bytes" in message
    suggested = int(re.search(r"budget\((\d+)\)", message).group(1))
    assert suggested == ONE
    with pytest.raises(BudgetError):  # ReLU's rerun in backward also needs its input: two activations
        run(model, x, budget(suggested))
    assert same(run(model, x, budget(2 * ONE)), reference)


def test_an_input_changed_in_place_after_forward_cannot_be_rerun():
    mt.manual_seed(0)
    model = nn.Sequential(nn.Dropout(0.5), nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                          nn.Linear(WIDTH, 1))
    x = mt.randn(BATCH, WIDTH)
    b = budget(2 * ONE)
    with b:
        loss = model(x).sum()
    assert b.stats.evictions > 0
    x.mul_(2.0)  # Dropout's input: its output, evicted, would come back from other values
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


@pytest.mark.parametrize("second_run", [lambda x: x * 1.0, lambda x: x.relu().relu()],
                         ids=["saves-its-input-instead", "saves-more"])
def test_a_module_that_computes_something_else_when_run_again(second_run):
    class Fickle(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x.relu() if self.calls == 1 else second_run(x)

    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), Fickle(), nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                          nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 1))
    x = mt.randn(BATCH, WIDTH)
    with pytest.raises(CheckpointError, match="module '1' \\(Fickle\\)"):
        run(model, x, budget(2 * ONE))


def test_a_forward_that_raises_leaves_the_budget_usable(model_and_input):
    model, x = model_and_input
    reference = run(model, x)
    b = budget(4 * ONE)
    with pytest.raises(Exception):
        with b:
            model(mt.randn(BATCH, WIDTH + 1))
    assert not b.active and b.pool.current_call is None
    assert same(run(model, x, b), reference)


def test_float64_gradcheck_through_evictions():
    model = chain(depth=3, p=0.0, dtype="float64")
    x = mt.randn(4, WIDTH, dtype=mt.float64, requires_grad=True)
    seen = []

    def f(inp):
        b = budget(2 * 4 * WIDTH * 8)
        with b:
            out = model(inp).sum()
        seen.append(b)
        return out

    assert gradcheck(f, (x,))
    assert any(b.stats.evictions for b in seen)


def run_on(model, x, context=None):
    """``run`` for tensors on any device: the gradients copied to the host."""
    model.zero_grad()
    mt.manual_seed(5)
    if context is None:
        model(x).sum().backward()
    else:
        with context:
            model(x).sum().backward()
    return [p.grad.cpu().numpy() for p in model.parameters()]


def test_on_a_device_whose_arrays_refuse_numpy():
    # the strict test device refuses host NumPy calls as CuPy does: cutting saved views back out must not use them
    from minigrad.testing import strict_backend
    from minigrad.training.recipes import mnist_cnn

    device = strict_backend.register()
    for build, shape, nbytes in ((chain, (BATCH, WIDTH), 6 * ONE), (mnist_cnn, (4, 1, 28, 28), 500_000)):
        model = build().to(device)
        mt.manual_seed(1)
        x = mt.randn(*shape, device=device)
        reference = run_on(model, x)
        b = budget(nbytes)
        assert all(np.array_equal(u, v) for u, v in zip(run_on(model, x, b), reference))
        assert b.stats.rematerializations > 0 and b.stats.high_water <= nbytes



def test_a_batchnorm_run_again_under_the_budget_counts_each_batch_once():
    from minigrad.memory.timeline import category_totals

    def make():
        mt.manual_seed(0)
        layers = []
        for _ in range(8):
            layers += [nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU()]
        return nn.Sequential(*layers)

    plain, limited = make(), make()
    x = mt.randn(32, 64)
    with memory.track() as mem:
        plain(x).sum().backward()
    peak = max(row["activation"] for row in category_totals(mem.timeline, mem.baseline_by_category))
    b = budget(int(0.4 * peak))
    with b:
        limited(x).sum().backward()
    assert b.stats.rematerializations > 0  # some BatchNorm ran again
    for mine, theirs in zip(limited, plain):
        if isinstance(mine, nn.BatchNorm1d):
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                assert np.array_equal(getattr(mine, name).numpy(), getattr(theirs, name).numpy()), name
