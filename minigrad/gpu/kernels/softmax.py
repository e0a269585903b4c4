"""Row-wise softmax, one block per row: a two-level reduction for the max, another for the sum, then the output.

``out[r, j] = exp(x[r, j] - m_r) / s_r`` with ``m_r = max_j x[r, j]`` (so
``exp`` never overflows) and ``s_r = sum_j exp(x[r, j] - m_r)``. A row is
the unit of work: one block of ``BLOCK`` threads per row, grid = rows.

Each reduction has two levels. First every thread walks its share of the
row - columns ``tid, tid + BLOCK, tid + 2 BLOCK, ...``, so the 32 threads of
a warp read 32 adjacent floats at each step (coalesced) - and keeps a
private max (or sum) in a register. Then the block combines its ``BLOCK``
private values with a tree in shared memory, ``log2(BLOCK)`` steps with a
barrier after each, and every thread reads the result from slot 0. A
barrier after that read lets the second reduction reuse the shared array.
Finally each thread writes its columns of the output.

Traffic per element: three reads of ``x`` (max, sum, output) and one write;
barriers per block: ``2 * (log2(BLOCK) + 1) + 1``, whatever the row length.
The library's fused softmax + cross-entropy (``cross_entropy.py``) does the
same two reductions without writing the probabilities out.
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, check_float32

BLOCK = 128  # threads per block, one block per row: a power of two for the trees (your choice)


@jit.rawkernel()
def softmax_rows_kernel(x, out, rows, cols):
    """out[r] = softmax(x[r]) for every row r of x, shape (rows, cols)."""
    ### BEGIN SOLUTION 7.7 | one block per row; each thread reduces its strided share of the row, the block combines the shares in shared memory (once for the max, once for the sum of exponentials), then each thread writes its share
    partial = jit.shared_memory(np.float32, BLOCK)
    row = jit.blockIdx.x
    tid = jit.threadIdx.x
    # the row's max: this thread's columns, then a tree over the block
    biggest = x[row, 0]  # every row has a column 0 (cols >= 1); a start of -inf would not compile for CUDA
    col = tid
    while col < cols:
        biggest = max(biggest, x[row, col])
        col += np.uint32(BLOCK)
    partial[tid] = biggest
    jit.syncthreads()
    step = np.uint32(BLOCK // 2)
    while step > 0:
        if tid < step:
            partial[tid] = max(partial[tid], partial[tid + step])
        jit.syncthreads()
        step = step // 2
    row_max = partial[0]
    jit.syncthreads()  # every thread has read slot 0 before the sum overwrites it
    # the sum of exp(x - max): the same two levels
    total = np.float32(0)
    col = tid
    while col < cols:
        total += jit.exp(x[row, col] - row_max)
        col += np.uint32(BLOCK)
    partial[tid] = total
    jit.syncthreads()
    step = np.uint32(BLOCK // 2)
    while step > 0:
        if tid < step:
            partial[tid] += partial[tid + step]
        jit.syncthreads()
        step = step // 2
    row_sum = partial[0]
    col = tid
    while col < cols:
        out[row, col] = jit.exp(x[row, col] - row_max) / row_sum
        col += np.uint32(BLOCK)
    ### END SOLUTION


def softmax_rows(x):
    """``softmax(x, axis=1)`` of a float32 matrix (rows, cols), on the array's device."""
    check_float32("softmax_rows", x=x)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"softmax_rows: needs a matrix (rows, cols) with cols >= 1, got shape {tuple(x.shape)}")
    rows, cols = x.shape
    out = array_module(x).empty((rows, cols), dtype=np.float32)
    if rows == 0:
        return out
    ### BEGIN SOLUTION 7.7 | launch the kernel: how many blocks, how many threads each?
    softmax_rows_kernel[rows, BLOCK](x, out, rows, cols)
    ### END SOLUTION
    return out
