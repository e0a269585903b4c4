"""Checking a launch before it runs: grid and block sizes, and where the arguments live.

``kernel[grid, block](*args)`` accepts sizes as an int or a tuple of 1-3
ints (missing axes are 1), as CUDA and CuPy do. Arguments are sorted into
NumPy arrays (run on the simulator), CuPy arrays (run on the GPU) and
scalars; anything else, or NumPy and CuPy arrays mixed in one launch, is an
error naming the kernel and the argument.
"""

from __future__ import annotations

import numbers

import numpy as np

from minigrad.gpu.errors import KernelLaunchError

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
MAX_SHARED_BYTES = 48 * 1024  # dynamic + static shared memory per block without opting in (every card since 2010)


def dim3(kernel: str, what: str, size) -> tuple[int, int, int]:
    """``size`` (int or tuple of 1-3 positive ints) as an ``(x, y, z)`` triple, or a clear error."""
    parts = size if isinstance(size, tuple) else (size,)
    if not 1 <= len(parts) <= 3 or not all(
        isinstance(p, numbers.Integral) and not isinstance(p, bool) and p >= 1 for p in parts
    ):
        raise KernelLaunchError(
            f"kernel '{kernel}': the {what} size must be a positive int or a tuple of 1 to 3 positive ints, "
            f"got {_shown(size)}; launch as kernel[grid, block](*args), e.g. kernel[(n + 255) // 256, 256](x, out, n)"
        )
    triple = tuple(int(p) for p in parts) + (1,) * (3 - len(parts))
    limits = MAX_BLOCK_DIM if what == "block" else MAX_GRID_DIM
    for axis, (p, limit) in enumerate(zip(triple, limits)):
        if p > limit:
            raise KernelLaunchError(
                f"kernel '{kernel}': {what} size {triple} exceeds CUDA's limit of {limit} on axis {'xyz'[axis]}"
            )
    if what == "block" and triple[0] * triple[1] * triple[2] > MAX_THREADS_PER_BLOCK:
        raise KernelLaunchError(
            f"kernel '{kernel}': a block of {triple} has {triple[0] * triple[1] * triple[2]} threads; "
            f"CUDA allows at most {MAX_THREADS_PER_BLOCK} per block: use smaller blocks and more of them"
        )
    return triple


def shared_bytes(kernel: str, shared_mem) -> int:
    """The launch's ``shared_mem=`` as an int byte count, or a clear error (negative, not an int, over the limit)."""
    if not isinstance(shared_mem, numbers.Integral) or isinstance(shared_mem, (bool, np.bool_)) or shared_mem < 0:
        raise KernelLaunchError(
            f"kernel '{kernel}': shared_mem is a byte count >= 0 (an int), got {_shown(shared_mem)}"
        )
    if shared_mem > MAX_SHARED_BYTES:
        raise KernelLaunchError(
            f"kernel '{kernel}': shared_mem={int(shared_mem):,} bytes exceeds the {MAX_SHARED_BYTES:,} bytes of "
            f"shared memory a block may have (CUDA refuses the launch): use smaller tiles"
        )
    return int(shared_mem)


def _shown(value) -> str:
    """A value as a learner wrote it: ``16``, not ``np.int32(16)`` (also inside a tuple)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(_shown(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value.item()) if isinstance(value, np.generic) else repr(value)


def split_config(kernel: str, config) -> tuple:
    """``kernel[grid, block]``'s subscript as ``(grid, block)``."""
    if not isinstance(config, tuple) or len(config) != 2:
        raise KernelLaunchError(
            f"kernel '{kernel}': launch as kernel[grid, block](*args) with two sizes in the brackets, "
            f"got kernel[{config!r}]"
        )
    return config


def is_cupy_array(value) -> bool:
    return type(value).__module__.split(".")[0] == "cupy" and hasattr(value, "__cuda_array_interface__")


def _is_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


def target(kernel: str, parameters: list[str], args: tuple) -> str:
    """``"cupy"`` or ``"simulator"`` for these arguments, or a KernelLaunchError naming the bad one."""
    if len(args) != len(parameters):
        raise KernelLaunchError(
            f"kernel '{kernel}' takes {len(parameters)} arguments ({', '.join(parameters)}), "
            f"got {len(args)}"
        )
    numpy_arg = cupy_arg = None
    for name, value in zip(parameters, args):
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biufc":
                raise KernelLaunchError(
                    f"kernel '{kernel}': argument '{name}' has dtype {value.dtype}; kernels take arrays of "
                    f"numbers (bool, int, float or complex)"
                )
            numpy_arg = numpy_arg or name
        elif is_cupy_array(value):
            cupy_arg = cupy_arg or name
        elif isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
            raise KernelLaunchError(
                f"kernel '{kernel}': argument '{name}' = {value} does not fit a 64-bit signed integer: "
                f"cupyx.jit passes a Python int as an int32 or int64; pass numpy.uint64(...) for a larger "
                f"unsigned value"
            )
        elif not _is_scalar(value):
            hint = (
                "pass its array: x.detach().numpy() (the simulator) or the CuPy array of a tensor on the GPU"
                if type(value).__name__ == "Tensor"
                else "pass a NumPy array (runs on the simulator), a CuPy array (runs on the GPU) or a number"
            )
            raise KernelLaunchError(
                f"kernel '{kernel}': argument '{name}' is a {type(value).__module__}.{type(value).__name__}; {hint}"
            )
    if numpy_arg and cupy_arg:
        raise KernelLaunchError(
            f"kernel '{kernel}': argument '{numpy_arg}' is a NumPy array (host memory) but '{cupy_arg}' is a "
            f"CuPy array (GPU memory); a launch runs on one device: move all arrays to the GPU with "
            f"cupy.asarray(...) or all to the host with .get()"
        )
    return "cupy" if cupy_arg else "simulator"
