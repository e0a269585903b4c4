"""Sum of an array with a tree in shared memory: ``syncthreads`` between the steps, one atomic per block.

Each thread first adds up its elements with a grid-stride loop (any grid
covers any n), then the block's ``BLOCK`` partial sums are halved in
``log2(BLOCK)`` steps: at each step the first half of the threads adds the
second half's values to their own. A barrier separates the steps, because a
thread reads what another wrote in the step before; remove it and the
simulator reports the race. Finally thread 0 adds the block's total to
``out[0]`` with an atomic, since all blocks write that one address.

Float addition is not associative: on a GPU the blocks' atomics arrive in
any order, so the last bits of the sum can vary from run to run.
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, blocks_for, check_float32

BLOCK = 256  # threads per block; a power of two for the tree
MAX_BLOCKS = 64  # more blocks than this only add atomics: the grid-stride loop covers the rest


@jit.rawkernel()
def block_sum(x, out, n):
    """out[0] += sum(x[:n]). Launch with blocks of exactly ``BLOCK`` threads; ``out[0]`` starts at 0."""
    partial = jit.shared_memory(np.float32, BLOCK)
    tid = jit.threadIdx.x
    total = np.float32(0)
    i = jit.grid(1)
    stride = jit.gridsize(1)
    while i < n:
        total += x[i]
        i += stride
    ### BEGIN SOLUTION 7.2 | put this thread's total in shared memory, then halve the partial sums step by step with a barrier after every write
    partial[tid] = total
    jit.syncthreads()
    step = np.uint32(BLOCK // 2)
    while step > 0:
        if tid < step:
            partial[tid] += partial[tid + step]
        jit.syncthreads()
        step = step // 2
    ### END SOLUTION
    if tid == 0:
        jit.atomic_add(out, 0, partial[0])


def shared_memory_sum(x):
    """``sum(x)`` of a 1-D float32 array as a 1-element array on the same device (no copy to the host)."""
    check_float32("shared_memory_sum", x=x)
    if x.ndim != 1:
        raise ValueError(f"shared_memory_sum: 'x' must be 1-D, got shape {tuple(x.shape)}; pass x.ravel()")
    out = array_module(x).zeros(1, dtype=np.float32)
    block_sum[min(blocks_for(x.size, BLOCK), MAX_BLOCKS), BLOCK](x, out, x.size)
    return out
