"""Asking for "cuda" without CuPy, or with CuPy but no GPU, gives an error that says which one is missing.

CuPy's presence is faked (``sys.modules``), so these run the same on every
machine; on a machine where "cuda" is already registered they skip.
"""

import sys
import types

import pytest

import minigrad.tensor as mt
from minigrad import cli
from minigrad.gpu import CudaUnavailableError
from minigrad.gpu.device import backend
from minigrad.tensor import DeviceError


@pytest.fixture
def fresh_cuda(monkeypatch):
    """The "cuda" loader as on a first use; skipped where a real GPU already registered "cuda"."""
    if "cuda" in mt.registered_backends():
        pytest.skip("a GPU is present: 'cuda' is registered")
    monkeypatch.setattr(backend, "_failure", None)
    monkeypatch.setattr(backend, "_registered", False)
    return monkeypatch


def _fake_cupy(device_count):
    def get_device_count():
        if isinstance(device_count, Exception):
            raise device_count
        return device_count

    runtime = types.SimpleNamespace(getDeviceCount=get_device_count)
    return types.SimpleNamespace(__version__="14.0.0", cuda=types.SimpleNamespace(runtime=runtime))


def test_without_cupy_the_error_names_cupy_the_install_command_and_the_simulator(fresh_cuda):
    fresh_cuda.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    with pytest.raises(CudaUnavailableError) as info:
        mt.zeros(3).to("cuda")
    text = str(info.value)
    assert "needs CuPy, which is not installed" in text
    assert 'pip install "minigrad[gpu]"' in text
    assert "simulator" in text and "NumPy arrays" in text
    assert isinstance(info.value, DeviceError)
    with pytest.raises(CudaUnavailableError, match="needs CuPy"):
        mt.ones(2).cuda()


def test_cupy_without_a_gpu_says_no_gpu_not_no_cupy(fresh_cuda):
    fresh_cuda.setitem(sys.modules, "cupy", _fake_cupy(0))
    with pytest.raises(CudaUnavailableError, match=r"CuPy 14\.0\.0 is installed but sees no NVIDIA GPU") as info:
        mt.device("cuda")
    assert "getDeviceCount() is 0" in str(info.value) and "nvidia-smi" in str(info.value)
    assert "simulator" in str(info.value)


def test_a_driver_error_is_reported_with_its_text_where_there_is_a_driver(fresh_cuda):
    fresh_cuda.setattr(backend.os.path, "exists", lambda path: path == "/proc/driver/nvidia")
    fresh_cuda.setitem(sys.modules, "cupy", _fake_cupy(RuntimeError("cudaErrorInsufficientDriver")))
    with pytest.raises(CudaUnavailableError, match="RuntimeError: cudaErrorInsufficientDriver"):
        mt.device("cuda:0")


def test_without_any_driver_the_reason_is_no_gpu_not_an_old_driver(fresh_cuda):
    """CuPy says "CUDA driver version is insufficient" when there is no driver at all: that reads as "update it"."""
    fresh_cuda.setattr(backend.os.path, "exists", lambda path: False)
    fresh_cuda.setattr(backend.ctypes.util, "find_library", lambda name: None)
    fresh_cuda.setitem(sys.modules, "cupy", _fake_cupy(RuntimeError("CUDA driver version is insufficient")))
    with pytest.raises(CudaUnavailableError, match="no NVIDIA GPU found: this machine has no NVIDIA driver") as info:
        mt.device("cuda")
    assert "insufficient" not in str(info.value)


def test_the_first_outcome_is_kept_without_probing_again(fresh_cuda):
    fresh_cuda.setitem(sys.modules, "cupy", None)
    with pytest.raises(CudaUnavailableError) as first:
        mt.device("cuda")
    fresh_cuda.setitem(sys.modules, "cupy", _fake_cupy(1))  # not asked again
    with pytest.raises(CudaUnavailableError) as again:
        mt.tensor([1.0], device="cuda")
    assert str(again.value) == str(first.value)  # the same reason (a fresh error: see the test below)
    assert backend.cuda_available() is False


def test_module_to_cuda_and_a_loader_on_cuda_fail_up_front(fresh_cuda):
    from minigrad import nn
    from minigrad.data import DataLoader, TensorDataset

    fresh_cuda.setitem(sys.modules, "cupy", None)
    model = nn.Linear(2, 2)
    with pytest.raises(CudaUnavailableError):
        model.cuda()
    assert model.weight.device is mt.cpu  # nothing moved
    with pytest.raises(CudaUnavailableError):
        DataLoader(TensorDataset(mt.zeros(4, 2)), batch_size=2, device="cuda")


def test_cli_train_on_cuda_without_a_gpu_exits_2_with_the_reason(fresh_cuda, capsys):
    fresh_cuda.setitem(sys.modules, "cupy", None)
    assert cli.main(["train", "mnist-mlp", "--subset", "--device", "cuda", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("minigrad train: --device cuda: device 'cuda' needs CuPy")
    assert 'pip install "minigrad[gpu]"' in err


def test_cli_rejects_an_unknown_device_by_name(capsys):
    assert cli.main(["train", "mnist-mlp", "--subset", "--device", "tpu"]) == 2
    assert "unknown device type 'tpu'" in capsys.readouterr().err


def test_a_backend_loader_registers_its_device_on_first_use():
    import numpy as np

    from minigrad.tensor.backend import register_backend_loader

    calls = []

    def load():
        calls.append(1)
        mt.register_backend(mt.Backend("lazytwin", np, (), np.array, lambda a, index=None: np.array(a)))

    register_backend_loader("lazytwin", load)
    try:
        assert "lazytwin" not in mt.registered_backends()
        assert mt.ones(2).to("lazytwin").device is mt.device("lazytwin")
        mt.device("lazytwin")
        assert calls == [1]  # registered once, then found
    finally:
        register_backend_loader("lazytwin", None)
        mt.unregister_backend("lazytwin")
    with pytest.raises(DeviceError, match="unknown device type 'lazytwin'"):
        mt.device("lazytwin")


def test_asking_whether_cuda_is_usable_keeps_nothing_of_the_callers_alive():
    """Where CuPy or a GPU is missing, the remembered reason must not hold the first caller's frames (and locals)."""
    import gc
    import weakref

    from minigrad.gpu.device.backend import cuda_available

    class Big:
        pass

    def caller():
        big = Big()
        cuda_available()
        return weakref.ref(big)

    first, second = caller(), caller()
    gc.collect()
    assert first() is None and second() is None
