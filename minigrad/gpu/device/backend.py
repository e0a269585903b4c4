"""The ``"cuda"`` device: tensors whose data are CuPy arrays on an NVIDIA GPU.

``import minigrad.gpu`` makes ``"cuda"`` a device type the tensor core knows,
without importing CuPy: the first ``x.to("cuda")`` (or ``device("cuda")``)
imports CuPy, checks that it sees a GPU, registers the backend and the
fused kernels (:mod:`minigrad.gpu.device.backend_ops`), and from then on
every op runs on CuPy arrays: the core's ops are written against the array
API that NumPy and CuPy share, matmul goes to cuBLAS through ``cupy.matmul``.

Without CuPy, or with CuPy but no GPU, the first use raises
:class:`CudaUnavailableError` saying which one is missing and how to install;
the kernel simulator (launch a kernel with NumPy arrays) needs neither.

Invariants
- Importing this module never imports CuPy and never fails.
- The outcome of the first attempt is kept: a machine without a GPU raises
  the same error on every later use, without probing again.
"""

from __future__ import annotations

import ctypes.util
import os

import numpy as np

from minigrad.tensor.backend import Backend, DeviceError, register_backend, register_backend_loader

__all__ = [
    "CudaUnavailableError", "cuda_available", "register_cuda", "no_gpu_reason", "nvidia_driver_found", "DEVICE_TYPE",
    "INSTALL",
]

DEVICE_TYPE = "cuda"
INSTALL = 'pip install "minigrad[gpu]"'
_SIMULATOR = (
    "The kernel simulator needs neither: launch any minigrad.gpu kernel with NumPy arrays and it runs on the "
    "CPU (chapter 07); tensors stay on the 'cpu' device."
)


class CudaUnavailableError(DeviceError):
    """The ``"cuda"`` device was asked for, but CuPy is missing or sees no GPU."""


_failure: CudaUnavailableError | None = None
_registered = False


def nvidia_driver_found() -> bool:
    """Whether this machine has an NVIDIA driver: its ``/proc`` entry, or a ``libcuda`` the loader finds (no CuPy needed)."""
    return os.path.exists("/proc/driver/nvidia") or ctypes.util.find_library("cuda") is not None


def no_gpu_reason(error: Exception) -> str:
    """Why CuPy sees no GPU, in words: no NVIDIA driver at all (a laptop without one), or what the driver said.

    ``error`` is what CuPy raised when asked for its devices. Without any driver CuPy's own words
    ("CUDA driver version is insufficient") read as "update your driver", which is not the fix.
    """
    if not nvidia_driver_found():
        return "no NVIDIA GPU found: this machine has no NVIDIA driver"
    return f"{type(error).__name__}: {error}"


def _import_cupy():
    """The ``cupy`` module, or a CudaUnavailableError saying what is missing."""
    try:
        import cupy
    except ImportError as err:
        raise CudaUnavailableError(
            f"device 'cuda' needs CuPy, which is not installed ({err}). On a machine with an NVIDIA GPU and "
            f"its driver: {INSTALL}. {_SIMULATOR}"
        ) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # CUDARuntimeError without a driver, or a missing runtime library
        count, reason = 0, no_gpu_reason(err)
    else:
        reason = "cupy.cuda.runtime.getDeviceCount() is 0"
    if count == 0:
        raise CudaUnavailableError(
            f"device 'cuda': CuPy {cupy.__version__} is installed but sees no NVIDIA GPU ({reason}). Check the "
            f"driver (nvidia-smi) and that the CuPy wheel matches its CUDA version ({INSTALL} installs the "
            f"CUDA 12 build). {_SIMULATOR}"
        )
    return cupy


def _cupy_backend(cupy) -> Backend:
    def to_numpy(array) -> np.ndarray:
        return cupy.asnumpy(array)

    def from_numpy(array, index=None):
        with cupy.cuda.Device(0 if index is None else index):
            return cupy.asarray(array)

    def synchronize(index=None) -> None:
        with cupy.cuda.Device(0 if index is None else index):
            cupy.cuda.Device().synchronize()

    # make_generator=None: random numbers are drawn by the CPU's seeded generator and copied over, so a
    # seed gives the same numbers on both devices and get_rng_state/set_rng_state work unchanged
    return Backend(DEVICE_TYPE, cupy, (cupy.ndarray,), to_numpy, from_numpy, synchronize, default_index=0,
                   make_generator=None)


def register_cuda() -> None:
    """Register the ``"cuda"`` backend and its fused kernels; a CudaUnavailableError if CuPy or a GPU is missing."""
    global _failure, _registered
    if _registered:
        return
    if _failure is not None:
        raise CudaUnavailableError(*_failure.args)  # a fresh one: a raised error holds its caller's frames
    try:
        cupy = _import_cupy()
    except CudaUnavailableError as err:
        _failure = CudaUnavailableError(*err.args)  # the reason, without the traceback of this first caller
        raise
    from minigrad.gpu.device import backend_ops

    register_backend(_cupy_backend(cupy))
    backend_ops.register_fused_ops(DEVICE_TYPE, backend_ops.CUDA_KERNELS)
    _registered = True


def cuda_available() -> bool:
    """Whether ``x.to("cuda")`` works here (imports CuPy on the first call)."""
    try:
        register_cuda()
    except CudaUnavailableError:
        return False
    return True


register_backend_loader(DEVICE_TYPE, register_cuda)
