"""Sum of an array with warp shuffles: registers instead of shared memory, one barrier instead of eight.

The 32 threads of a warp can read each other's registers:
``shfl_down_sync(mask, value, offset)`` returns the ``value`` of the lane
``offset`` places higher. Five shuffle steps (offsets 16, 8, 4, 2, 1) leave
the warp's sum in lane 0, with no shared memory and no barrier - the warp's
threads meet at each shuffle. A block then needs shared memory only to
pass its ``BLOCK / 32`` warp totals to the first warp, which adds them with
shuffles again; thread 0 adds the block's total to ``out[0]`` atomically.

Compare with ``block_reduce.py``: the same sum, one ``syncthreads`` instead
of ``log2(BLOCK) + 1``, and 8 shared-memory writes instead of hundreds.
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, blocks_for, check_float32

BLOCK = 256  # threads per block: a multiple of 32, at most 32 warps
WARPS = BLOCK // 32
MAX_BLOCKS = 64
FULL_MASK = 0xFFFFFFFF  # every lane of the warp takes part in the shuffle


@jit.rawkernel()
def warp_sum(x, out, n):
    """out[0] += sum(x[:n]). Launch with blocks of exactly ``BLOCK`` threads; ``out[0]`` starts at 0."""
    warp_totals = jit.shared_memory(np.float32, WARPS)
    lane = jit.laneid()
    warp = jit.threadIdx.x // 32
    total = np.float32(0)
    i = jit.grid(1)
    stride = jit.gridsize(1)
    while i < n:
        total += x[i]
        i += stride
    ### BEGIN SOLUTION 7.6 | halve the distance of a shuffle step by step until lane 0 holds the warp's sum; pass each warp's sum through shared memory to the first warp, which combines them the same way; one atomic per block
    offset = np.uint32(16)  # a shuffle's offset is unsigned
    while offset > 0:
        total += jit.shfl_down_sync(FULL_MASK, total, offset)
        offset = offset // 2
    if lane == 0:
        warp_totals[warp] = total
    jit.syncthreads()
    if warp == 0:
        total = np.float32(0)
        if lane < WARPS:
            total = warp_totals[lane]
        offset = np.uint32(16)
        while offset > 0:
            total += jit.shfl_down_sync(FULL_MASK, total, offset)
            offset = offset // 2
        if lane == 0:
            jit.atomic_add(out, 0, total)
    ### END SOLUTION


def warp_shuffle_sum(x):
    """``sum(x)`` of a 1-D float32 array as a 1-element array on the same device, by warp shuffles."""
    check_float32("warp_shuffle_sum", x=x)
    if x.ndim != 1:
        raise ValueError(f"warp_shuffle_sum: 'x' must be 1-D, got shape {tuple(x.shape)}; pass x.ravel()")
    out = array_module(x).zeros(1, dtype=np.float32)
    warp_sum[min(blocks_for(x.size, BLOCK), MAX_BLOCKS), BLOCK](x, out, x.size)
    return out
