"""Fused bias + ReLU, ``out = max(x + bias, 0)``, and its backward: fusion saves trips to global memory.

``x`` is ``(rows, cols)``, ``bias`` is ``(cols,)``, broadcast over the rows.
Unfused, ``relu(x + bias)`` is two kernels: the first reads x and writes a
temporary, the second reads the temporary and writes out - 4 floats of
traffic per element. Fused it is 2 (read x, write out; the bias is tiny).

Backward, with ``out`` saved by the forward (``out > 0`` exactly where
``x + bias > 0``)::

    grad_x[r, c]  = grad_out[r, c] if out[r, c] > 0 else 0
    grad_bias[c]  = sum over r of grad_x[r, c]     (the bias was broadcast over rows)

One kernel computes both, so grad_out is read once. A block owns ``COLS``
adjacent columns and all rows: its threads form a ``COLS x ROWS`` grid,
thread ``(tx, ty)`` walks rows ``ty, ty + ROWS, ...`` of column
``tx``, adding up its share of the bias gradient; then the block adds the
``ROWS`` partial sums of each column with a tree in shared memory. A warp
(32 threads of consecutive ``tx``) reads 32 adjacent floats of a row: a
coalesced access. Each column's sum is made by one block, so no atomics
are needed and the result is the same on every run.
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, blocks_for, check_float32, check_same_shape, check_shape

FORWARD_BLOCK = (32, 8)  # (x: columns, y: rows) for the elementwise forward
COLS = 32  # backward: columns per block (threadIdx.x), one warp across a row
ROWS = 8  # backward: threads per column (threadIdx.y); a power of two for the tree


@jit.rawkernel()
def bias_relu_forward(x, bias, out, rows, cols):
    """out[r, c] = max(x[r, c] + bias[c], 0), one thread per element; threads past the edges do nothing."""
    col, row = jit.grid(2)
    if row < rows and col < cols:
        out[row, col] = max(x[row, col] + bias[col], np.float32(0))


@jit.rawkernel()
def bias_relu_backward(grad_out, out, grad_x, grad_bias, rows, cols):
    """grad_x = grad_out where out > 0 (else 0); grad_bias[c] = sum of column c of grad_x.

    Launch with blocks of exactly ``(COLS, ROWS)`` threads and
    ``ceil(cols / COLS)`` blocks along x.
    """
    partial = jit.shared_memory(np.float32, COLS * ROWS)
    tx = jit.threadIdx.x
    ty = jit.threadIdx.y
    col = jit.blockIdx.x * COLS + tx
    ### BEGIN SOLUTION 7.4 | walk this thread's rows of its column: gradient through the ReLU into grad_x, sum it; then add the column's partial sums in shared memory
    total = np.float32(0)
    if col < cols:
        row = ty
        while row < rows:
            grad = np.float32(0)
            if out[row, col] > np.float32(0):
                grad = grad_out[row, col]
            grad_x[row, col] = grad
            total += grad
            row += np.uint32(ROWS)  # threadIdx is unsigned: keep row unsigned (see jit.py)
    partial[ty * COLS + tx] = total
    jit.syncthreads()
    step = np.uint32(ROWS // 2)
    while step > 0:
        if ty < step:
            partial[ty * COLS + tx] += partial[(ty + step) * COLS + tx]
        jit.syncthreads()
        step = step // 2
    if ty == 0 and col < cols:
        grad_bias[col] = partial[tx]
    ### END SOLUTION


def fused_bias_relu(x, bias):
    """``max(x + bias, 0)`` for ``x`` of shape (rows, cols) and ``bias`` of shape (cols,), float32."""
    check_float32("fused_bias_relu", x=x, bias=bias)
    if x.ndim != 2:
        raise ValueError(f"fused_bias_relu: 'x' must be 2-D (rows, cols), got shape {tuple(x.shape)}")
    rows, cols = x.shape
    check_shape("fused_bias_relu", "bias", bias, (cols,), "one bias per column of x")
    out = array_module(x, bias).empty((rows, cols), dtype=np.float32)
    grid = (blocks_for(cols, FORWARD_BLOCK[0]), blocks_for(rows, FORWARD_BLOCK[1]))
    bias_relu_forward[grid, FORWARD_BLOCK](x, bias, out, rows, cols)
    return out


def fused_bias_relu_backward(grad_out, out):
    """``(grad_x, grad_bias)`` of ``out = fused_bias_relu(x, bias)`` given ``grad_out`` (same shape as out)."""
    check_float32("fused_bias_relu_backward", grad_out=grad_out, out=out)
    check_same_shape("fused_bias_relu_backward", out=out, grad_out=grad_out)
    if out.ndim != 2:
        raise ValueError(f"fused_bias_relu_backward: 'out' must be 2-D (rows, cols), got shape {tuple(out.shape)}")
    rows, cols = out.shape
    xp = array_module(grad_out, out)
    grad_x = xp.empty((rows, cols), dtype=np.float32)
    grad_bias = xp.empty(cols, dtype=np.float32)
    bias_relu_backward[blocks_for(cols, COLS), (COLS, ROWS)](grad_out, out, grad_x, grad_bias, rows, cols)
    return grad_x, grad_bias
