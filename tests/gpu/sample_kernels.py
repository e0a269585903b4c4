"""Kernels the gpu tests launch: correct ones (each with its NumPy reference in the tests) and buggy ones.

Written as a learner would, against ``minigrad.gpu.jit`` only, in the subset
of Python that ``cupyx.jit`` transpiles (test_compile.py compiles the
correct ones with NVRTC).
"""

import numpy as np

from minigrad.gpu import jit

BLOCK = 256
TILE = 16

# ---------------------------------------------------------------- correct kernels


@jit.rawkernel()
def add(x, y, out, n):
    """out = x + y, one thread per element; threads past n do nothing."""
    i = jit.grid(1)
    if i < n:
        out[i] = x[i] + y[i]


@jit.rawkernel()
def saxpy_grid_stride(a, x, y, out, n):
    """out = a * x + y with a grid-stride loop: any grid covers any n."""
    start = jit.grid(1)
    stride = jit.gridsize(1)
    for i in range(start, n, stride):
        out[i] = a * x[i] + y[i]


@jit.rawkernel()
def add_2d(x, y, out, rows, cols):
    """out = x + y on a 2-D grid of 2-D blocks: thread (x, y) handles column x, row y."""
    col, row = jit.grid(2)
    if row < rows and col < cols:
        out[row, col] = x[row, col] + y[row, col]


@jit.rawkernel()
def block_sum(x, out, n):
    """out[0] = sum(x): each block tree-reduces BLOCK elements in shared memory, then one atomic per block."""
    partial = jit.shared_memory(np.float32, BLOCK)
    tid = jit.threadIdx.x
    i = jit.grid(1)
    if i < n:
        partial[tid] = x[i]
    else:
        partial[tid] = np.float32(0)
    jit.syncthreads()
    step = jit.blockDim.x // 2
    while step > 0:
        if tid < step:
            partial[tid] += partial[tid + step]
        jit.syncthreads()
        step = step // 2
    if tid == 0:
        jit.atomic_add(out, 0, partial[0])


@jit.rawkernel()
def tiled_matmul(a, b, c, m, k, n):
    """c = a @ b (m x k times k x n) with TILE x TILE tiles staged in shared memory."""
    a_tile = jit.shared_memory(np.float32, TILE * TILE)
    b_tile = jit.shared_memory(np.float32, TILE * TILE)
    tx = jit.threadIdx.x
    ty = jit.threadIdx.y
    col = jit.blockIdx.x * TILE + tx
    row = jit.blockIdx.y * TILE + ty
    acc = np.float32(0)
    for phase in range((k + TILE - 1) // TILE):
        # threadIdx/blockIdx are unsigned (uint32) on the GPU, and cupyx.jit refuses arithmetic
        # mixing uint32 with a signed int32 variable: keep the index arithmetic unsigned.
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
    if row < m and col < n:
        c[row, col] = acc


@jit.rawkernel()
def histogram(values, counts, n, bins):
    """counts[v] += 1 for each value: a per-block histogram in shared memory with shared atomics, then merged."""
    local = jit.shared_memory(np.int32, 16)
    tid = jit.threadIdx.x
    if tid < bins:
        local[tid] = 0
    jit.syncthreads()
    i = jit.grid(1)
    if i < n:
        jit.atomic_add(local, values[i], 1)
    jit.syncthreads()
    if tid < bins:
        jit.atomic_add(counts, tid, local[tid])


@jit.rawkernel()
def copy_through_shared(x, out, counter, n):
    """out = 2 * x staged through shared memory; thread 0 of each block counts the block atomically."""
    staged = jit.shared_memory(np.float32, 32)
    tid = jit.threadIdx.x
    i = jit.grid(1)
    if i < n:
        staged[tid] = x[i]
    jit.syncthreads()
    if i < n:
        out[i] = staged[tid] * np.float32(2)
    if tid == 0:
        jit.atomic_add(counter, 0, 1)


@jit.rawkernel()
def reverse_dynamic(x, out, n):
    """out = x reversed within each block, through dynamic shared memory (shared_mem= at launch)."""
    buffer = jit.shared_memory(np.float32, None)
    tid = jit.threadIdx.x
    width = jit.blockDim.x
    i = jit.grid(1)
    if i < n:
        buffer[tid] = x[i]
    jit.syncthreads()
    if i < n:
        out[i] = buffer[width - 1 - tid]


@jit.rawkernel(device=True)
def relu(value):
    """A device function: called from kernels, returns a value."""
    return max(value, np.float32(0))


@jit.rawkernel()
def bias_relu(x, bias, out, rows, cols):
    """out = relu(x + bias) row by row, calling the device function."""
    col, row = jit.grid(2)
    if row < rows and col < cols:
        out[row, col] = relu(x[row, col] + bias[col])


# ---------------------------------------------------------------- buggy kernels


@jit.rawkernel()
def block_sum_without_barriers(x, out, n):
    """block_sum with every syncthreads() removed: threads read partial sums others have not written yet."""
    partial = jit.shared_memory(np.float32, BLOCK)
    tid = jit.threadIdx.x
    i = jit.grid(1)
    partial[tid] = x[i] if i < n else np.float32(0)
    step = jit.blockDim.x // 2
    while step > 0:
        if tid < step:
            partial[tid] += partial[tid + step]
        step = step // 2
    if tid == 0:
        jit.atomic_add(out, 0, partial[0])


@jit.rawkernel()
def block_sum_missing_loop_barrier(x, out, n):
    """block_sum with only the barrier inside the loop removed (the first one kept)."""
    partial = jit.shared_memory(np.float32, BLOCK)
    tid = jit.threadIdx.x
    i = jit.grid(1)
    partial[tid] = x[i] if i < n else np.float32(0)
    jit.syncthreads()
    step = jit.blockDim.x // 2
    while step > 0:
        if tid < step:
            partial[tid] += partial[tid + step]
        step = step // 2
    if tid == 0:
        jit.atomic_add(out, 0, partial[0])


@jit.rawkernel()
def add_unguarded(x, y, out, n):
    """add without the bounds check: the last block's extra threads write past the end."""
    i = jit.grid(1)
    out[i] = x[i] + y[i]


@jit.rawkernel()
def shift_left_shared(x, out, n):
    """Reads its right neighbour in shared memory; the last thread reads one past the array."""
    staged = jit.shared_memory(np.float32, 64)
    tid = jit.threadIdx.x
    i = jit.grid(1)
    staged[tid] = x[i]
    jit.syncthreads()
    out[i] = staged[tid + 1]


@jit.rawkernel()
def barrier_in_branch(x, out, n):
    """A syncthreads() only the first half of the block reaches."""
    staged = jit.shared_memory(np.float32, 64)
    tid = jit.threadIdx.x
    staged[tid] = x[tid]
    if tid < 32:
        jit.syncthreads()
        out[tid] = staged[63 - tid]


@jit.rawkernel()
def early_return_before_barrier(x, out, n):
    """Threads past n return before the barrier the others wait at."""
    staged = jit.shared_memory(np.float32, 64)
    tid = jit.threadIdx.x
    i = jit.grid(1)
    if i >= n:
        return
    staged[tid] = x[i]
    jit.syncthreads()
    out[i] = staged[tid]


@jit.rawkernel()
def all_write_one_address(out):
    """Every thread writes shared slot 0: a write-write race."""
    slot = jit.shared_memory(np.float32, 1)
    slot[0] = np.float32(jit.threadIdx.x)
    jit.syncthreads()
    if jit.threadIdx.x == 0:
        out[0] = slot[0]


# ---------------------------------------------------------------- warp shuffles


@jit.rawkernel()
def warp_sum(x, out, n):
    """out[0] = sum(x): each warp adds its 32 values with shfl_down_sync, lane 0 adds the warp's total atomically."""
    i = jit.grid(1)
    total = np.float32(0)
    if i < n:
        total = x[i]
    offset = np.uint32(16)  # a shuffle's delta is unsigned
    while offset > 0:
        total += jit.shfl_down_sync(0xFFFFFFFF, total, offset)
        offset = offset // 2  # (cupyx.jit cannot type `offset //= 2` on an unsigned variable)
    if jit.laneid() == 0:
        jit.atomic_add(out, 0, total)


@jit.rawkernel()
def warp_shuffles(x, down, up, flipped, broadcast):
    """Each lane records what the four shuffles give it, with widths 32 and 8.

    (``flipped`` is not called ``xor``: that is a C++ keyword, and NVRTC rejects it as a parameter name.)
    """
    i = jit.grid(1)
    value = x[i]
    down[i] = jit.shfl_down_sync(0xFFFFFFFF, value, 3)
    up[i] = jit.shfl_up_sync(0xFFFFFFFF, value, 2, width=8)
    flipped[i] = jit.shfl_xor_sync(0xFFFFFFFF, value, 5)
    broadcast[i] = jit.shfl_sync(0xFFFFFFFF, value, 7, width=8)
