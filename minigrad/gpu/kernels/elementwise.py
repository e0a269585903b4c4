"""Elementwise ``out = alpha * x + y`` with a grid-stride loop: any grid covers any n, no thread runs past the end.

The first kernel of chapter 07. Thread number ``i = blockIdx.x * blockDim.x
+ threadIdx.x`` (``jit.grid(1)``) handles element ``i``, then
``i + gridsize``, ``i + 2 * gridsize``, ... while the index is below ``n``,
where ``gridsize`` (``jit.gridsize(1)``) is the number of threads in the
whole grid. So a grid smaller than the array still covers all of it (each
thread takes several elements), and a grid larger than the array leaves the
extra threads idle instead of reading and writing past the end - on a GPU
that would corrupt memory or crash; the simulator reports it as an
:class:`~minigrad.gpu.errors.OutOfBoundsError`.

A warp's 32 threads touch 32 adjacent elements at each step of the loop:
the loads and stores are coalesced. Each element is read once from ``x`` and
``y`` and written once to ``out``: 12 bytes of traffic per element, 2 FLOPs.
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, blocks_for, check_float32, check_same_shape

BLOCK = 128  # threads per block
MAX_BLOCKS = 1024  # enough blocks to fill a large GPU; beyond that the grid-stride loop covers the rest


@jit.rawkernel()
def scaled_add_kernel(alpha, x, y, out, n):
    """out = alpha * x + y on the first n elements, whatever the grid and block sizes."""
    ### BEGIN SOLUTION 7.1 | start at this thread's global index, step by the number of threads in the grid, stop at n
    i = jit.grid(1)
    stride = jit.gridsize(1)
    while i < n:
        out[i] = alpha * x[i] + y[i]
        i += stride
    ### END SOLUTION


def scaled_add(alpha, x, y, blocks: int | None = None, threads: int = BLOCK):
    """``alpha * x + y`` for 1-D float32 arrays; ``blocks``/``threads`` choose the launch (default: enough blocks)."""
    check_float32("scaled_add", x=x, y=y)
    check_same_shape("scaled_add", x=x, y=y)
    if x.ndim != 1:
        raise ValueError(f"scaled_add: 'x' must be 1-D, got shape {tuple(x.shape)}; pass x.ravel()")
    n = x.size
    out = array_module(x, y).empty(n, dtype=np.float32)
    if blocks is None:
        blocks = min(blocks_for(n, threads), MAX_BLOCKS)
    scaled_add_kernel[blocks, threads](np.float32(alpha), x, y, out, n)
    return out
