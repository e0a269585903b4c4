"""Gradient accumulation over micro-batches gives the full-batch gradient and the full-batch update."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import optim

N, D, C, K = 32, 6, 4, 4  # examples, features, classes/outputs, micro-batches


def data(seed, dtype):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)).astype(dtype)
    Y = rng.normal(size=(N, C)).astype(dtype)
    labels = rng.integers(0, C, size=N)
    W = (rng.normal(size=(D, C)) * 0.5).astype(dtype)
    b = (rng.normal(size=C) * 0.1).astype(dtype)
    return X, Y, labels, W, b


def mse(W, b, X, Y, labels):
    return ((mt.tensor(X) @ W + b - mt.tensor(Y)) ** 2).mean()


def cross_entropy(W, b, X, Y, labels):
    logits = mt.tensor(X) @ W + b
    return -logits.log_softmax(-1)[mt.arange(len(labels)), mt.tensor(labels)].mean()


LOSSES = {"mse": mse, "cross_entropy": cross_entropy}
DTYPES = [np.float64, np.float32]


def micro_batches(X, Y, labels):
    m = N // K
    return [(X[i:i + m], Y[i:i + m], labels[i:i + m]) for i in range(0, N, m)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss_name", list(LOSSES))
def test_manual_pattern_gives_the_full_batch_gradient(loss_name, dtype):
    loss_fn = LOSSES[loss_name]
    X, Y, labels, W0, b0 = data(0, dtype)
    W, b = mt.tensor(W0, requires_grad=True), mt.tensor(b0, requires_grad=True)
    loss_fn(W, b, X, Y, labels).backward()
    full = [W.grad.numpy().copy(), b.grad.numpy().copy()]

    W2, b2 = mt.tensor(W0, requires_grad=True), mt.tensor(b0, requires_grad=True)
    for x, y, lab in micro_batches(X, Y, labels):
        (loss_fn(W2, b2, x, y, lab) / K).backward()
    np.testing.assert_allclose(W2.grad.numpy(), full[0], atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(b2.grad.numpy(), full[1], atol=1e-6, rtol=1e-6)


class RecordingSGD(optim.SGD):
    """SGD that remembers the gradients it was given at each step."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = []

    def step(self, closure=None):
        self.seen.append([p.grad.numpy().copy() for g in self.param_groups for p in g["params"]])
        return super().step(closure)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss_name", list(LOSSES))
def test_accumulator_steps_with_the_full_batch_gradient(loss_name, dtype):
    loss_fn = LOSSES[loss_name]
    X, Y, labels, W0, b0 = data(1, dtype)
    W, b = mt.tensor(W0, requires_grad=True), mt.tensor(b0, requires_grad=True)
    loss_fn(W, b, X, Y, labels).backward()
    full = [W.grad.numpy().copy(), b.grad.numpy().copy()]

    W2, b2 = mt.tensor(W0, requires_grad=True), mt.tensor(b0, requires_grad=True)
    opt = RecordingSGD([W2, b2], lr=0.1)
    acc = optim.GradientAccumulator(opt, steps=K)
    stepped = [acc.backward(loss_fn(W2, b2, x, y, lab)) for x, y, lab in micro_batches(X, Y, labels)]
    assert stepped == [False] * (K - 1) + [True]
    assert len(opt.seen) == 1 and acc.pending == 0
    for got, want in zip(opt.seen[0], full):
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=1e-6)
    assert W2.grad is None and b2.grad is None  # zeroed after the step


@pytest.mark.parametrize("cls, kwargs", [(optim.SGD, dict(lr=0.1, momentum=0.9)), (optim.Adam, dict(lr=0.01)),
                                         (optim.AdamW, dict(lr=0.01, weight_decay=0.1))])
def test_same_updates_as_full_batch_training(cls, kwargs):
    X, Y, labels, W0, b0 = data(2, np.float64)
    Wf, bf = mt.tensor(W0, requires_grad=True), mt.tensor(b0, requires_grad=True)
    full_opt = cls([Wf, bf], **kwargs)
    Wa, ba = mt.tensor(W0, requires_grad=True), mt.tensor(b0, requires_grad=True)
    acc = optim.GradientAccumulator(cls([Wa, ba], **kwargs), steps=K)
    for _ in range(5):
        full_opt.zero_grad()
        cross_entropy(Wf, bf, X, Y, labels).backward()
        full_opt.step()
        for x, y, lab in micro_batches(X, Y, labels):
            acc.backward(cross_entropy(Wa, ba, x, y, lab))
    np.testing.assert_allclose(Wa.detach().numpy(), Wf.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(ba.detach().numpy(), bf.detach().numpy(), atol=1e-10)


def test_flush_steps_on_an_incomplete_group_with_the_mean_gradient():
    X, Y, labels, W0, b0 = data(3, np.float64)
    m = N // K
    # 3 micro-batches of m examples: the mean over those 3 * m examples
    Xs, Ys, Ls = X[:3 * m], Y[:3 * m], labels[:3 * m]
    W, b = mt.tensor(W0, requires_grad=True), mt.tensor(b0, requires_grad=True)
    mse(W, b, Xs, Ys, Ls).backward()
    want = W.grad.numpy().copy()

    W2, b2 = mt.tensor(W0, requires_grad=True), mt.tensor(b0, requires_grad=True)
    opt = RecordingSGD([W2, b2], lr=0.1)
    acc = optim.GradientAccumulator(opt, steps=K)
    for i in range(3):
        assert not acc.backward(mse(W2, b2, Xs[i * m:(i + 1) * m], Ys[i * m:(i + 1) * m], Ls))
    assert acc.pending == 3 and not opt.seen
    assert acc.flush()
    np.testing.assert_allclose(opt.seen[0][0], want, rtol=1e-10)
    assert not acc.flush()  # nothing pending


def test_steps_one_is_ordinary_training():
    W = mt.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([W], lr=0.5)
    acc = optim.GradientAccumulator(opt, steps=1)
    assert acc.backward((W * W).sum())
    assert W.tolist() == [0.0, 0.0]


def test_scale_and_errors():
    opt = optim.SGD([mt.tensor([1.0], requires_grad=True)], lr=0.1)
    acc = optim.GradientAccumulator(opt, steps=4)
    assert acc.scale(mt.tensor(2.0)).item() == 0.5
    assert "steps=4" in repr(acc)
    with pytest.raises(ValueError, match=r"GradientAccumulator: invalid steps=0"):
        optim.GradientAccumulator(opt, steps=0)
    with pytest.raises(TypeError, match="GradientAccumulator: expected an optimizer"):
        optim.GradientAccumulator([mt.tensor([1.0])], steps=2)
