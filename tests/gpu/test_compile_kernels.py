"""Every kernel of the library (minigrad.gpu.kernels) transpiles with cupyx.jit and compiles with NVRTC, no GPU.

Needs the ``gpu-check`` extra (``pip install -e ".[gpu-check]"``); skips
without it. Example arguments have the dtypes and dimensions the wrappers
launch with (float32 arrays, int64 targets, float32 scalars, int sizes).
All kernels are compiled as one NVRTC program (seconds of header parsing, once).
"""

import importlib

import numpy as np
import pytest

for module, wheel in [
    ("cupy", "cupy-cuda12x"),
    ("nvidia.cuda_nvrtc", "nvidia-cuda-nvrtc-cu12"),
    ("nvidia.cuda_runtime", "nvidia-cuda-runtime-cu12"),
]:
    try:
        importlib.import_module(module)
    except ImportError as error:  # missing, or installed but unusable on this platform
        pytest.skip(
            f'{wheel} is not usable ({error}): pip install -e ".[gpu-check]" (Linux, CUDA 12 wheels)',
            allow_module_level=True,
        )

from minigrad.gpu import compile_check  # noqa: E402
from minigrad.gpu.kernels import (  # noqa: E402
    adam, bias_relu, block_reduce, cross_entropy, elementwise, loss_scale, matmul, softmax, transpose, warp_reduce,
)

vector = np.zeros(4, np.float32)
matrix = np.zeros((4, 4), np.float32)
targets = np.zeros(4, np.int64)
scalar = np.float32(1)

EXAMPLES = {
    "bias_relu_forward": (bias_relu.bias_relu_forward, (matrix, vector, matrix, 4, 4)),
    "bias_relu_backward": (bias_relu.bias_relu_backward, (matrix, matrix, matrix, vector, 4, 4)),
    "scaled_add_kernel": (elementwise.scaled_add_kernel, (scalar, vector, vector, vector, 4)),
    "block_sum": (block_reduce.block_sum, (vector, vector, 4)),
    "warp_sum": (warp_reduce.warp_sum, (vector, vector, 4)),
    "tiled_matmul_kernel": (matmul.tiled_matmul_kernel, (matrix, matrix, matrix, 4, 4, 4)),
    "transpose_kernel": (transpose.transpose_kernel, (matrix, matrix, 4, 4)),
    "softmax_rows_kernel": (softmax.softmax_rows_kernel, (matrix, matrix, 4, 4)),
    "softmax_cross_entropy_forward": (
        cross_entropy.softmax_cross_entropy_forward, (matrix, targets, vector, vector, 4, 4)
    ),
    "softmax_cross_entropy_backward": (
        cross_entropy.softmax_cross_entropy_backward, (matrix, targets, vector, vector, matrix, 4, 4)
    ),
    "adam_step_kernel": (adam.adam_step_kernel, (vector, vector, vector, vector, *[scalar] * 9, 4)),
    "unscale_and_check_kernel": (loss_scale.unscale_and_check_kernel, (vector, vector, vector, 4)),
}


def test_every_library_kernel_has_an_example():
    from minigrad.gpu.kernel import RawKernel

    modules = [adam, bias_relu, block_reduce, cross_entropy, elementwise, loss_scale, matmul, softmax, transpose,
               warp_reduce]
    kernels = {name for m in modules for name, value in vars(m).items() if isinstance(value, RawKernel)}
    assert kernels == set(EXAMPLES)


@pytest.fixture(scope="module")
def ptx():
    return compile_check.compile_many(list(EXAMPLES.values()))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_library_kernel_transpiles(name):
    kernel, args = EXAMPLES[name]
    assert f'extern "C" __global__ void {name}(' in compile_check.cuda_source(kernel, *args).code


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_library_kernel_compiles_to_ptx_without_a_gpu(ptx, name):
    assert ".target sm_75" in ptx
    assert f".entry {name}(" in ptx


def _source(name):
    kernel, args = EXAMPLES[name]
    return compile_check.cuda_source(kernel, *args).code


def test_jit_math_functions_become_cuda_math():
    source = _source("softmax_cross_entropy_forward")
    assert "exp(" in source and "log(" in source
    assert "sqrt(" in _source("adam_step_kernel")
    assert "isfinite(" in _source("unscale_and_check_kernel")
