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

Each check first runs the same kernel with ``COLS x ROWS`` = 2 x 4 (8
threads, a 2-step column sum; see
:func:`~minigrad.grading.checks._kernels.launch_scaled`) on matrices of a
few elements, then at the exercise's 32 x 8: a failure there is reported
with the smallest 2 x 4 launch that fails too. Coalescing is judged at 32 x 8 only.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import (
    assert_close, assert_compiles_for_gpu, assert_sectors_within, blocks_of, compile_for_gpu, launch, launch_scaled,
    nan_array, np_generator, on_the_learners_line, prepare_child, scaled_note,
)
from minigrad.grading.checks._smallest import first_failure_confirmed
from minigrad.grading.probing import exercise, probe

launch = probe(launch)
launch_scaled = probe(launch_scaled)
compile_for_gpu = probe(compile_for_gpu)
COLS, ROWS = 32, 8
SMALL = (2, 4)  # the scaled-down block: 2 columns x 4 threads each, a column sum of 2 steps


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


def _sizes(block) -> dict:
    return {"COLS": [COLS, block[0]], "ROWS": [ROWS, block[1]]}


def _run(learner, gen, rows: int, cols: int, block, what: str, coalesced: bool = False) -> None:
    """The backward on a ``rows x cols`` problem in blocks ``block`` = (columns, threads per column), scaled if smaller."""
    x, bias, out, grad_out = _problem(gen, rows, cols)
    blocks = (cols + block[0] - 1) // block[0]
    args = [grad_out, out, nan_array((rows, cols)), nan_array(cols), rows, cols]
    if tuple(block) == (COLS, ROWS):
        answer = learner.probe("launch", "bias_relu_backward", blocks, (COLS, ROWS), args)
    else:
        answer = learner.probe("launch_scaled", "bias_relu_backward", _sizes(block), blocks, tuple(block), args)
        if answer is None:  # the module's COLS, ROWS are not the exercise's: no scaled-down run
            return
    grad_x, grad_bias = answer["arrays"][2], answer["arrays"][3]
    fd_x, fd_bias = _finite_differences(x, bias, grad_out)
    where = (f"your bias_relu_backward ({learner.defined_at('bias_relu_backward')}): {what} ({rows} rows x {cols} "
             f"columns, blocks of {block[0]} x {block[1]})")
    assert_close(grad_x, fd_x, f"{where}: grad_x vs finite differences", rtol=1e-4, atol=1e-4)
    assert_close(grad_bias, fd_bias, f"{where}: grad_bias vs finite differences", rtol=1e-4, atol=1e-4)
    loads = answer["stats"]["global_load_bytes"]
    assert loads <= 8 * rows * cols, (
        f"{where}: the launch read {loads} bytes of global memory, more than once each element of out and "
        f"grad_out ({8 * rows * cols} bytes): does a thread visit a row twice, or read grad_out again for the sum?"
    )
    if coalesced and tuple(block) == (COLS, ROWS):  # grad_out is read only where out > 0: count sectors, not the share of requested bytes
        assert_sectors_within(answer["stats"], where, load_bytes=8 * rows * cols, store_bytes=4 * rows * cols + 4 * cols)


def _describe(case) -> str:
    rows, cols, block = case
    note = f" {scaled_note(_sizes(block))}" if tuple(block) != (COLS, ROWS) else ""
    return f"{rows} rows x {cols} columns, {blocks_of((cols + block[0] - 1) // block[0], block)}{note}"


def _problems(learner, gen, what: str, small, full, coalesced: bool = False) -> None:
    """``(rows, cols, block)`` problems: ``small`` ones in blocks of 2 x 4, then ``full`` ones in blocks of 32 x 8."""
    attempt = on_the_learners_line(learner, lambda case: _run(learner, gen, *case, what, coalesced=coalesced))
    first_failure_confirmed(small, full, attempt, _describe)


@exercise("7.4")
def test_full_blocks(learner, rng):
    gen = np_generator(rng)
    _problems(learner, gen, "one block, rows a multiple of its height", [(4, 2, SMALL), (8, 2, SMALL)],
              [(ROWS * int(gen.integers(1, 3)), COLS, (COLS, ROWS))], coalesced=True)


@exercise("7.4")
def test_ragged_rows_and_columns(learner, rng):
    gen = np_generator(rng)
    _problems(learner, gen, "two blocks, the second only partly inside the matrix", [(5, 3, SMALL), (6, 3, SMALL)],
              [(int(gen.integers(9, 30)), int(gen.integers(33, 50)), (COLS, ROWS))])


@exercise("7.4")
def test_fewer_rows_than_threads(learner, rng):
    gen = np_generator(rng)
    _problems(learner, gen, "fewer rows than threads per column", [(1, 1, SMALL), (3, 2, SMALL)],
              [(int(gen.integers(1, ROWS)), int(gen.integers(1, 20)), (COLS, ROWS))])


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
    _problems(learner, np_generator(rng), "a small launch before the GPU build", [(SMALL[1], SMALL[0], SMALL)],
              [(ROWS, COLS, (COLS, ROWS))])
    m, v = np.zeros((4, 4), np.float32), np.zeros(4, np.float32)
    answer = learner.probe("compile_for_gpu", "bias_relu_backward", [m, m, m, v, 4, 4])
    assert_compiles_for_gpu(answer, "bias_relu_backward")
