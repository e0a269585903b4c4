"""Moving models, optimizer state and batches between devices; the fused ops behind the core's dispatch.

Runs without a GPU: the strict test device (arrays that refuse host NumPy, as
CuPy's do) stands in for "cuda", with the fused ops registered as the suites
register them (the kernels' array-operation stand-ins); and a NumPy-backed
device named "simcuda" gets the *real* CUDA registration, so the library's
kernels run on the simulator behind relu, cross-entropy and Adam.
Tolerances: float64 paths match to 1e-12; float32 kernels on the simulator
match the default float32 path to rtol 1e-5, atol 1e-6.
"""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.data import DataLoader, TensorDataset
from minigrad.gpu.device import backend_ops
from minigrad.nn import functional as F
from minigrad.nn.functional.linear import LinearFunction
from minigrad.tensor.ops.elementwise import Relu
from minigrad.testing import strict_backend
from minigrad.testing.reference_kernels import REFERENCE_KERNELS
from minigrad.testing.strict_backend import StrictArray


@pytest.fixture
def strict():
    """The strict device with the fused ops registered (as tests/conftest.py does for the suites)."""
    dev = strict_backend.register()
    backend_ops.register_fused_ops(dev.type, REFERENCE_KERNELS)
    yield dev
    backend_ops.unregister_fused_ops(dev.type)


@pytest.fixture
def simcuda():
    """A NumPy-backed device with the CUDA registration: the real kernels run on the simulator."""
    mt.register_backend(mt.Backend("simcuda", np, (), lambda a: np.array(a, copy=True),
                                   lambda a, index=None: np.array(a, copy=True), default_index=0))
    backend_ops.register_fused_ops("simcuda", backend_ops.CUDA_KERNELS)
    yield mt.device("simcuda")
    backend_ops.unregister_fused_ops("simcuda")
    mt.unregister_backend("simcuda")


def _model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))


def _batch(dtype=np.float32, rows=5):
    rng = np.random.default_rng(7)
    return rng.standard_normal((rows, 4)).astype(dtype), rng.integers(0, 3, rows)


def _train(model, opt, x, y, steps=3):
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return loss


# ---------------------------------------------------------------------- Module.to and optimizer state


def test_module_to_moves_every_parameter_keeping_the_objects(strict):
    model = _model()
    params = list(model.parameters())
    before = [p.detach().numpy().copy() for p in params]
    assert model.to(strict) is model
    assert list(model.parameters()) == params and all(a is b for a, b in zip(model.parameters(), params))
    assert all(p.device is strict and type(p._data) is StrictArray for p in params)
    model.cpu()
    assert all(p.device is mt.cpu for p in params)
    np.testing.assert_array_equal(params[0].detach().numpy(), before[0])


def test_training_on_the_strict_device_matches_the_cpu(strict):
    x, y = _batch()
    cpu_model = _model()
    cpu_opt = optim.Adam(cpu_model.parameters(), lr=1e-2, weight_decay=1e-3)
    cpu_loss = _train(cpu_model, cpu_opt, mt.tensor(x), mt.tensor(y))

    model = _model().to(strict)
    opt = optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-3)
    loss = _train(model, opt, mt.tensor(x).to(strict), mt.tensor(y).to(strict))
    assert all(s["exp_avg"].device is strict and s["exp_avg_sq"].device is strict for s in opt.state.values())
    np.testing.assert_allclose(loss.item(), cpu_loss.item(), rtol=1e-5)
    for p, q in zip(model.parameters(), cpu_model.parameters()):
        np.testing.assert_allclose(p.cpu().detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_optimizer_state_follows_parameters_moved_after_some_steps(strict):
    x, y = _batch()
    model = _model()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    _train(model, opt, mt.tensor(x), mt.tensor(y), steps=1)
    assert all(s["exp_avg"].device is mt.cpu for s in opt.state.values())
    model.to(strict)
    _train(model, opt, mt.tensor(x).to(strict), mt.tensor(y).to(strict), steps=1)
    assert all(s["exp_avg"].device is strict and s["exp_avg_sq"].device is strict for s in opt.state.values())
    assert all(s["step"] == 2 for s in opt.state.values())


def test_optimizer_state_dict_crosses_devices_both_ways(strict):
    x, y = _batch()
    model = _model().to(strict)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    _train(model, opt, mt.tensor(x).to(strict), mt.tensor(y).to(strict), steps=2)
    saved = opt.state_dict()

    host_model = _model()
    host_opt = optim.Adam(host_model.parameters(), lr=1e-2)
    host_opt.load_state_dict(saved)  # strict -> cpu
    for (p, s), q in zip(opt.state.items(), host_model.parameters()):
        restored = host_opt.state[q]
        assert restored["exp_avg"].device is mt.cpu and restored["step"] == s["step"]
        np.testing.assert_array_equal(restored["exp_avg_sq"].numpy(), s["exp_avg_sq"].cpu().numpy())

    back_opt = optim.Adam(model.parameters(), lr=1e-2)
    back_opt.load_state_dict(host_opt.state_dict())  # cpu -> strict
    assert all(s["exp_avg"].device is strict for s in back_opt.state.values())


def test_sgd_momentum_and_rmsprop_keep_their_state_on_the_parameters_device(strict):
    x, y = _batch()
    for make in (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.RMSprop(ps, lr=1e-2)):
        model = _model().to(strict)
        opt = make(model.parameters())
        _train(model, opt, mt.tensor(x).to(strict), mt.tensor(y).to(strict), steps=2)
        tensors = [v for s in opt.state.values() for v in s.values() if isinstance(v, mt.Tensor)]
        assert tensors and all(t.device is strict for t in tensors)


# ---------------------------------------------------------------------- the DataLoader hands batches over


def test_dataloader_hands_batches_over_on_the_device(strict):
    x, y = _batch(rows=6)
    data = TensorDataset(mt.tensor(x), mt.tensor(y))
    for prefetch in (0, 2):
        batches = list(DataLoader(data, batch_size=4, device=strict, prefetch=prefetch))
        assert [len(b[1]) for b in batches] == [4, 2]
        assert all(t.device is strict for batch in batches for t in batch)
        np.testing.assert_array_equal(np.concatenate([b[0].cpu().numpy() for b in batches]), x)


def test_dataloader_without_device_stays_on_the_cpu():
    loader = DataLoader(TensorDataset(mt.zeros(3, 2)), batch_size=2)
    assert loader.device is None and next(iter(loader))[0].device is mt.cpu


# ---------------------------------------------------------------------- the fused ops behind the dispatch


def test_the_fused_ops_are_registered_for_the_device_type(strict):
    names = mt.registered_op_impls()
    assert ("cross_entropy", "strict") in names and (Relu.op, "strict") in names
    assert optim.update_kernel("adam", strict, optim.functional.adam_update) is not optim.functional.adam_update


def _cross_entropy_on(dev, dtype, **options):
    x, y = _batch(dtype)
    logits = mt.tensor(x).to(dev).requires_grad_()
    loss = F.cross_entropy(logits, mt.tensor(y).to(dev), **options)
    loss.backward()
    return loss, logits.grad.cpu().numpy()


@pytest.mark.parametrize("dev_fixture", ["strict", "simcuda"])
def test_fused_cross_entropy_matches_the_default_path(dev_fixture, request):
    dev = request.getfixturevalue(dev_fixture)
    loss, grad = _cross_entropy_on(dev, np.float32)
    assert loss.grad_fn.fused and loss.dtype == np.float32 and loss.shape == ()
    want_loss, want_grad = _cross_entropy_on(mt.cpu, np.float32)
    np.testing.assert_allclose(loss.item(), want_loss.item(), rtol=1e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("options", [{"label_smoothing": 0.1}, {"reduction": "sum"}, {"ignore_index": 1}])
def test_cross_entropy_options_the_kernel_lacks_take_the_default_path(strict, options):
    loss, grad = _cross_entropy_on(strict, np.float32, **options)
    want_loss, want_grad = _cross_entropy_on(mt.cpu, np.float32, **options)
    assert not getattr(loss.grad_fn, "fused", False)
    np.testing.assert_allclose(loss.item(), want_loss.item(), rtol=1e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-6)


def test_cuda_kernels_leave_float64_to_the_default_path(simcuda):
    loss, grad = _cross_entropy_on(simcuda, np.float64)
    want_loss, want_grad = _cross_entropy_on(mt.cpu, np.float64)
    assert not loss.grad_fn.fused
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12)


def test_fused_cross_entropy_passes_gradcheck_in_float64(strict):
    x, y = _batch(np.float64)
    target = mt.tensor(y).to(strict)
    logits = mt.tensor(x).to(strict).requires_grad_()
    assert F.cross_entropy(logits, target).grad_fn.fused
    assert mt.gradcheck(lambda z: F.cross_entropy(z, target), (logits,))


@pytest.mark.parametrize("dev_fixture", ["strict", "simcuda"])
def test_relu_backward_through_the_fused_kernel_matches(dev_fixture, request):
    dev = request.getfixturevalue(dev_fixture)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    upstream = rng.standard_normal((2, 3, 5)).astype(np.float32)
    grads = []
    for d in (dev, mt.cpu):
        t = mt.tensor(x).to(d).requires_grad_()
        t.relu().backward(mt.tensor(upstream).to(d))
        grads.append(t.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def _linear_relu_grads(dev, dtype, second_consumer=False):
    rng = np.random.default_rng(5)
    mt.manual_seed(0)
    layer = nn.Linear(4, 6).to(dev)
    layer.to(mt.float64 if dtype == np.float64 else mt.float32)
    x = mt.tensor(rng.standard_normal((2, 3, 4)).astype(dtype)).to(dev).requires_grad_()
    h = layer(x)
    out = h.relu() * mt.tensor(rng.standard_normal((2, 3, 6)).astype(dtype)).to(dev)
    loss = out.sum() + (h * h).sum() if second_consumer else out.sum()
    loss.backward()
    return [t.grad.cpu().numpy() for t in (x, layer.weight, layer.bias)]


@pytest.mark.parametrize("second_consumer", [False, True])
@pytest.mark.parametrize("dev_fixture", ["strict", "simcuda"])
def test_relu_hands_the_bias_gradient_to_its_linear_node_only_when_it_is_the_whole_gradient(
        dev_fixture, second_consumer, request, monkeypatch):
    dev = request.getfixturevalue(dev_fixture)
    default_backward = LinearFunction.backward
    calls = []
    monkeypatch.setattr(LinearFunction, "backward", lambda ctx, g: calls.append(1) or default_backward(ctx, g))
    got = _linear_relu_grads(dev, np.float32, second_consumer)
    assert calls == ([1] if second_consumer else [])  # the default (own bias pass) only when h has two consumers
    for a, b in zip(got, _linear_relu_grads(mt.cpu, np.float32, second_consumer)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_linear_relu_with_the_handed_bias_gradient_passes_gradcheck(strict):
    layer = nn.Linear(3, 4).to(strict).double()
    x = mt.randn(5, 3, dtype=mt.float64, device=strict).requires_grad_()
    assert mt.gradcheck(lambda x, w, b: F.linear(x, w, b).relu(), (x, layer.weight, layer.bias))


def _adam_run(dev, dtype, steps=3, **hyper):
    rng = np.random.default_rng(11)
    p = mt.tensor(rng.standard_normal(40).astype(dtype)).to(dev).requires_grad_()
    opt = (optim.AdamW if hyper.pop("adamw", False) else optim.Adam)([p], lr=1e-2, **hyper)
    for step in range(steps):
        opt.zero_grad()
        p.grad = mt.tensor(rng.standard_normal(40).astype(dtype) * (step + 1)).to(dev)
        opt.step()
    return p.cpu().detach().numpy(), opt.state[p]["exp_avg_sq"].cpu().numpy()


@pytest.mark.parametrize("hyper", [{}, {"weight_decay": 0.1}, {"adamw": True, "weight_decay": 0.1},
                                   {"amsgrad": True}, {"maximize": True}])
@pytest.mark.parametrize("dev_fixture", ["strict", "simcuda"])
def test_fused_adam_matches_the_default_rule(dev_fixture, hyper, request):
    dev = request.getfixturevalue(dev_fixture)
    got = _adam_run(dev, np.float32, **dict(hyper))
    want = _adam_run(mt.cpu, np.float32, **dict(hyper))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- a whole recipe on a device


def test_train_mnist_runs_on_a_device_end_to_end_and_saves_from_it(strict, tmp_path):
    import minigrad
    from minigrad.training import train_mnist

    path = tmp_path / "mlp.npz"
    model, history = train_mnist("mnist-mlp", epochs=1, subset=True, progress=False, device=strict, save_path=path)
    assert all(p.device is strict for p in model.parameters())
    assert history.last.test_accuracy > 0.7  # about 0.83 after one epoch on the subset, as on the CPU
    saved = minigrad.load(path)
    weight = saved["model"]["1.weight"]
    assert weight.device is mt.cpu
    np.testing.assert_array_equal(weight.numpy(), model[1].weight.cpu().detach().numpy())
    assert saved["optimizer"]["state"][0]["exp_avg"].device is mt.cpu
