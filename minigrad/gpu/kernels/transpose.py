"""Matrix transpose through a padded shared-memory tile: coalesced reads, coalesced writes, no bank conflicts.

``out[c, r] = x[r, c]``. The obvious kernel (thread ``(c, r)`` copies one
element) reads a row of ``x`` per warp - coalesced - but writes a column of
``out``: 32 threads, 32 rows, 32 sectors for 128 bytes, 12.5 % of the
write traffic used. A transpose cannot make both sides walk the contiguous
axis with one element per thread, so it goes through shared memory:

1. a block of ``TILE x BLOCK_ROWS`` threads copies a ``TILE x TILE`` tile of
   ``x`` into shared memory, row by row (each thread ``TILE / BLOCK_ROWS``
   rows, a warp reads 32 adjacent floats of one row of ``x``);
2. a barrier;
3. the block writes the tile transposed into ``out``, again row by row of
   ``out`` (a warp writes 32 adjacent floats), reading the tile by columns.

Reading a tile by columns is where the banks come in. Shared memory has 32
banks of 4-byte words; word ``w`` is in bank ``w % 32``. With a row pitch of
``TILE`` = 32 words, a column of the tile is 32 words in one bank: a 32-way
conflict, 32 passes for one warp read. A pitch of ``TILE + 1`` = 33 words
puts the column's words in 32 different banks: one pass. The padding costs
32 floats of shared memory per tile.

The grid covers ``x`` with tiles: ``(ceil(cols / TILE), ceil(rows / TILE))``
blocks, block ``(bx, by)`` owning rows ``by * TILE ...`` and columns ``bx *
TILE ...`` of ``x``. Elements outside the matrix are neither read nor
written (their tile slots are never read either). This is the kernel of
NVIDIA's "An Efficient Matrix Transpose in CUDA C/C++" (Mark Harris, 2013):
https://developer.nvidia.com/blog/efficient-matrix-transpose-cuda-cc/
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, blocks_for, check_float32

TILE = 32  # the tile is TILE x TILE floats; a warp spans one row of it
BLOCK_ROWS = 8  # threads per block along y: each thread copies TILE / BLOCK_ROWS rows of the tile
PITCH = TILE + 1  # words per row of the shared tile: one more than TILE, so a column spans all 32 banks


@jit.rawkernel()
def transpose_kernel(x, out, rows, cols):
    """out[c, r] = x[r, c] for x of shape (rows, cols).

    Launch with blocks of exactly ``(TILE, BLOCK_ROWS)`` threads and grid
    ``(ceil(cols / TILE), ceil(rows / TILE))``.
    """
    tile = jit.shared_memory(np.float32, TILE * PITCH)
    tx = jit.threadIdx.x
    ty = jit.threadIdx.y
    ### BEGIN SOLUTION 7.5 | copy this block's tile of x into shared memory by rows, wait, then write it into out by rows of out, reading the tile by columns (with a pitch that spreads a column over the banks)
    col = jit.blockIdx.x * TILE + tx
    first_row = jit.blockIdx.y * TILE + ty
    for j in range(np.uint32(0), np.uint32(TILE), np.uint32(BLOCK_ROWS)):
        if first_row + j < rows and col < cols:
            tile[(ty + j) * PITCH + tx] = x[first_row + j, col]
    jit.syncthreads()
    # the same tile, seen from out: its rows are this block's columns of x, its columns the block's rows
    out_col = jit.blockIdx.y * TILE + tx
    first_out_row = jit.blockIdx.x * TILE + ty
    for j in range(np.uint32(0), np.uint32(TILE), np.uint32(BLOCK_ROWS)):
        if first_out_row + j < cols and out_col < rows:
            out[first_out_row + j, out_col] = tile[tx * PITCH + ty + j]
    ### END SOLUTION


def shared_memory_transpose(x):
    """``x.T`` of a float32 matrix as a new contiguous matrix, on the array's device."""
    check_float32("shared_memory_transpose", x=x)
    if x.ndim != 2:
        raise ValueError(f"shared_memory_transpose: needs a matrix (rows, cols), got shape {tuple(x.shape)}")
    rows, cols = x.shape
    out = array_module(x).empty((cols, rows), dtype=np.float32)
    transpose_kernel[(blocks_for(cols, TILE), blocks_for(rows, TILE)), (TILE, BLOCK_ROWS)](x, out, rows, cols)
    return out
