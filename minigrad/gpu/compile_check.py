"""Compile a kernel for the GPU without a GPU: ``cupyx.jit`` transpiles it to CUDA C++, NVRTC compiles that to PTX.

This is how the test suite checks, on any Linux machine, that a kernel which
runs on the simulator would also build for a real card (the simulator
accepts any Python; ``cupyx.jit`` accepts a typed subset). Nothing here
touches a device: argument types come from example arguments (NumPy arrays
stand in for CuPy arrays of the same dtype and number of dimensions), and
the target architecture is given explicitly instead of asking the driver.

Needs the ``gpu-check`` extra: ``pip install "minigrad[gpu-check]"`` (CuPy,
the NVRTC library and the CUDA runtime headers as pip wheels; no driver).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from unittest import mock

import numpy as np

from minigrad.gpu.cupy_kernel import cupy_function, import_cupyx_jit
from minigrad.gpu.kernel import RawKernel

INSTALL = 'pip install "minigrad[gpu-check]"'
WARP_SIZE = 32  # every NVIDIA GPU
DEFAULT_ARCH = "75"  # Turing (GTX 16xx / RTX 20xx), the oldest card family the course targets with CUDA 12


def _module(name: str, wheel: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"the GPU compile check needs {wheel} ({exc}); install it with {INSTALL}") from exc


def argument_types(kernel: RawKernel, example_args) -> tuple:
    """The ``cupyx.jit`` types of a launch with ``example_args`` (NumPy arrays typed as CuPy arrays would be)."""
    import_cupyx_jit()
    types_ = _module("cupyx.jit._cuda_types", "cupy-cuda12x")
    rules = _module("cupyx.jit._cuda_typerules", "cupy-cuda12x")
    result = []
    for name, value in zip(kernel.parameters, example_args):
        if isinstance(value, np.ndarray):
            index_32_bits = value.nbytes < 2**31
            result.append(types_.CArray(value.dtype, value.ndim, value.flags.c_contiguous, index_32_bits))
        elif np.isscalar(value):
            result.append(rules.get_ctype_from_scalar("cuda", value))
        else:
            raise TypeError(f"kernel '{kernel.name}': example argument '{name}' must be a NumPy array or a number")
    return tuple(result)


@contextlib.contextmanager
def _nvidia_warp_size():
    """While transpiling, answer cupyx.jit's warp-size questions (asked of the device for warp shuffles)
    with NVIDIA's 32 instead of querying a device that is not there."""
    core = _module("cupy._core", "cupy-cuda12x")
    with mock.patch.object(core, "_get_warpsize", lambda: WARP_SIZE), mock.patch.object(
        core, "_full_mask", lambda: (1 << WARP_SIZE) - 1
    ):
        yield


def cuda_source(kernel: RawKernel, *example_args):
    """``cupyx.jit``'s transpilation of ``kernel`` for these argument types: an object with ``.code``, ``.options``."""
    compile_module = _module("cupyx.jit._compile", "cupy-cuda12x")
    types_ = _module("cupyx.jit._cuda_types", "cupy-cuda12x")
    in_types = argument_types(kernel, example_args)
    with _nvidia_warp_size():
        return compile_module.transpile(
            cupy_function(kernel.func), ['extern "C"', "__global__"], "cuda", in_types, types_.void
        )


def _include_options() -> tuple[str, ...]:
    cupy = _module("cupy", "cupy-cuda12x")
    runtime = _module("nvidia.cuda_runtime", "nvidia-cuda-runtime-cu12")
    cupy_include = os.path.join(os.path.dirname(cupy.__file__), "_core", "include")
    cccl = os.path.join(cupy_include, "cupy", "_cccl")
    runtime_include = os.path.join(list(runtime.__path__)[0], "include")
    return tuple(
        "-I" + path
        for path in (
            cupy_include,
            os.path.join(cccl, "libcudacxx"),
            os.path.join(cccl, "cub"),
            os.path.join(cccl, "thrust"),
            runtime_include,
        )
    )


def compile_ptx(kernel: RawKernel, *example_args, arch: str = DEFAULT_ARCH) -> str:
    """Transpile ``kernel`` and compile it with NVRTC for ``compute_<arch>``; return the PTX text.

    Raises ``cupy.cuda.compiler.CompileException`` with NVRTC's log if the
    generated CUDA does not compile, and ImportError if the packages are missing.
    """
    return compile_many([(kernel, example_args)], arch=arch)


def compile_many(launches, arch: str = DEFAULT_ARCH) -> str:
    """Transpile each ``(kernel, example_args)`` and compile them all as one NVRTC program; return the PTX.

    One program saves NVRTC's fixed cost (parsing CuPy's headers, seconds)
    per kernel; NVRTC's log still names the failing kernel's line. Each
    kernel's code goes into a namespace of its own (its ``#include`` lines
    stay outside), since cupyx.jit emits the same helper (e.g. the function
    behind ``max``) for every kernel that uses it; ``extern "C"`` kernels
    keep their plain names in the PTX.
    """
    compiler = _module("cupy.cuda.compiler", "cupy-cuda12x")
    sources, options = [], ()
    for number, (kernel, example_args) in enumerate(launches):
        transpiled = cuda_source(kernel, *example_args)
        lines = transpiled.code.splitlines()
        includes = [line for line in lines if line.startswith("#include")]
        body = [line for line in lines if not line.startswith("#include")]
        sources.append("\n".join([*includes, f"namespace kernel_{number} {{", *body, "}"]))
        options = tuple(dict.fromkeys((*options, *transpiled.options)))
    options = (
        *options,
        *_include_options(),
        f"-arch=compute_{arch}",
        "--device-as-default-execution-space",
    )
    name = launches[0][0].name if len(launches) == 1 else "kernels"
    program = compiler._NVRTCProgram("\n".join(sources), f"{name}.cu", (), (), method="ptx")
    ptx, _ = program.compile(options, None)
    return ptx.decode() if isinstance(ptx, bytes) else ptx
