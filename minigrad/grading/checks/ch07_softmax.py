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

Each check first calls ``softmax_rows`` with the module's ``BLOCK`` scaled
to 8 (see :func:`~minigrad.grading.checks._kernels.call_scaled`: the
learner's launch and kernel both see 8, a tree of 3 levels) on matrices of
a few elements, then as written: a failure there is reported with the
smallest 8-thread launch that fails too. Whole warps and coalescing are
judged as written only.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.grading.checks._kernels import (
    assert_close, assert_coalesced, assert_compiles_for_gpu, call_scaled, compile_for_gpu, np_generator, on_the_learners_line,
    prepare_child,
)
from minigrad.grading.checks._smallest import first_failure_confirmed
from minigrad.grading.probing import exercise, probe

compile_for_gpu = probe(compile_for_gpu)
call_scaled = probe(call_scaled)
SMALL = 8  # the scaled-down block: a tree of 3 levels


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


def _run(learner, x: np.ndarray, what: str, block: int | None = None, coalesced: bool = False) -> None:
    """``softmax_rows(x)`` as written, or with ``BLOCK`` scaled to ``block`` (then whole warps and coalescing are not judged)."""
    rows, cols = x.shape
    if block is None:
        answer = learner.probe("softmax", x)
    else:
        answer = learner.probe("call_scaled", "softmax_rows", {"BLOCK": [None, block]}, [x])
        if answer is None or answer["stats"] is None or tuple(answer["stats"]["block"]) != (block, 1, 1):
            return  # no int BLOCK in the module, or its launch does not follow it: no scaled-down run
    stats = answer["stats"]
    launched = "" if stats is None else f", launched grid {tuple(stats['grid'])} x block {tuple(stats['block'])}"
    where = (f"your softmax_rows_kernel ({learner.defined_at('softmax_rows_kernel')}): {what}: softmax_rows of a "
             f"{rows} x {cols} matrix{launched}")
    out = answer["out"]
    assert isinstance(out, np.ndarray), f"{where}: returned {type(out).__name__}, expected an array"
    assert_close(out, _reference(x), where, rtol=1e-4, atol=1e-6)
    assert stats is not None, f"{where}: no kernel ran on the simulator"
    grid, block3 = tuple(stats["grid"]), tuple(stats["block"])
    threads = block3[0] * block3[1] * block3[2]
    assert grid == (rows, 1, 1) and block3[1:] == (1, 1), (
        f"{where}: the design is one block per row: grid ({rows}, 1, 1), a 1-D block of threads"
    )
    if block is None:
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
    if coalesced and block is None:
        assert_coalesced(stats, where)


def _describe(case) -> str:
    x, block = case
    rows, cols = x.shape
    if block is None:
        return f"a {rows} x {cols} matrix, launched as your softmax_rows launches it"
    return (f"a {rows} x {cols} matrix, launched by your softmax_rows with blocks of {block} threads "
            f"(BLOCK = {block} for this run instead of your module's)")


def _matrices(learner, what: str, small, full, coalesced: bool = False) -> None:
    """``small`` matrices with ``BLOCK`` scaled to 8, then ``full`` ones as written (``(x, None)`` cases)."""
    attempt = on_the_learners_line(learner, lambda case: _run(learner, case[0], what, case[1], coalesced=coalesced))
    first_failure_confirmed([(x, SMALL) for x in small], [(x, None) for x in full], attempt, _describe)


def _normal(gen, rows: int, cols: int) -> np.ndarray:
    return gen.standard_normal((rows, cols)).astype(np.float32)


@exercise("7.7")
def test_rows_of_whole_warps_are_read_coalesced(learner, rng):
    gen = np_generator(rng)
    small = [_normal(gen, 2, 2 * SMALL)]
    x = _normal(gen, int(gen.integers(2, 5)), 128 * int(gen.integers(2, 4)))
    _matrices(learner, "rows of whole warps", small, [x], coalesced=True)


@exercise("7.7")
def test_rows_of_any_length(learner, rng):
    gen = np_generator(rng)
    small = [_normal(gen, 1, 1), _normal(gen, 2, 3), _normal(gen, 2, 20)]
    full = [_normal(gen, int(gen.integers(1, 4)), cols) for cols in (1, int(gen.integers(2, 31)), int(gen.integers(130, 300)))]
    _matrices(learner, "rows of any length", small, full)


@exercise("7.7")
def test_large_values_do_not_overflow(learner, rng):
    gen = np_generator(rng)

    def large(rows: int, cols: int) -> np.ndarray:
        return (gen.standard_normal((rows, cols)) * 60 + gen.choice([-1, 1]) * 50).astype(np.float32)

    _matrices(learner, "values up to a few hundred (exp overflows float32 above 88)", [large(2, 5)],
              [large(3, int(gen.integers(40, 200)))])


@exercise("7.7")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    gen = np_generator(rng)
    _matrices(learner, "a small launch before the GPU build", [_normal(gen, 2, 3)], [_normal(gen, 2, 40)])
    m = np.zeros((4, 4), np.float32)
    assert_compiles_for_gpu(learner.probe("compile_for_gpu", "softmax_rows_kernel", [m, m, 4, 4]), "softmax_rows_kernel")
