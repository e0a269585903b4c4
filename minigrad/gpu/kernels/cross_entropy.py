"""Fused softmax + cross-entropy: the mean loss of a batch of logits in one kernel, and its gradient in another.

For a row of logits ``z`` (one row per sample) with target class ``t``::

    loss_row = log(sum_j exp(z_j)) - z_t = logsumexp(z) - z_t
    logsumexp(z) = max(z) + log(sum_j exp(z_j - max(z)))     (exp never overflows)
    loss = mean over the rows of loss_row

Forward: one block per row, of a power of two threads (32 for MNIST's 10
classes, up to ``BLOCK``). Its threads stride over the row's classes, so
any number of classes works; two tree reductions in shared memory give the
row's max and then its sum of exponentials, and thread 0 adds
``loss_row / rows`` to ``loss[0]`` atomically. It also saves each row's
logsumexp for the backward. The probabilities are never written out: that
is the memory traffic fusion saves.

Backward (one thread per element), with ``p = softmax(z) = exp(z - logsumexp(z))``::

    grad_logits[r, j] = (p[r, j] - (1 if j == t_r else 0)) * grad_loss / rows
"""

from __future__ import annotations

import numpy as np

from minigrad.gpu import jit
from minigrad.gpu.kernels.host import array_module, blocks_for, check_float32, check_shape

BLOCK = 128  # forward: at most this many threads per row (the shared scratch's size)
BACKWARD_BLOCK = (32, 8)  # (x: classes, y: rows)


@jit.rawkernel()
def softmax_cross_entropy_forward(logits, targets, loss, logsumexp, rows, classes):
    """loss[0] += mean over rows of (logsumexp(row) - row[target]); logsumexp[r] is saved.

    Launch with one block per row (grid ``rows``), blocks of a power of
    two threads, at most ``BLOCK``; ``loss[0]`` starts at 0.
    """
    scratch = jit.shared_memory(np.float32, BLOCK)
    tid = jit.threadIdx.x
    row = jit.blockIdx.x
    threads = jit.blockDim.x
    # 1. the row's max: each thread scans its classes, then a tree of max
    biggest = logits[row, 0]
    j = tid
    while j < classes:
        biggest = max(biggest, logits[row, j])
        j += threads
    scratch[tid] = biggest
    jit.syncthreads()
    step = threads // 2
    while step > 0:
        if tid < step:
            scratch[tid] = max(scratch[tid], scratch[tid + step])
        jit.syncthreads()
        step = step // 2
    row_max = scratch[0]
    jit.syncthreads()  # every thread has read scratch[0] before it is overwritten
    # 2. the sum of exp(z - max): each thread its classes, then a tree of sums
    total = np.float32(0)
    j = tid
    while j < classes:
        total += jit.exp(logits[row, j] - row_max)
        j += threads
    scratch[tid] = total
    jit.syncthreads()
    step = threads // 2
    while step > 0:
        if tid < step:
            scratch[tid] += scratch[tid + step]
        jit.syncthreads()
        step = step // 2
    # 3. the row's loss
    if tid == 0:
        row_logsumexp = row_max + jit.log(scratch[0])
        logsumexp[row] = row_logsumexp
        jit.atomic_add(loss, 0, (row_logsumexp - logits[row, targets[row]]) / np.float32(rows))


@jit.rawkernel()
def softmax_cross_entropy_backward(logits, targets, logsumexp, grad_scale, grad_logits, rows, classes):
    """grad_logits = (softmax(logits) - one_hot(targets)) * grad_scale[0], one thread per element."""
    col, row = jit.grid(2)
    if row < rows and col < classes:
        grad = jit.exp(logits[row, col] - logsumexp[row])
        if col == targets[row]:
            grad -= np.float32(1)
        grad_logits[row, col] = grad * grad_scale[0]


def _check(op: str, logits, targets):
    check_float32(op, logits=logits)
    if logits.ndim != 2 or logits.shape[0] == 0 or logits.shape[1] == 0:
        raise ValueError(
            f"{op}: 'logits' must be 2-D (rows, classes) with at least one of each, got shape {tuple(logits.shape)}"
        )
    rows, classes = logits.shape
    check_shape(op, "targets", targets, (rows,), "one class index per row of logits")
    if targets.dtype.kind not in "iu":
        raise TypeError(f"{op}: 'targets' must hold integer class indices, got dtype {targets.dtype}")
    low, high = int(targets.min()), int(targets.max())  # on a GPU an out-of-range target would read garbage
    if low < 0 or high >= classes:
        raise ValueError(f"{op}: targets must lie in [0, {classes}) for {classes} classes, got values in [{low}, {high}]")


def softmax_cross_entropy(logits, targets):
    """``(loss, logsumexp)``: the mean cross-entropy (a 1-element float32 array) and each row's logsumexp."""
    _check("softmax_cross_entropy", logits, targets)
    rows, classes = logits.shape
    xp = array_module(logits, targets)
    loss = xp.zeros(1, dtype=np.float32)
    logsumexp = xp.empty(rows, dtype=np.float32)
    threads = min(BLOCK, max(32, 1 << (classes - 1).bit_length()))  # the power of two >= classes, 32 to BLOCK
    softmax_cross_entropy_forward[rows, threads](logits, targets, loss, logsumexp, rows, classes)
    return loss, logsumexp


def _grad_scale(logits, grad_loss):
    """The 1-element ``grad_scale = grad_loss / rows`` on the logits' device (no copy to the host)."""
    xp = array_module(logits)
    return (xp.asarray(grad_loss, dtype=np.float32).reshape(1) / np.float32(logits.shape[0])).astype(np.float32)


def softmax_cross_entropy_grad(logits, targets, logsumexp, grad_loss=1.0):
    """The gradient of ``grad_loss * softmax_cross_entropy(logits, targets)[0]`` with respect to the logits."""
    _check("softmax_cross_entropy_grad", logits, targets)
    rows, classes = logits.shape
    check_float32("softmax_cross_entropy_grad", logsumexp=logsumexp)
    check_shape("softmax_cross_entropy_grad", "logsumexp", logsumexp, (rows,), "what the forward returned")
    xp = array_module(logits, targets, logsumexp)
    grad_scale = _grad_scale(logits, grad_loss)
    grad_logits = xp.empty((rows, classes), dtype=np.float32)
    grid = (blocks_for(classes, BACKWARD_BLOCK[0]), blocks_for(rows, BACKWARD_BLOCK[1]))
    softmax_cross_entropy_backward[grid, BACKWARD_BLOCK](
        logits, targets, logsumexp, grad_scale, grad_logits, rows, classes
    )
    return grad_logits
