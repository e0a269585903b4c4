"""Graded checks for chapter 07, exercise 7.7 (row-wise softmax from an empty kernel, and its launch): ``exercises/07_softmax.py``.

The learner writes both ``softmax_rows_kernel`` and the launch in
``softmax_rows(x)``. The grader calls ``softmax_rows`` on float32 matrices it
draws (rows of any length, values large enough that ``exp`` overflows unless
the row's max is subtracted) and compares with a float64 NumPy softmax here.
From the launch's counters it checks the design the exercise asks for:

- one block per row (the grid has ``rows`` blocks) of a whole number of warps;
- each element of ``x`` read at most three times (max, sum, output) and each
  element of ``out`` written once;
- on rows of whole warps, at least 90 % of the bytes of the 32-byte sectors
  the warps touched used (a warp reads 32 adjacent columns);
- a two-level reduction's barriers: at least one for each of the two
  reductions, and at most ``2 * (log2(threads) + 2)`` per block - never one
  per element.

A race, an out-of-bounds access or a divergent barrier is the simulator's
report and costs the check; where CuPy is installed the kernel must also
build for a GPU.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.grading.checks._kernels import (
    assert_close, assert_coalesced, assert_compiles_for_gpu, compile_for_gpu, prepare_child, np_generator,
)
from minigrad.grading.probing import exercise, probe

compile_for_gpu = probe(compile_for_gpu)


@probe
def softmax(submission, state, x):
    """(child) ``softmax_rows(x)`` with the learner's launch; the result and the last launch's counters."""
    from minigrad.gpu import jit

    out = submission.softmax_rows(x)
    stats = jit.last_launch_stats()
    return {"out": np.asarray(out), "stats": None if stats is None else stats.as_dict()}


def _reference(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _run(learner, x: np.ndarray, what: str) -> tuple[dict, str]:
    rows, cols = x.shape
    answer = learner.probe("softmax", x)
    where = f"{what}: softmax_rows of a {rows} x {cols} matrix"
    out = answer["out"]
    assert isinstance(out, np.ndarray), f"{where}: returned {type(out).__name__}, expected an array"
    assert_close(out, _reference(x), where, rtol=1e-4, atol=1e-6)
    stats = answer["stats"]
    assert stats is not None, f"{where}: no kernel ran on the simulator"
    grid, block = tuple(stats["grid"]), tuple(stats["block"])
    threads = block[0] * block[1] * block[2]
    assert grid == (rows, 1, 1) and block[1:] == (1, 1), (
        f"{where}: launched grid {grid} x block {block}; the design is one block per row: grid ({rows}, 1, 1), "
        f"a 1-D block of threads"
    )
    assert threads % 32 == 0 and 32 <= threads <= 1024, (
        f"{where}: {threads} threads per block; use a whole number of warps (32, 64, ... 1024)"
    )
    assert stats["global_store_bytes"] == 4 * rows * cols, (
        f"{where}: wrote {stats['global_store_bytes']} bytes; each element of out is written once ({4 * rows * cols})"
    )
    reads = stats["global_load_bytes"]
    assert reads <= 3 * 4 * rows * cols + 4 * rows * threads, (
        f"{where}: read {reads:,} bytes of x, more than three passes over the matrix ({3 * 4 * rows * cols:,}): "
        f"does every thread read the whole row?"
    )
    per_block = stats["barriers"] / rows
    most = 2 * (math.log2(threads) + 2)
    assert 2 <= per_block <= most, (
        f"{where}: {per_block:g} barriers per block; a two-level reduction passes at least one barrier for the "
        f"max and one for the sum, and at most about log2(threads) + 2 for each ({most:g} in all), however long "
        f"the row: no barrier inside a loop over the columns"
    )
    return stats, where


@exercise("7.7")
def test_rows_of_whole_warps_are_read_coalesced(learner, rng):
    gen = np_generator(rng)
    x = gen.standard_normal((int(gen.integers(2, 5)), 128 * int(gen.integers(2, 4)))).astype(np.float32)
    stats, where = _run(learner, x, "rows of whole warps")
    assert_coalesced(stats, where)


@exercise("7.7")
def test_rows_of_any_length(learner, rng):
    gen = np_generator(rng)
    for cols in (1, int(gen.integers(2, 31)), int(gen.integers(130, 300))):
        _run(learner, gen.standard_normal((int(gen.integers(1, 4)), cols)).astype(np.float32), f"rows of {cols}")


@exercise("7.7")
def test_large_values_do_not_overflow(learner, rng):
    gen = np_generator(rng)
    x = (gen.standard_normal((3, int(gen.integers(40, 200)))) * 60 + gen.choice([-1, 1]) * 50).astype(np.float32)
    _run(learner, x, "values up to a few hundred (exp overflows float32 above 88)")


@exercise("7.7")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _run(learner, np_generator(rng).standard_normal((2, 40)).astype(np.float32), "a small launch before the GPU build")
    m = np.zeros((4, 4), np.float32)
    assert_compiles_for_gpu(learner.probe("compile_for_gpu", "softmax_rows_kernel", [m, m, 4, 4]), "softmax_rows_kernel")
