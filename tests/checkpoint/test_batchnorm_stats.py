"""The BatchNorm pitfall: a recompute updates the running statistics again, unless the checkpoint puts them back."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn
from minigrad.checkpoint import checkpoint, checkpoint_sequential


def _model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 6),
                         nn.BatchNorm1d(6), nn.Tanh())


def _train(model, steps, how, **kwargs):
    """Run ``steps`` forward/backward passes on fixed batches; the BatchNorm buffers and the gradients after them."""
    mt.manual_seed(1)
    batches = [mt.randn(8, 2, 6, 6) for _ in range(steps)]
    for x in batches:
        model.zero_grad()
        y = {"plain": model, "checkpoint": lambda x: checkpoint(model, x, **kwargs),
             "lambda": lambda x: checkpoint(lambda h: model(h), x, **kwargs)}[how](x)
        (y * y).sum().backward()
    stats = {name: b.numpy().copy() for name, b in model.named_buffers()}
    return stats, [p.grad.numpy().copy() for p in model.parameters()]


def test_without_the_fix_the_running_statistics_drift_and_count_twice():
    plain, plain_grads = _train(_model(), 3, "plain")
    drifted, grads = _train(_model(), 3, "checkpoint", restore_buffers=False)
    assert int(drifted["1.num_batches_tracked"]) == 6 and int(plain["1.num_batches_tracked"]) == 3
    drift = max(np.abs(drifted[k] - plain[k]).max() for k in plain if "running" in k)
    assert drift > 1e-2  # measured: 0.18 after 3 steps of momentum 0.1
    for a, b in zip(plain_grads, grads):  # training-mode BatchNorm uses batch statistics: gradients are unaffected
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("how", ["checkpoint", "lambda"])
def test_by_default_the_recompute_leaves_every_buffer_as_the_first_forward_did(how):
    plain, plain_grads = _train(_model(), 3, "plain")
    fixed, grads = _train(_model(), 3, how)
    assert plain.keys() == fixed.keys()
    for k in plain:
        assert plain[k].tobytes() == fixed[k].tobytes(), k
    for a, b in zip(plain_grads, grads):
        assert a.tobytes() == b.tobytes()


def test_momentum_none_cumulative_average_is_kept_too_and_the_eval_output_matches():
    def model():
        mt.manual_seed(0)
        return nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5, momentum=None), nn.ReLU(), nn.Linear(5, 5))

    mt.manual_seed(2)
    xs = [mt.randn(6, 3) for _ in range(4)]
    a, b = model(), model()
    for x in xs:
        a(x).sum().backward()
        checkpoint_sequential(b, 2, x).sum().backward()
    a.eval(), b.eval()
    with mt.no_grad():
        assert a(xs[0]).numpy().tobytes() == b(xs[0]).numpy().tobytes()


def test_buffers_are_put_back_even_when_the_recompute_raises():
    mt.manual_seed(0)
    bn = nn.BatchNorm1d(3)
    state = {"fail": False}

    def block(x):
        h = bn(x)
        if state["fail"]:
            raise ValueError("boom")
        return h.exp()

    y = checkpoint(block, mt.randn(4, 3))
    before = bn.running_mean.numpy().copy()
    state["fail"] = True
    with pytest.raises(ValueError, match="boom"):
        y.sum().backward()
    np.testing.assert_array_equal(bn.running_mean.numpy(), before)
    assert int(bn.num_batches_tracked.item()) == 1


def test_pytorch_counts_the_recompute_and_we_do_not():
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint

    tbn = torch.nn.BatchNorm1d(3)
    torch_checkpoint(tbn, torch.randn(4, 3, requires_grad=True), use_reentrant=False).sum().backward()
    assert int(tbn.num_batches_tracked) == 2  # PyTorch does not fix it: users freeze the statistics
    bn = nn.BatchNorm1d(3)
    checkpoint(bn, mt.randn(4, 3, requires_grad=True)).sum().backward()
    assert int(bn.num_batches_tracked.item()) == 1
