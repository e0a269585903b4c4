"""What every host-side wrapper needs: the arguments' array module, grid sizes, and input checks.

A wrapper (``fused_bias_relu(x, b)``, ...) takes NumPy arrays - its kernel
then runs on the simulator - or CuPy arrays - it runs on the GPU - and
allocates its outputs with the same module, so results stay where the
inputs are. The kernels compute in float32, so the wrappers accept float32
arrays only and say so, rather than converting silently.
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu.launch import is_cupy_array


def array_module(*arrays):
    """``cupy`` if any argument is a CuPy array, else ``numpy``."""
    if any(is_cupy_array(a) for a in arrays):
        import cupy

        return cupy
    return np


def blocks_for(count: int, threads: int) -> int:
    """How many blocks of ``threads`` cover ``count`` items (at least 1: an empty launch is invalid)."""
    if not isinstance(threads, (int, np.integer)) or isinstance(threads, bool) or not 1 <= threads <= 1024:
        raise ValueError(f"threads per block must be an int from 1 to 1024 (CUDA's limit), got {threads!r}")
    return max(1, (count + threads - 1) // threads)


def check_float32(op: str, **arrays) -> None:
    """Raise a TypeError naming ``op`` and the argument if an array is not float32 NumPy/CuPy."""
    for name, array in arrays.items():
        if not (isinstance(array, np.ndarray) or is_cupy_array(array)):
            raise TypeError(
                f"{op}: '{name}' must be a NumPy array (runs on the simulator) or a CuPy array (runs on the "
                f"GPU), got {type(array).__name__}"
            )
        if array.dtype != np.float32:
            raise TypeError(
                f"{op}: '{name}' has dtype {array.dtype}, the kernel computes in float32; "
                f"pass {name}.astype(numpy.float32)"
            )


def check_shape(op: str, name: str, array, shape: tuple, meaning: str) -> None:
    """Raise a ValueError naming ``op`` if ``array.shape != shape``."""
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"{op}: '{name}' has shape {tuple(array.shape)}, expected {tuple(shape)} ({meaning})")


def check_same_shape(op: str, **arrays) -> None:
    """Raise a ValueError naming ``op`` unless all arrays have the first one's shape."""
    (first, reference), *rest = arrays.items()
    for name, array in rest:
        check_shape(op, name, array, reference.shape, f"the shape of '{first}'")
