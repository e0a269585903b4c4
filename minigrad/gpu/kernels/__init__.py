"""The library's kernels: each a ``@jit.rawkernel()`` plus a host wrapper that picks grid and block and launches it.

A wrapper takes NumPy arrays (the kernel runs on the simulator) or CuPy
arrays (it runs on the GPU) and returns its results on the same device.
The kernels compute in float32; each file's docstring says what it fuses
and why, and tests/gpu/test_kernels_*.py compare each with NumPy.
"""

from minigrad.gpu.kernels.adam import fused_adam_step
from minigrad.gpu.kernels.bias_relu import fused_bias_relu, fused_bias_relu_backward
from minigrad.gpu.kernels.block_reduce import shared_memory_sum
from minigrad.gpu.kernels.elementwise import scaled_add
from minigrad.gpu.kernels.loss_scale import unscale_and_check
from minigrad.gpu.kernels.cross_entropy import softmax_cross_entropy, softmax_cross_entropy_grad
from minigrad.gpu.kernels.matmul import tiled_matmul
from minigrad.gpu.kernels.softmax import softmax_rows
from minigrad.gpu.kernels.transpose import shared_memory_transpose
from minigrad.gpu.kernels.warp_reduce import warp_shuffle_sum

__all__ = [
    "scaled_add",
    "fused_bias_relu",
    "fused_bias_relu_backward",
    "shared_memory_sum",
    "warp_shuffle_sum",
    "tiled_matmul",
    "shared_memory_transpose",
    "softmax_rows",
    "softmax_cross_entropy",
    "softmax_cross_entropy_grad",
    "fused_adam_step",
    "unscale_and_check",
]
