"""Graded checks for chapter 07, exercise 7.6 (a sum with warp shuffles): ``exercises/07_warp_reduce.py``.

The learner's ``warp_sum`` runs on the simulator in the child in blocks of
``BLOCK`` = 256 threads (8 warps) on float32 arrays the grader draws; the
grader adds them up in float64 here and compares (float32 tolerance). The
counters say whether the sum went through registers: one barrier per block
(between the warps' totals and the first warp reading them), warp shuffles,
at most one shared-memory write per warp and one atomic per block. A warp
total read before its barrier is a shared-memory race, a shuffle some lanes
of a warp skip is a divergent warp, both reported with the simulator's
message. Where CuPy is installed, the kernel must also build for a GPU.

Each check first runs the same kernel with ``BLOCK`` = 32 (one warp, the
smallest block a shuffle sum can use: a warp is 32 lanes whatever the
block) and then 64, ``WARPS`` scaled along (see
:func:`~minigrad.grading.checks._kernels.launch_scaled`), then at the
exercise's 256: a failure there is reported with the smallest scaled-down
launch that fails too.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import (
    assert_compiles_for_gpu, blocks_of, compile_for_gpu, launch, launch_scaled, np_generator, on_the_learners_line,
    prepare_child, scaled_note,
)
from minigrad.grading.checks._smallest import first_failure_confirmed
from minigrad.grading.probing import exercise, probe

launch = probe(launch)
launch_scaled = probe(launch_scaled)
compile_for_gpu = probe(compile_for_gpu)
BLOCK, WARPS = 256, 8
WARP = 32  # the smallest block: one warp


@probe
def library_sum(submission, state, x):
    """(child) ``warp_shuffle_sum(x)``, the library's host wrapper around the learner's kernel."""
    return submission.warp_shuffle_sum(x)


def _expected(x: np.ndarray, what: str, got) -> None:
    exact = float(np.sum(x.astype(np.float64)))
    tolerance = 1e-5 * float(np.sum(np.abs(x.astype(np.float64)))) + 1e-6
    got = float(np.asarray(got).reshape(-1)[0])
    assert abs(got - exact) <= tolerance, f"{what}: got {got:.7g}, expected {exact:.7g} (within {tolerance:.2g})"


def _sizes(block: int) -> dict:
    return {"BLOCK": [BLOCK, block], "WARPS": [WARPS, block // WARP]}


def _run(learner, gen, n: int, blocks: int, block: int, what: str) -> None:
    """``warp_sum`` over ``n`` elements in ``blocks`` blocks of ``block`` threads (``BLOCK``, ``WARPS`` scaled if smaller)."""
    x = gen.standard_normal(n).astype(np.float32)
    args = [x, np.zeros(1, np.float32), n]
    if block == BLOCK:
        answer = learner.probe("launch", "warp_sum", blocks, BLOCK, args)
    else:
        answer = learner.probe("launch_scaled", "warp_sum", _sizes(block), blocks, block, args)
        if answer is None:  # the module's BLOCK, WARPS are not the exercise's: no scaled-down run
            return
    warps = block // WARP
    where = f"your warp_sum ({learner.defined_at('warp_sum')}): {what} (n={n}, {blocks} blocks of {block})"
    _expected(x, where, answer["arrays"][1])
    stats = answer["stats"]
    assert stats["atomics"] == blocks, f"{where}: {stats['atomics']} atomic additions; the block's total is added once per block"
    assert stats["barriers"] == blocks, (
        f"{where}: {stats['barriers']} barriers passed in {blocks} blocks; shuffles need none, and the warps' totals "
        f"need exactly one per block before the first warp reads them"
    )
    assert stats["shuffles"] > 0, f"{where}: no warp shuffle ran; the warp's values travel through registers with shfl_*_sync"
    assert stats["shared_store_bytes"] <= 4 * warps * blocks, (
        f"{where}: {stats['shared_store_bytes']} bytes written to shared memory; one float per warp "
        f"({4 * warps * blocks} bytes in all) is all the block needs - the rest of the sum is shuffles"
    )


def _describe(launch) -> str:
    n, blocks, block = launch
    one_warp = ": one warp, the smallest block a shuffle sum can use" if block == WARP else ""
    note = f" {scaled_note(_sizes(block))}" if block != BLOCK else ""
    return f"n={n} elements, {blocks_of(blocks, block)}{one_warp}{note}"


def _launches(learner, gen, what: str, small, full) -> None:
    """``(n, blocks, block)`` launches: ``small`` ones with blocks of one or two warps, then ``full`` ones at 256."""
    attempt = on_the_learners_line(learner, lambda launch: _run(learner, gen, *launch, what))
    first_failure_confirmed(small, full, attempt, _describe)


@exercise("7.6")
def test_one_block(learner, rng):
    _launches(learner, np_generator(rng), "one block, one element per thread", [(WARP, 1, WARP), (2 * WARP, 1, 2 * WARP)],
              [(BLOCK, 1, BLOCK)])


@exercise("7.6")
def test_several_blocks_with_a_ragged_end(learner, rng):
    gen = np_generator(rng)
    blocks = int(gen.integers(2, 4))
    n = int(gen.integers(blocks * BLOCK // 2, 3 * blocks * BLOCK))
    _launches(learner, gen, "several blocks", [(45, 2, WARP), (100, 2, 2 * WARP)], [(n, blocks, BLOCK)])


@exercise("7.6")
def test_fewer_elements_than_a_warp(learner, rng):
    gen = np_generator(rng)
    _launches(learner, gen, "most lanes hold a total of 0", [(5, 1, WARP), (5, 1, 2 * WARP)],
              [(int(gen.integers(1, 31)), 1, BLOCK)])


@exercise("7.6")
def test_the_library_wrapper_sums(learner, rng):
    gen = np_generator(rng)
    n = int(gen.integers(700, 1500))
    x = (gen.standard_normal(n) + 0.5).astype(np.float32)
    _expected(x, f"warp_shuffle_sum of {n} elements", learner.probe("library_sum", x))


@exercise("7.6")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _launches(learner, np_generator(rng), "a small launch before the GPU build", [(WARP, 1, WARP)], [(BLOCK, 1, BLOCK)])
    v = np.zeros(4, np.float32)
    assert_compiles_for_gpu(learner.probe("compile_for_gpu", "warp_sum", [v, v, 4]), "warp_sum")
