"""Layers, init, clipping and error messages: behaviour that does not need PyTorch."""

import math

import numpy as np
import pytest

import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad.amp import casting_policy
from minigrad.tensor import DTypeError, ShapeError

# ----------------------------------------------------------------------------- the public surface


def test_functional_namespace_is_complete():
    names = [
        "linear", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm", "dropout", "relu", "leaky_relu", "gelu",
        "sigmoid", "tanh", "softmax", "log_softmax", "cross_entropy", "nll_loss", "mse_loss",
        "binary_cross_entropy_with_logits", "one_hot", "pad", "flatten",
    ]
    assert all(callable(getattr(F, n)) for n in names)
    assert set(names) <= set(F.__all__)
    assert callable(nn.save) and callable(nn.load)


# ----------------------------------------------------------------------------- Linear


def test_linear_shapes_and_default_init():
    layer = nn.Linear(784, 256)
    assert layer.weight.shape == (256, 784) and layer.bias.shape == (256,)
    bound = 1 / math.sqrt(784)
    w = layer.weight.detach().cpu().numpy()
    assert np.abs(w).max() <= bound and np.abs(layer.bias.detach().cpu().numpy()).max() <= bound
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.05)  # uniform on [-b, b]
    assert layer(mt.randn(32, 784)).shape == (32, 256)
    assert layer(mt.randn(2, 5, 784)).shape == (2, 5, 256)


def test_linear_init_is_seeded():
    mt.manual_seed(3)
    a = nn.Linear(5, 4)
    mt.manual_seed(3)
    b = nn.Linear(5, 4)
    np.testing.assert_array_equal(a.weight.detach().cpu().numpy(), b.weight.detach().cpu().numpy())
    c, d = nn.Linear(5, 4, generator=np.random.default_rng(1)), nn.Linear(5, 4, generator=1)
    np.testing.assert_array_equal(c.weight.detach().cpu().numpy(), d.weight.detach().cpu().numpy())


def test_linear_computes_x_wt_plus_b(rng):
    layer = nn.Linear(3, 2)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    expected = x @ layer.weight.detach().cpu().numpy().T + layer.bias.detach().cpu().numpy()
    np.testing.assert_allclose(layer(mt.tensor(x)).detach().cpu().numpy(), expected, rtol=1e-6)
    assert nn.Linear(3, 2, bias=False)(mt.tensor(x)).shape == (4, 2)


def test_linear_error_names_the_layer_and_the_shapes():
    with pytest.raises(ShapeError) as info:
        nn.Linear(784, 256)(mt.randn(32, 512))
    assert str(info.value) == "Linear(784, 256): input has 512 features in its last dimension (shape (32, 512)); expected 784"
    with pytest.raises(ShapeError, match=r"x.flatten\(1\)"):
        nn.Linear(784, 10)(mt.randn(8, 1, 28, 28))
    with pytest.raises(TypeError, match="must be a Tensor"):
        nn.Linear(3, 2)(np.zeros((1, 3)))


# ----------------------------------------------------------------------------- Conv2d


def test_conv2d_shapes_and_init():
    layer = nn.Conv2d(3, 8, 5, stride=2, padding=2)
    assert layer.weight.shape == (8, 3, 5, 5) and layer.bias.shape == (8,)
    bound = 1 / math.sqrt(3 * 5 * 5)
    assert np.abs(layer.weight.detach().cpu().numpy()).max() <= bound
    assert layer(mt.randn(4, 3, 28, 28)).shape == (4, 8, 14, 14)
    assert layer(mt.randn(3, 28, 28)).shape == (8, 14, 14)  # unbatched, as in PyTorch
    assert nn.Conv2d(1, 2, 3, padding="same")(mt.randn(1, 1, 5, 7)).shape == (1, 2, 5, 7)


def test_conv2d_output_keeps_the_input_memory_format(rng):
    """PyTorch's rule: contiguous in, contiguous out (so .view works); channels-last in, channels-last out."""
    layer = nn.Conv2d(3, 4, 3, padding=1)
    x = mt.randn(2, 3, 8, 8)
    out = layer(x)
    assert out.shape == (2, 4, 8, 8) and out.is_contiguous()
    assert out.view(2, -1).shape == (2, 256)
    pooled = nn.MaxPool2d(2)(nn.ReLU()(out))
    assert pooled.is_contiguous() and pooled.view(2, -1).shape == (2, 64)
    x_cl = mt.tensor(np.ascontiguousarray(x.cpu().numpy().transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    out_cl = layer(x_cl)
    assert not out_cl.is_contiguous() and out_cl.stride(1) == 1
    pooled_cl = nn.MaxPool2d(2)(nn.ReLU()(out_cl))  # pooling keeps the memory format too
    assert pooled_cl.stride(1) == 1
    np.testing.assert_array_equal(pooled_cl.detach().cpu().numpy(), pooled.detach().cpu().numpy())
    np.testing.assert_allclose(out_cl.detach().cpu().numpy(), out.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    model = nn.Sequential(nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 5, 3), nn.AvgPool2d(2), nn.Flatten())
    y = model(out_cl)
    assert y.shape == (2, 5)
    y.sum().backward()


def test_conv2d_error_names_the_layer_and_suggests_a_fix():
    with pytest.raises(ShapeError) as info:
        nn.Conv2d(1, 8, kernel_size=5)(mt.randn(32, 28, 28))
    assert str(info.value) == (
        "Conv2d(1, 8, kernel_size=5): expected input (N, 1, H, W), got (32, 28, 28) — add a channel dimension with x.unsqueeze(1)"
    )
    with pytest.raises(ShapeError, match=r"permute\(0, 3, 1, 2\)"):
        nn.Conv2d(3, 8, 3)(mt.randn(2, 28, 28, 3))
    with pytest.raises(ShapeError, match=r"x.view\(-1, 1, 28, 28\)"):
        nn.Conv2d(1, 8, 3)(mt.randn(2, 784))
    with pytest.raises(ShapeError, match="at least as large as the kernel"):
        nn.Conv2d(1, 8, 5)(mt.randn(2, 1, 3, 3))
    with pytest.raises(DTypeError, match="same dtype"):
        nn.Conv2d(1, 8, 3)(mt.randn(2, 1, 5, 5, dtype=mt.float64))
    with pytest.raises(NotImplementedError, match="groups"):
        nn.Conv2d(4, 4, 3, groups=2)


def test_conv2d_float16_runs_with_float32_accumulation(rng):
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    layer = nn.Conv2d(3, 4, 3)
    expected = layer(mt.tensor(x)).detach().cpu().numpy()
    layer.half()
    out = layer(mt.tensor(x).half())
    assert out.dtype == mt.float16
    np.testing.assert_allclose(out.detach().cpu().numpy().astype(np.float32), expected, rtol=1e-2, atol=1e-2)


# ----------------------------------------------------------------------------- pooling


def test_max_pool_picks_the_window_maximum():
    x = mt.tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    assert nn.MaxPool2d(2)(x).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert nn.AvgPool2d(2)(x).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]


def test_max_pool_backward_goes_to_the_argmax_only():
    x = mt.tensor(np.array([[[[1.0, 3.0], [2.0, 0.0]]]]), requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad.tolist() == [[[[0.0, 1.0], [0.0, 0.0]]]]


def test_pool_errors():
    with pytest.raises(ShapeError, match="output would be empty"):
        F.max_pool2d(mt.randn(1, 1, 2, 2), 3)
    with pytest.raises(ValueError, match="half the kernel size"):
        F.avg_pool2d(mt.randn(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(ShapeError, match="pool before flattening"):
        nn.MaxPool2d(2)(mt.randn(4, 10))


# ----------------------------------------------------------------------------- BatchNorm


def test_batchnorm_normalises_in_training_and_uses_running_stats_in_eval(rng):
    layer = nn.BatchNorm2d(3, momentum=0.5)
    x = mt.tensor((rng.standard_normal((8, 3, 4, 4)) * 5 + 3).astype(np.float32))
    out = layer(x).detach().cpu().numpy()
    np.testing.assert_allclose(out.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(out.var(axis=(0, 2, 3)), 1, atol=1e-3)
    data = x.cpu().numpy()
    n = data.size / 3
    np.testing.assert_allclose(layer.running_mean.cpu().numpy(), 0.5 * data.mean(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(layer.running_var.cpu().numpy(), 0.5 + 0.5 * data.var(axis=(0, 2, 3)) * n / (n - 1), rtol=1e-5)
    layer.eval()
    before = layer.running_mean.cpu().numpy().copy()
    single = layer(x[:1])  # one example is fine in eval mode
    np.testing.assert_array_equal(layer.running_mean.cpu().numpy(), before)  # eval does not update
    expected = (data[:1] - before.reshape(1, 3, 1, 1)) / np.sqrt(layer.running_var.cpu().numpy().reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(single.detach().cpu().numpy(), expected, rtol=1e-4, atol=1e-5)


def test_batchnorm_buffers_and_errors():
    layer = nn.BatchNorm1d(4)
    assert [n for n, _ in layer.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert layer.num_batches_tracked.dtype == mt.int64
    layer(mt.randn(3, 4))
    layer(mt.randn(3, 4, 5))
    assert int(layer.num_batches_tracked.item()) == 2
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        layer(mt.randn(1, 4))
    with pytest.raises(ShapeError, match="use BatchNorm2d"):
        layer(mt.randn(2, 4, 3, 3))
    with pytest.raises(ShapeError, match="num_features=5"):
        layer(mt.randn(2, 5))
    assert list(nn.BatchNorm2d(2, affine=False).parameters()) == []


# ----------------------------------------------------------------------------- Dropout


def test_dropout_train_and_eval():
    layer = nn.Dropout(0.25)
    x = mt.ones(200, 100)
    out = layer(x).cpu().numpy()
    kept = out != 0
    assert kept.mean() == pytest.approx(0.75, abs=0.01)
    np.testing.assert_allclose(out[kept], 1 / 0.75)
    layer.eval()
    assert layer(x) is x


def test_dropout_is_seeded_and_backward_uses_the_same_mask():
    mt.manual_seed(5)
    a = nn.Dropout(0.5)(mt.ones(10, 10)).cpu().numpy()
    mt.manual_seed(5)
    b = nn.Dropout(0.5)(mt.ones(10, 10)).cpu().numpy()
    np.testing.assert_array_equal(a, b)
    c = nn.Dropout(0.5, generator=np.random.default_rng(0))(mt.ones(10, 10)).cpu().numpy()
    d = nn.Dropout(0.5, generator=0)(mt.ones(10, 10)).cpu().numpy()
    np.testing.assert_array_equal(c, d)
    x = mt.ones(6, 6, requires_grad=True)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), y.detach().cpu().numpy())  # d(sum)/dx = mask * 2 = y for x = 1


def test_dropout_edge_probabilities():
    x = mt.randn(3, 3)
    assert F.dropout(x, 0.0) is x
    assert not F.dropout(x, 1.0).cpu().numpy().any()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nn.Dropout(1.5)


# ----------------------------------------------------------------------------- activations, Flatten, Identity


def test_activation_modules():
    x = mt.tensor([[-2.0, -0.5, 0.0, 0.5, 2.0]])
    assert nn.ReLU()(x).tolist() == [[0.0, 0.0, 0.0, 0.5, 2.0]]
    np.testing.assert_allclose(nn.LeakyReLU(0.1)(x).cpu().numpy(), [[-0.2, -0.05, 0.0, 0.5, 2.0]], rtol=1e-6)
    np.testing.assert_allclose(nn.Sigmoid()(x).cpu().numpy(), 1 / (1 + np.exp(-x.cpu().numpy())), rtol=1e-6)
    np.testing.assert_allclose(nn.Tanh()(x).cpu().numpy(), np.tanh(x.cpu().numpy()), rtol=1e-6)
    assert nn.GELU()(x).shape == x.shape
    np.testing.assert_allclose(nn.Softmax(dim=1)(x).cpu().numpy().sum(), 1, rtol=1e-6)
    np.testing.assert_allclose(np.exp(nn.LogSoftmax(dim=1)(x).cpu().numpy()).sum(), 1, rtol=1e-6)
    assert nn.Identity(3, foo=1)(x) is x
    assert nn.Flatten()(mt.randn(2, 3, 4, 5)).shape == (2, 60)
    assert nn.Flatten(0, 1)(mt.randn(2, 3, 4)).shape == (6, 4)


# ----------------------------------------------------------------------------- losses


def test_loss_modules_match_functional(rng):
    x = mt.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    y = mt.tensor(np.array([0, 2, 1, 1, 0]))
    assert nn.CrossEntropyLoss(label_smoothing=0.1)(x, y).item() == F.cross_entropy(x, y, label_smoothing=0.1).item()
    assert nn.NLLLoss(reduction="sum")(F.log_softmax(x, 1), y).item() == pytest.approx(F.cross_entropy(x, y, reduction="sum").item(), rel=1e-6)
    assert nn.CrossEntropyLoss(reduction="none")(x, y).shape == (5,)
    t = mt.tensor(rng.uniform(0, 1, (5, 3)).astype(np.float32))
    assert nn.MSELoss()(x, t).item() == pytest.approx(float(((x.cpu().numpy() - t.cpu().numpy()) ** 2).mean()), rel=1e-6)
    p = 1 / (1 + np.exp(-x.cpu().numpy()))
    bce = -(t.cpu().numpy() * np.log(p) + (1 - t.cpu().numpy()) * np.log(1 - p)).mean()
    assert nn.BCEWithLogitsLoss()(x, t).item() == pytest.approx(float(bce), rel=1e-5)


def test_cross_entropy_ignore_index_counts_only_the_other_rows(rng):
    x = mt.tensor(rng.standard_normal((4, 3)))
    y = mt.tensor(np.array([0, -100, 2, -100]))
    per_row = F.cross_entropy(x, y, reduction="none").cpu().numpy()
    assert per_row[1] == 0 and per_row[3] == 0
    assert F.cross_entropy(x, y).item() == pytest.approx(per_row.sum() / 2)


def test_cross_entropy_stable_without_torch():
    x = mt.tensor([[1e4, 0.0, -1e4]], requires_grad=True)
    loss = F.cross_entropy(x, mt.tensor([2]))
    assert loss.item() == pytest.approx(2e4, rel=1e-6)
    loss.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [[1.0, 0.0, -1.0]], atol=1e-6)


def test_loss_errors():
    with pytest.raises(IndexError, match="target contains class 10 but the input has 10 classes"):
        F.cross_entropy(mt.randn(4, 10), mt.tensor([1, 2, 3, 10]))
    with pytest.raises(DTypeError, match=r"target.long\(\)"):
        F.cross_entropy(mt.randn(4, 10), mt.tensor([1.0, 2, 3, 4]))
    with pytest.raises(ShapeError, match=r"target.squeeze\(1\)"):
        F.cross_entropy(mt.randn(4, 10), mt.tensor([[1], [2], [3], [4]]))
    with pytest.raises(ShapeError, match="same shape"):
        F.mse_loss(mt.randn(4, 1), mt.randn(4))
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(NotImplementedError, match="weight"):
        nn.CrossEntropyLoss(weight=mt.ones(3))
    with pytest.raises(DTypeError, match=r"target.float\(\)"):
        F.binary_cross_entropy_with_logits(mt.randn(3), mt.tensor([0, 1, 1]))


# ----------------------------------------------------------------------------- init


def test_calculate_gain():
    assert nn.init.calculate_gain("linear") == 1
    assert nn.init.calculate_gain("conv2d") == 1
    assert nn.init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert nn.init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    with pytest.raises(ValueError, match="unsupported"):
        nn.init.calculate_gain("swish")


@pytest.mark.parametrize(
    "fn, kwargs, expected_std",
    [
        (nn.init.kaiming_uniform_, {"nonlinearity": "relu"}, math.sqrt(2 / 200)),
        (nn.init.kaiming_normal_, {"nonlinearity": "relu"}, math.sqrt(2 / 200)),
        (nn.init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2 / 300)),
        (nn.init.xavier_uniform_, {}, math.sqrt(2 / 500)),
        (nn.init.xavier_normal_, {"gain": 2.0}, 2 * math.sqrt(2 / 500)),
    ],
)
def test_init_scales(fn, kwargs, expected_std):
    w = mt.empty(300, 200)
    assert fn(w, **kwargs) is w
    assert w.cpu().numpy().std() == pytest.approx(expected_std, rel=0.03)
    assert abs(w.cpu().numpy().mean()) < 0.1 * expected_std


def test_init_in_place_seeded_and_outside_the_graph():
    p = nn.Parameter(mt.empty(4, 5, 3, 3))
    nn.init.kaiming_uniform_(p, generator=np.random.default_rng(0))
    first = p.detach().cpu().numpy().copy()
    nn.init.kaiming_uniform_(p, generator=0)
    np.testing.assert_array_equal(first, p.detach().cpu().numpy())
    assert p.is_leaf and p.grad_fn is None
    assert np.abs(first).max() <= math.sqrt(6 / (5 * 9))  # fan_in counts the kernel: 5 * 3 * 3
    nn.init.constant_(p, 0.5)
    assert (p.detach().cpu().numpy() == 0.5).all()
    b = mt.empty(7)
    nn.init.uniform_(b, -0.1, 0.1)
    nn.init.normal_(b, 1.0, 0.01)
    assert abs(b.cpu().numpy().mean() - 1) < 0.05
    nn.init.ones_(b)
    nn.init.zeros_(b)
    assert not b.cpu().numpy().any()
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(b)


# ----------------------------------------------------------------------------- gradient clipping


def test_clip_grad_norm():
    a, b = nn.Parameter(mt.zeros(3)), nn.Parameter(mt.zeros(4))
    a.grad, b.grad = mt.tensor([3.0, 0.0, 0.0]), mt.tensor([0.0, 4.0, 0.0, 0.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    norm_after = math.sqrt(float((a.grad.cpu().numpy() ** 2).sum() + (b.grad.cpu().numpy() ** 2).sum()))
    assert norm_after == pytest.approx(1.0, rel=1e-5)
    # below the threshold: untouched
    assert nn.utils.clip_grad_norm_(iter([a, b]), max_norm=10.0).item() == pytest.approx(1.0, rel=1e-5)
    assert norm_after == pytest.approx(math.sqrt(float((a.grad.cpu().numpy() ** 2).sum() + (b.grad.cpu().numpy() ** 2).sum())))
    assert nn.utils.clip_grad_norm_([nn.Parameter(mt.zeros(2))], 1.0).item() == 0.0  # no grads at all
    a.grad = mt.tensor([float("nan"), 0.0, 0.0])
    with pytest.raises(RuntimeError, match="nan"):
        nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)


def test_clip_grad_value():
    p = nn.Parameter(mt.zeros(4))
    p.grad = mt.tensor([-3.0, -0.5, 0.5, 3.0])
    nn.utils.clip_grad_value_(p, 1.0)
    assert p.grad.tolist() == [-1.0, -0.5, 0.5, 1.0]


# ----------------------------------------------------------------------------- a tiny training run


def test_a_small_cnn_learns(rng):
    """A few SGD steps on a fixed batch bring the loss down (everything wired together)."""
    mt.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Dropout(0.1), nn.Flatten(), nn.Linear(4 * 4 * 4, 3),
    )
    x = mt.tensor(rng.standard_normal((12, 1, 8, 8)).astype(np.float32))
    y = mt.tensor(np.arange(12) % 3)
    losses = []
    for _ in range(30):
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        with mt.no_grad():
            for p in model.parameters():
                p.sub_(p.grad * 0.1)
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    model.eval()
    with mt.no_grad():
        assert (model(x).argmax(1).cpu().numpy() == y.cpu().numpy()).mean() > 0.9


def test_layers_run_under_a_dtype_policy():
    """With a mixed-precision policy installed (chapter 09), conv runs in float16 and batch norm/losses in float32."""
    seen = []

    def policy(op, dtypes):
        seen.append(op)
        return mt.float16 if op in ("conv2d", "matmul") else mt.float32 if op in ("batch_norm", "cross_entropy") else None

    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 3))
    with mt.dtype_policy(casting_policy(policy)):
        loss = F.cross_entropy(model(mt.randn(4, 1, 6, 6)), mt.tensor([0, 1, 2, 0]))
    assert {"conv2d", "batch_norm", "max_pool2d", "cross_entropy"} <= set(seen)
    assert loss.dtype == mt.float32 and np.isfinite(loss.item())
    loss.backward()
    assert all(p.grad is not None and p.grad.dtype == mt.float32 for p in model.parameters())
