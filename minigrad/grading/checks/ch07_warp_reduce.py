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
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import assert_compiles_for_gpu, compile_for_gpu, prepare_child, launch, np_generator
from minigrad.grading.probing import exercise, probe

launch = probe(launch)
compile_for_gpu = probe(compile_for_gpu)
BLOCK, WARPS = 256, 8


@probe
def library_sum(submission, state, x):
    """(child) ``warp_shuffle_sum(x)``, the library's host wrapper around the learner's kernel."""
    return submission.warp_shuffle_sum(x)


def _expected(x: np.ndarray, what: str, got) -> None:
    exact = float(np.sum(x.astype(np.float64)))
    tolerance = 1e-5 * float(np.sum(np.abs(x.astype(np.float64)))) + 1e-6
    got = float(np.asarray(got).reshape(-1)[0])
    assert abs(got - exact) <= tolerance, f"{what}: got {got:.7g}, expected {exact:.7g} (within {tolerance:.2g})"


def _run(learner, gen, n: int, blocks: int, what: str) -> None:
    x = gen.standard_normal(n).astype(np.float32)
    answer = learner.probe("launch", "warp_sum", blocks, BLOCK, [x, np.zeros(1, np.float32), n])
    where = f"{what} (n={n}, {blocks} blocks of {BLOCK})"
    _expected(x, where, answer["arrays"][1])
    stats = answer["stats"]
    assert stats["atomics"] == blocks, f"{where}: {stats['atomics']} atomic additions; the block's total is added once per block"
    assert stats["barriers"] == blocks, (
        f"{where}: {stats['barriers']} barriers passed in {blocks} blocks; shuffles need none, and the warps' totals "
        f"need exactly one per block before the first warp reads them"
    )
    assert stats["shuffles"] > 0, f"{where}: no warp shuffle ran; the warp's values travel through registers with shfl_*_sync"
    assert stats["shared_store_bytes"] <= 4 * WARPS * blocks, (
        f"{where}: {stats['shared_store_bytes']} bytes written to shared memory; one float per warp "
        f"({4 * WARPS * blocks} bytes in all) is all the block needs - the rest of the sum is shuffles"
    )


@exercise("7.6")
def test_one_block(learner, rng):
    _run(learner, np_generator(rng), BLOCK, 1, "one block, one element per thread")


@exercise("7.6")
def test_several_blocks_with_a_ragged_end(learner, rng):
    gen = np_generator(rng)
    blocks = int(gen.integers(2, 4))
    _run(learner, gen, int(gen.integers(blocks * BLOCK // 2, 3 * blocks * BLOCK)), blocks, "several blocks")


@exercise("7.6")
def test_fewer_elements_than_a_warp(learner, rng):
    gen = np_generator(rng)
    _run(learner, gen, int(gen.integers(1, 31)), 1, "most lanes hold a total of 0")


@exercise("7.6")
def test_the_library_wrapper_sums(learner, rng):
    gen = np_generator(rng)
    n = int(gen.integers(700, 1500))
    x = (gen.standard_normal(n) + 0.5).astype(np.float32)
    _expected(x, f"warp_shuffle_sum of {n} elements", learner.probe("library_sum", x))


@exercise("7.6")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _run(learner, np_generator(rng), BLOCK, 1, "a small launch before the GPU build")
    v = np.zeros(4, np.float32)
    assert_compiles_for_gpu(learner.probe("compile_for_gpu", "warp_sum", [v, v, 4]), "warp_sum")
