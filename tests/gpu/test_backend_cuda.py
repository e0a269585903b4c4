"""On an NVIDIA GPU: tensors, models, optimizers and loaders on "cuda" give the CPU's results.

Marked ``gpu``; skips without CuPy or without a device (the reason says
which). Tolerances: float32 on cuBLAS and the fused kernels against NumPy
on the CPU, rtol 1e-4, atol 1e-5.
"""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.data import DataLoader, TensorDataset
from minigrad.gpu import CudaUnavailableError
from minigrad.gpu.device import backend
from minigrad.nn import functional as F

pytestmark = pytest.mark.gpu
RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(scope="module")
def cuda():
    try:
        backend.register_cuda()
    except CudaUnavailableError as err:
        pytest.skip(str(err).split(". ")[0])
    return mt.device("cuda")


def test_tensors_go_to_the_gpu_and_back(cuda):
    import cupy

    x = mt.arange(6, dtype=mt.float32).reshape(2, 3)
    on_gpu = x.to("cuda")
    assert on_gpu.device is cuda and isinstance(on_gpu._data, cupy.ndarray)
    assert x.cuda().device is cuda and x.cuda(0).device is cuda
    np.testing.assert_array_equal(on_gpu.cpu().numpy(), x.numpy())
    np.testing.assert_array_equal((on_gpu @ on_gpu.T).cpu().numpy(), x.numpy() @ x.numpy().T)


def test_fused_ops_are_registered_for_cuda(cuda):
    names = mt.registered_op_impls()
    assert ("cross_entropy", "cuda") in names and ("relu", "cuda") in names


def _model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 10))


def _steps(model, opt, loader, steps=3):
    losses = []
    for _, (x, y) in zip(range(steps), loader):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_training_on_cuda_matches_the_cpu(cuda):
    rng = np.random.default_rng(0)
    data = TensorDataset(mt.tensor(rng.standard_normal((64, 3, 4)).astype(np.float32)),
                         mt.tensor(rng.integers(0, 10, 64)))
    cpu_model = _model()
    cpu_losses = _steps(cpu_model, optim.Adam(cpu_model.parameters(), lr=1e-2), DataLoader(data, batch_size=16))
    model = _model().cuda()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    losses = _steps(model, opt, DataLoader(data, batch_size=16, device="cuda"))
    np.testing.assert_allclose(losses, cpu_losses, rtol=RTOL)
    assert all(s["exp_avg"].device is cuda for s in opt.state.values())
    for p, q in zip(model.parameters(), cpu_model.parameters()):
        np.testing.assert_allclose(p.cpu().detach().numpy(), q.detach().numpy(), rtol=RTOL, atol=ATOL)


def test_fused_cross_entropy_on_cuda_matches_the_cpu(cuda):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((50, 10)).astype(np.float32), rng.integers(0, 10, 50)
    results = []
    for dev in (cuda, mt.cpu):
        logits = mt.tensor(x).to(dev).requires_grad_()
        loss = F.cross_entropy(logits, mt.tensor(y).to(dev))
        loss.backward()
        results.append((loss.item(), logits.grad.cpu().numpy(), getattr(loss.grad_fn, "fused", False)))
    assert results[0][2] and not results[1][2]
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=RTOL)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=RTOL, atol=ATOL)


def test_train_mnist_subset_on_cuda(cuda):
    from minigrad.training import train_mnist

    model, history = train_mnist("mnist-mlp", epochs=1, subset=True, progress=False, device="cuda")
    assert next(iter(model.parameters())).device is cuda
    assert history.last.test_accuracy > 0.5
