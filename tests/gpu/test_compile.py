"""Every sample kernel transpiles with cupyx.jit and compiles with NVRTC - with no GPU and no driver.

Needs the ``gpu-check`` extra (``pip install -e ".[gpu-check]"``: CuPy, the
NVRTC library and the CUDA runtime headers as wheels); skips without it.
Each kernel is transpiled on its own (cupyx.jit's type errors name it); the
correct ones are then compiled as one NVRTC program, since each NVRTC run
costs seconds of header parsing.
"""

import importlib

import numpy as np
import pytest
import sample_kernels as k

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

from minigrad.gpu import compile_check, jit  # noqa: E402

f32 = np.zeros(4, np.float32)
f32_2d = np.zeros((4, 4), np.float32)
i32 = np.zeros(4, np.int32)

EXAMPLES = {
    "add": (k.add, (f32, f32, f32, 4)),
    "saxpy_grid_stride": (k.saxpy_grid_stride, (np.float32(2), f32, f32, f32, 4)),
    "add_2d": (k.add_2d, (f32_2d, f32_2d, f32_2d, 4, 4)),
    "block_sum": (k.block_sum, (f32, f32, 4)),
    "tiled_matmul": (k.tiled_matmul, (f32_2d, f32_2d, f32_2d, 4, 4, 4)),
    "histogram": (k.histogram, (i32, i32, 4, 16)),
    "copy_through_shared": (k.copy_through_shared, (f32, f32, i32, 4)),
    "reverse_dynamic": (k.reverse_dynamic, (f32, f32, 4)),
    "bias_relu": (k.bias_relu, (f32_2d, f32, f32_2d, 4, 4)),
    "warp_sum": (k.warp_sum, (f32, f32, 4)),
    "warp_shuffles": (k.warp_shuffles, (f32, f32, f32, f32, f32)),
}


@pytest.fixture(scope="module")
def ptx():
    return compile_check.compile_many(list(EXAMPLES.values()))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_sample_kernel_transpiles(name):
    kernel, args = EXAMPLES[name]
    assert f'extern "C" __global__ void {name}(' in compile_check.cuda_source(kernel, *args).code


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_sample_kernel_compiles_to_ptx_without_a_gpu(ptx, name):
    assert ".target sm_75" in ptx
    assert f".entry {name}(" in ptx


def test_transpiled_source_uses_cuda_builtins_for_minigrad_names():
    source = compile_check.cuda_source(k.block_sum, f32, f32, 4).code
    assert "__syncthreads();" in source
    assert "__shared__ float" in source
    assert "atomicAdd(" in source
    assert "blockDim.x" in source and "threadIdx.x" in source


def test_device_function_becomes_a_cuda_device_function():
    source = compile_check.cuda_source(k.bias_relu, f32_2d, f32, f32_2d, 4, 4).code
    assert "__device__ float relu" in source


def test_one_kernel_compiles_alone():
    assert ".entry add(" in compile_check.compile_ptx(k.add, f32, f32, f32, 4)


def test_kernel_cupyx_cannot_type_is_reported_by_the_compile_check():
    @jit.rawkernel()
    def mixes_signed_and_unsigned(x, n):
        for j in range(n):
            x[j + jit.threadIdx.x] = np.float32(0)

    with pytest.raises(TypeError, match="Cannot cast from 'int32' to uint32"):
        compile_check.cuda_source(mixes_signed_and_unsigned, f32, 4)
