"""Forward values and gradients equal PyTorch's (torch.nn.functional) on random cases; skipped without torch."""

import numpy as np
import pytest

import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.tensor as mt


def run_both(torch, mg_fn, torch_fn, arrays, grad_of=None, rng=None, out_grad=True):
    """Run mg_fn on minigrad tensors and torch_fn on torch tensors made from ``arrays``; backprop a random output gradient.

    Returns (minigrad output, torch output, [(minigrad grad, torch grad) per float array]).
    """
    rng = rng or np.random.default_rng(0)
    mg = [mt.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    th = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    mo, to = mg_fn(*mg), torch_fn(*th)
    g = rng.standard_normal(tuple(to.shape))
    mo.backward(mt.tensor(g, dtype=mo.dtype))
    to.backward(torch.tensor(g, dtype=to.dtype))
    grads = [(m.grad.cpu().numpy(), t.grad.cpu().numpy()) for m, t in zip(mg, th) if t.requires_grad]
    return mo.detach().cpu().numpy(), to.detach().cpu().numpy(), grads


def assert_same(result, rtol=1e-9, atol=1e-10):
    mo, to, grads = result
    assert mo.shape == to.shape
    np.testing.assert_allclose(mo, to, rtol=rtol, atol=atol)
    for i, (mg, tg) in enumerate(grads):
        np.testing.assert_allclose(mg, tg, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")


# ----------------------------------------------------------------------------- conv2d


@pytest.mark.parametrize("seed", range(6))
def test_conv2d_random_cases(torch, seed):
    rng = np.random.default_rng(seed)
    N, C, O = rng.integers(1, 4), rng.integers(1, 5), rng.integers(1, 5)
    kh, kw = rng.integers(1, 4, 2)
    stride = tuple(int(s) for s in rng.integers(1, 3, 2))
    dilation = tuple(int(d) for d in rng.integers(1, 3, 2))
    padding = tuple(int(p) for p in rng.integers(0, 3, 2))
    H = dilation[0] * (kh - 1) + 1 + rng.integers(0, 6)
    W = dilation[1] * (kw - 1) + 1 + rng.integers(0, 6)
    x = rng.standard_normal((N, C, H, W))
    w = rng.standard_normal((O, C, kh, kw))
    b = rng.standard_normal(O)
    result = run_both(
        torch,
        lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation),
        lambda x, w, b: torch.nn.functional.conv2d(x, w, b, stride, padding, dilation),
        [x, w, b], rng=rng,
    )
    assert_same(result)


def test_conv2d_float32_mnist_sized(torch, rng):
    x = rng.standard_normal((8, 3, 28, 28)).astype(np.float32)
    w = rng.standard_normal((16, 3, 5, 5)).astype(np.float32) * 0.1
    b = rng.standard_normal(16).astype(np.float32)
    result = run_both(
        torch,
        lambda x, w, b: F.conv2d(x, w, b, padding=2),
        lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=2),
        [x, w, b], rng=rng,
    )
    assert_same(result, rtol=1e-4, atol=1e-3)  # float32 sums of thousands of terms of size ~100


def test_conv2d_module_matches_torch_module(torch, rng):
    layer = nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2))
    ref = torch.nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2))
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.detach().cpu().numpy()))
        ref.bias.copy_(torch.tensor(layer.bias.detach().cpu().numpy()))
    x = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    np.testing.assert_allclose(layer(mt.tensor(x)).detach().cpu().numpy(), ref(torch.tensor(x)).detach().cpu().numpy(), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- pooling


@pytest.mark.parametrize("seed", range(5))
def test_max_pool2d_random_cases(torch, seed):
    rng = np.random.default_rng(seed)
    kernel = tuple(int(k) for k in rng.integers(1, 4, 2))
    stride = tuple(int(s) for s in rng.integers(1, 4, 2))
    padding = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
    x = rng.standard_normal((2, 3, int(rng.integers(4, 9)), int(rng.integers(4, 9))))
    result = run_both(
        torch,
        lambda x: F.max_pool2d(x, kernel, stride, padding),
        lambda x: torch.nn.functional.max_pool2d(x, kernel, stride, padding),
        [x], rng=rng,
    )
    assert_same(result)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_random_cases(torch, seed, count_include_pad):
    rng = np.random.default_rng(seed)
    kernel = tuple(int(k) for k in rng.integers(1, 4, 2))
    stride = tuple(int(s) for s in rng.integers(1, 4, 2))
    padding = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
    x = rng.standard_normal((2, 3, int(rng.integers(4, 9)), int(rng.integers(4, 9))))
    result = run_both(
        torch,
        lambda x: F.avg_pool2d(x, kernel, stride, padding, count_include_pad=count_include_pad),
        lambda x: torch.nn.functional.avg_pool2d(x, kernel, stride, padding, count_include_pad=count_include_pad),
        [x], rng=rng,
    )
    assert_same(result)


def test_max_pool2d_ties_go_to_the_first_maximum(torch):
    x = np.ones((1, 1, 4, 4))
    result = run_both(torch, lambda x: F.max_pool2d(x, 2), lambda x: torch.nn.functional.max_pool2d(x, 2), [x])
    assert_same(result)


# ----------------------------------------------------------------------------- batch norm


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (4, 3, 5, 6)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_function(torch, rng, shape, training):
    C = shape[1]
    x = rng.standard_normal(shape) * 2 + 1
    w, b = rng.standard_normal(C), rng.standard_normal(C)
    mean, var = rng.standard_normal(C), rng.uniform(0.5, 2, C)
    m_stats = [mt.tensor(mean), mt.tensor(var)]
    t_stats = [torch.tensor(mean), torch.tensor(var)]
    result = run_both(
        torch,
        lambda x, w, b: F.batch_norm(x, *m_stats, w, b, training=training, momentum=0.3, eps=1e-3),
        lambda x, w, b: torch.nn.functional.batch_norm(x, *t_stats, w, b, training=training, momentum=0.3, eps=1e-3),
        [x, w, b], rng=rng,
    )
    assert_same(result)
    for m, t in zip(m_stats, t_stats):  # the running statistics were updated alike (or left alone)
        np.testing.assert_allclose(m.cpu().numpy(), t.cpu().numpy(), rtol=1e-12)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm2d_running_stats_after_a_few_steps(torch, rng, momentum):
    layer = nn.BatchNorm2d(3, momentum=momentum)
    ref = torch.nn.BatchNorm2d(3, momentum=momentum)
    for _ in range(4):
        x = (rng.standard_normal((5, 3, 4, 4)) * 3 + 2).astype(np.float32)
        out = layer(mt.tensor(x))
        expected = ref(torch.tensor(x))
        np.testing.assert_allclose(out.detach().cpu().numpy(), expected.detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.running_mean.cpu().numpy(), ref.running_mean.cpu().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.running_var.cpu().numpy(), ref.running_var.cpu().numpy(), rtol=1e-5, atol=1e-6)
    assert int(layer.num_batches_tracked.item()) == int(ref.num_batches_tracked) == 4
    layer.eval(), ref.eval()
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(layer(mt.tensor(x)).detach().cpu().numpy(), ref(torch.tensor(x)).detach().cpu().numpy(), rtol=1e-4, atol=1e-5)


def test_batchnorm1d_without_running_stats(torch, rng):
    layer = nn.BatchNorm1d(4, affine=False, track_running_stats=False).eval()
    ref = torch.nn.BatchNorm1d(4, affine=False, track_running_stats=False).eval()
    x = rng.standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(layer(mt.tensor(x)).cpu().numpy(), ref(torch.tensor(x)).cpu().numpy(), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- losses


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_random_cases(torch, seed, reduction):
    rng = np.random.default_rng(seed)
    N, C = int(rng.integers(1, 9)), int(rng.integers(2, 7))
    x = rng.standard_normal((N, C)) * 3
    y = rng.integers(0, C, N)
    ignore = int(y[0]) if seed % 2 else -100
    smoothing = [0.0, 0.1, 0.3, 1.0][seed]
    kwargs = dict(ignore_index=ignore, reduction=reduction, label_smoothing=smoothing)
    result = run_both(
        torch, lambda x, y: F.cross_entropy(x, y, **kwargs), lambda x, y: torch.nn.functional.cross_entropy(x, y, **kwargs),
        [x, y], rng=rng,
    )
    if reduction == "mean" and seed % 2 and (y == ignore).all():
        assert np.isnan(result[0]) and np.isnan(result[1])
        return
    assert_same(result)


def test_cross_entropy_spatial_targets(torch, rng):
    x, y = rng.standard_normal((2, 4, 3, 5)), rng.integers(0, 4, (2, 3, 5))
    for reduction in ("mean", "none"):
        result = run_both(
            torch,
            lambda x, y: F.cross_entropy(x, y, reduction=reduction, label_smoothing=0.1),
            lambda x, y: torch.nn.functional.cross_entropy(x, y, reduction=reduction, label_smoothing=0.1),
            [x, y], rng=rng,
        )
        assert_same(result)


def test_cross_entropy_is_stable_at_huge_logits(torch):
    x = np.array([[1e4, 0.0, -1e4], [0.0, 1e4, 1e4], [-1e4, -1e4, -1e4]], dtype=np.float32)
    y = np.array([0, 2, 1])
    mo, to, grads = run_both(torch, F.cross_entropy, torch.nn.functional.cross_entropy, [x, y])
    assert np.isfinite(mo) and np.isfinite(grads[0][0]).all()
    np.testing.assert_allclose(mo, to, rtol=1e-6)
    np.testing.assert_allclose(grads[0][0], grads[0][1], atol=1e-7)
    # and with float64 at 1e4 too, and for the module form
    loss = nn.CrossEntropyLoss()(mt.tensor(x.astype(np.float64) * 10), mt.tensor(y))
    assert np.isfinite(loss.item())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(torch, rng, reduction):
    x = np.log(rng.dirichlet(np.ones(5), 7))
    y = rng.integers(0, 5, 7)
    kwargs = dict(ignore_index=int(y[1]), reduction=reduction)
    assert_same(run_both(torch, lambda x, y: F.nll_loss(x, y, **kwargs), lambda x, y: torch.nn.functional.nll_loss(x, y, **kwargs), [x, y], rng=rng))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(torch, rng, reduction):
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    assert_same(run_both(torch, lambda a, b: F.mse_loss(a, b, reduction=reduction), lambda a, b: torch.nn.functional.mse_loss(a, b, reduction=reduction), [a, b], rng=rng))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits(torch, rng, reduction):
    x = rng.standard_normal((5, 3)) * 4
    x[0, 0], x[1, 1] = 800.0, -800.0  # exp(800) overflows float64: the stable form must not care
    y = rng.uniform(0, 1, (5, 3))
    result = run_both(
        torch,
        lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction=reduction),
        lambda x, y: torch.nn.functional.binary_cross_entropy_with_logits(x, y, reduction=reduction),
        [x, y], rng=rng,
    )
    assert np.isfinite(result[0]).all()
    assert_same(result)


# ----------------------------------------------------------------------------- activations and friends


@pytest.mark.parametrize(
    "name, kwargs",
    [("relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("gelu", {}), ("gelu", {"approximate": "tanh"}),
     ("sigmoid", {}), ("tanh", {}), ("softmax", {"dim": 1}), ("log_softmax", {"dim": 0})],
)
def test_activations(torch, rng, name, kwargs):
    x = rng.standard_normal((4, 5)) * 3
    mg_fn, th_fn = getattr(F, name), getattr(torch.nn.functional, name)
    assert_same(run_both(torch, lambda x: mg_fn(x, **kwargs), lambda x: th_fn(x, **kwargs), [x], rng=rng), rtol=1e-7, atol=1e-9)


def test_clip_grad_norm_matches_torch(torch, rng):
    grads = [rng.standard_normal(s) for s in [(3, 4), (4,), (2, 2, 2)]]
    for norm_type in (2.0, 1.0, float("inf")):
        mps = [mt.tensor(g * 0, requires_grad=True) for g in grads]
        tps = [torch.tensor(g * 0, requires_grad=True) for g in grads]
        for p, q, g in zip(mps, tps, grads):
            p.grad, q.grad = mt.tensor(g), torch.tensor(g)
        mnorm = nn.utils.clip_grad_norm_(mps, 0.5, norm_type)
        tnorm = torch.nn.utils.clip_grad_norm_(tps, 0.5, norm_type)
        assert mnorm.item() == pytest.approx(tnorm.item(), rel=1e-6)
        for p, q in zip(mps, tps):
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-6)
