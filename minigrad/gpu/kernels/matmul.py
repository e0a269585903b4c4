"""Matrix product with shared-memory tiles: each element of a and b is read from global memory n/TILE times, not n.

``c = a @ b`` for ``a`` of shape (m, k) and ``b`` of shape (k, n). A block of
``TILE x TILE`` threads computes one ``TILE x TILE`` tile of c, thread
``(tx, ty)`` the element at row ``blockIdx.y * TILE + ty``, column
``blockIdx.x * TILE + tx``. The dot products run over k in phases: in each
phase the block copies one tile of a and one tile of b into shared memory
(each thread copies one element of each), waits at a barrier, multiplies
the two tiles out of shared memory, and waits again before the next phase
overwrites them. So a block reads ``2 * TILE * TILE`` floats per phase from
global memory instead of ``2 * TILE * TILE * TILE``: TILE times less traffic.

Edges: m, n and k need not be multiples of TILE. A thread whose element of
a or b lies outside the matrix stores 0 in the tile (adding 0 changes no
dot product), and a thread outside c computes but does not write - it must
still load its tile elements and reach both barriers.

On a GPU the library's matmul uses cuBLAS; this kernel is how it works.
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, blocks_for, check_float32

TILE = 16  # the block is TILE x TILE threads


@jit.rawkernel()
def tiled_matmul_kernel(a, b, c, m, k, n):
    """c = a @ b. Launch with blocks of exactly ``(TILE, TILE)`` and grid ``(ceil(n / TILE), ceil(m / TILE))``."""
    a_tile = jit.shared_memory(np.float32, TILE * TILE)
    b_tile = jit.shared_memory(np.float32, TILE * TILE)
    tx = jit.threadIdx.x
    ty = jit.threadIdx.y
    row = jit.blockIdx.y * TILE + ty
    col = jit.blockIdx.x * TILE + tx
    acc = np.float32(0)
    ### BEGIN SOLUTION 7.3 | phase by phase along k: each thread stages one element of a's and b's tiles (0 outside), barrier, multiply the tiles, barrier
    for phase in range((k + TILE - 1) // TILE):
        # threadIdx is unsigned on the GPU; keep the index arithmetic unsigned (see jit.py)
        offset = np.uint32(phase * TILE)
        if row < m and offset + tx < k:
            a_tile[ty * TILE + tx] = a[row, offset + tx]
        else:
            a_tile[ty * TILE + tx] = np.float32(0)
        if offset + ty < k and col < n:
            b_tile[ty * TILE + tx] = b[offset + ty, col]
        else:
            b_tile[ty * TILE + tx] = np.float32(0)
        jit.syncthreads()
        for j in range(np.uint32(TILE)):
            acc += a_tile[ty * TILE + j] * b_tile[j * TILE + tx]
        jit.syncthreads()
    ### END SOLUTION
    if row < m and col < n:
        c[row, col] = acc


def tiled_matmul(a, b):
    """``a @ b`` for float32 matrices of shapes (m, k) and (k, n), on the arrays' device."""
    check_float32("tiled_matmul", a=a, b=b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(
            f"tiled_matmul: needs matrices (m, k) and (k, n), got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    (m, k), n = a.shape, b.shape[1]
    c = array_module(a, b).empty((m, n), dtype=np.float32)
    tiled_matmul_kernel[(blocks_for(n, TILE), blocks_for(m, TILE)), (TILE, TILE)](a, b, c, m, k, n)
    return c
