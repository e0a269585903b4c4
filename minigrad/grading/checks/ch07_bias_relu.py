"""Graded checks for chapter 07, exercise 7.4 (fused bias + ReLU backward): ``exercises/07_bias_relu.py``.

The learner's ``bias_relu_backward`` runs on the simulator in the child with
blocks of ``COLS x ROWS`` = 32 x 8 threads on ``out = relu(x + bias)`` and an
upstream gradient the grader draws. Here the grader checks ``grad_x`` and
``grad_bias`` against central finite differences of ``L = sum(grad_out * relu(x
+ bias))`` computed in float64 (inputs kept away from the ReLU's kink), for
shapes that fill the blocks and ragged ones, and reads the launch's counters:
fused, the kernel reads each element of ``out`` and ``grad_out`` at most once.
A missing barrier in the column sum is a shared-memory race, reported with
the simulator's message. With whole blocks of columns the warps' accesses
must be coalesced (no more 32-byte sectors than reading and writing the
matrices whole needs, give or take 10 %), and where CuPy is installed the kernel must build for a GPU.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import (
    assert_close, assert_compiles_for_gpu, assert_sectors_within, compile_for_gpu, launch, nan_array, np_generator,
    prepare_child,
)
from minigrad.grading.probing import exercise, probe

launch = probe(launch)
compile_for_gpu = probe(compile_for_gpu)
COLS, ROWS = 32, 8


@probe
def library_backward(submission, state, grad_out, out):
    """(child) ``fused_bias_relu_backward(grad_out, out)``, the host wrapper around the learner's kernel."""
    return list(submission.fused_bias_relu_backward(grad_out, out))


def _problem(gen, rows: int, cols: int):
    """x, bias, out = relu(x + bias) and grad_out, with |x + bias| >= 0.1: finite differences never cross the kink."""
    bias = gen.standard_normal(cols)
    pre = gen.uniform(0.1, 2.0, size=(rows, cols)) * gen.choice([-1.0, 1.0], size=(rows, cols))
    x = pre - bias
    out = np.maximum(x + bias, 0).astype(np.float32)
    return x, bias, out, gen.standard_normal((rows, cols)).astype(np.float32)


def _finite_differences(x, bias, grad_out, eps: float = 1e-6):
    """Central differences of L = sum(grad_out * relu(x + bias)) in float64, for every x and bias element."""
    w = grad_out.astype(np.float64)

    def loss(x_, b_):
        return float(np.sum(w * np.maximum(x_ + b_, 0)))

    grad_x = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad_x[index] = (loss(x + step, bias) - loss(x - step, bias)) / (2 * eps)
    grad_bias = np.zeros_like(bias)
    for c in range(bias.size):
        step = np.zeros_like(bias)
        step[c] = eps
        grad_bias[c] = (loss(x, bias + step) - loss(x, bias - step)) / (2 * eps)
    return grad_x, grad_bias


def _run(learner, gen, rows: int, cols: int, what: str, coalesced: bool = False) -> None:
    x, bias, out, grad_out = _problem(gen, rows, cols)
    blocks = (cols + COLS - 1) // COLS
    args = [grad_out, out, nan_array((rows, cols)), nan_array(cols), rows, cols]
    answer = learner.probe("launch", "bias_relu_backward", blocks, (COLS, ROWS), args)
    grad_x, grad_bias = answer["arrays"][2], answer["arrays"][3]
    fd_x, fd_bias = _finite_differences(x, bias, grad_out)
    where = f"{what} ({rows} rows x {cols} columns)"
    assert_close(grad_x, fd_x, f"{where}: grad_x vs finite differences", rtol=1e-4, atol=1e-4)
    assert_close(grad_bias, fd_bias, f"{where}: grad_bias vs finite differences", rtol=1e-4, atol=1e-4)
    loads = answer["stats"]["global_load_bytes"]
    assert loads <= 8 * rows * cols, (
        f"{where}: the launch read {loads} bytes of global memory, more than once each element of out and "
        f"grad_out ({8 * rows * cols} bytes): does a thread visit a row twice, or read grad_out again for the sum?"
    )
    if coalesced:  # grad_out is read only where out > 0: count sectors, not the share of requested bytes
        assert_sectors_within(answer["stats"], where, load_bytes=8 * rows * cols, store_bytes=4 * rows * cols + 4 * cols)


@exercise("7.4")
def test_full_blocks(learner, rng):
    gen = np_generator(rng)
    _run(learner, gen, ROWS * int(gen.integers(1, 3)), COLS, "one block, rows a multiple of its height", coalesced=True)


@exercise("7.4")
def test_ragged_rows_and_columns(learner, rng):
    gen = np_generator(rng)
    _run(learner, gen, int(gen.integers(9, 30)), int(gen.integers(33, 50)), "two blocks, the second only partly inside the matrix")


@exercise("7.4")
def test_fewer_rows_than_threads(learner, rng):
    gen = np_generator(rng)
    _run(learner, gen, int(gen.integers(1, ROWS)), int(gen.integers(1, 20)), "fewer rows than threads per column")


@exercise("7.4")
def test_the_library_wrapper(learner, rng):
    gen = np_generator(rng)
    rows, cols = int(gen.integers(5, 20)), int(gen.integers(5, 40))
    x, bias, out, grad_out = _problem(gen, rows, cols)
    grad_x, grad_bias = learner.probe("library_backward", grad_out, out)
    fd_x, fd_bias = _finite_differences(x, bias, grad_out)
    where = f"fused_bias_relu_backward on {rows} x {cols}"
    assert_close(grad_x, fd_x, f"{where}: grad_x vs finite differences", rtol=1e-4, atol=1e-4)
    assert_close(grad_bias, fd_bias, f"{where}: grad_bias vs finite differences", rtol=1e-4, atol=1e-4)


@exercise("7.4")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _run(learner, np_generator(rng), ROWS, COLS, "a small launch before the GPU build")
    m, v = np.zeros((4, 4), np.float32), np.zeros(4, np.float32)
    answer = learner.probe("compile_for_gpu", "bias_relu_backward", [m, m, m, v, 4, 4])
    assert_compiles_for_gpu(answer, "bias_relu_backward")
