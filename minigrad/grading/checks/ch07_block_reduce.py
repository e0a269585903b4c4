"""Graded checks for chapter 07, exercise 7.2 (block reduction in shared memory): ``exercises/07_block_reduce.py``.

The learner's ``block_sum`` runs on the simulator in the child, in blocks of
``BLOCK`` = 256 threads, on float32 arrays the grader draws; the grader adds
them up in float64 here and compares (float32 tolerance: 1e-5 of the sum of
absolute values). The simulator watches shared memory: a step of the tree
that reads what another thread wrote without a barrier in between is a data
race, reported with the simulator's message, and costs the check. The
counters show the tree: a block of 256 passes one barrier per level of the
tree (8) and one after the stores, give or take one; a sum made serially by
one thread passes one or two. Where CuPy is installed, the kernel must also
build for a GPU.

Each check first runs the same kernel with ``BLOCK`` = 8 (a tree of 3
levels; see :func:`~minigrad.grading.checks._kernels.launch_scaled`) on a
few elements, then at the exercise's 256: a failure at 256 is reported
with the smallest 8-thread launch that fails too.
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
BLOCK = 256  # the block size the kernel's shared array is sized for
SMALL = 8  # the scaled-down block: a tree of 3 levels


@probe
def library_sum(submission, state, x):
    """(child) ``shared_memory_sum(x)``, the library's host wrapper around the learner's kernel."""
    return submission.shared_memory_sum(x)


def _expected(x: np.ndarray, what: str, got) -> None:
    exact = float(np.sum(x.astype(np.float64)))
    tolerance = 1e-5 * float(np.sum(np.abs(x.astype(np.float64)))) + 1e-6
    got = float(np.asarray(got).reshape(-1)[0])
    assert abs(got - exact) <= tolerance, f"{what}: got {got:.7g}, expected {exact:.7g} (within {tolerance:.2g})"


def _run(learner, gen, n: int, blocks: int, block: int, what: str) -> None:
    """``block_sum`` over ``n`` elements in ``blocks`` blocks of ``block`` threads (``BLOCK`` scaled to it if smaller)."""
    x = gen.standard_normal(n).astype(np.float32)
    args = [x, np.zeros(1, np.float32), n]
    if block == BLOCK:
        answer = learner.probe("launch", "block_sum", blocks, BLOCK, args)
    else:
        answer = learner.probe("launch_scaled", "block_sum", {"BLOCK": [BLOCK, block]}, blocks, block, args)
        if answer is None:  # the module's BLOCK is not the exercise's: no scaled-down run
            return
    where = f"your block_sum ({learner.defined_at('block_sum')}): {what} (n={n}, {blocks} blocks of {block})"
    _expected(x, where, answer["arrays"][1])
    atomics = answer["stats"]["atomics"]
    assert atomics == blocks, f"{where}: {atomics} atomic additions for {blocks} blocks; the block's total is added once per block"
    levels = block.bit_length() - 1
    per_block = answer["stats"]["barriers"] / blocks
    assert levels <= per_block <= levels + 2, (
        f"{where}: {per_block:g} barriers per block; a tree over {block} partial sums has {levels} levels, each "
        f"ended by a barrier, plus one after the stores ({levels + 1}): is the sum made by one thread, or is "
        f"a barrier inside a loop that repeats it?"
    )


def _describe(launch) -> str:
    n, blocks, block = launch
    note = f" {scaled_note({'BLOCK': [BLOCK, block]})}" if block != BLOCK else ""
    return f"n={n} elements, {blocks_of(blocks, block)}{note}"


def _launches(learner, gen, what: str, small, full) -> None:
    """``(n, blocks, block)`` launches: ``small`` ones with ``BLOCK`` scaled to 8, then ``full`` ones at 256."""
    attempt = on_the_learners_line(learner, lambda launch: _run(learner, gen, *launch, what))
    first_failure_confirmed(small, full, attempt, _describe)


@exercise("7.2")
def test_one_block(learner, rng):
    gen = np_generator(rng)
    _launches(learner, gen, "one block, one element per thread", [(SMALL, 1, SMALL)], [(BLOCK, 1, BLOCK)])


@exercise("7.2")
def test_several_blocks_with_a_ragged_end(learner, rng):
    gen = np_generator(rng)
    blocks = int(gen.integers(2, 4))
    n = int(gen.integers(blocks * BLOCK // 2, 3 * blocks * BLOCK))
    _launches(learner, gen, "several blocks", [(13, 2, SMALL), (37, 2, SMALL)], [(n, blocks, BLOCK)])


@exercise("7.2")
def test_fewer_elements_than_threads(learner, rng):
    gen = np_generator(rng)
    _launches(learner, gen, "most threads hold a total of 0", [(1, 1, SMALL), (5, 1, SMALL)], [(int(gen.integers(1, 40)), 1, BLOCK)])


@exercise("7.2")
def test_the_library_wrapper_sums(learner, rng):
    gen = np_generator(rng)
    n = int(gen.integers(700, 1500))
    x = (gen.standard_normal(n) + 0.5).astype(np.float32)
    _expected(x, f"shared_memory_sum of {n} elements", learner.probe("library_sum", x))


@exercise("7.2")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _launches(learner, np_generator(rng), "a small launch before the GPU build", [(SMALL, 1, SMALL)], [(BLOCK, 1, BLOCK)])
    v = np.zeros(4, np.float32)
    assert_compiles_for_gpu(learner.probe("compile_for_gpu", "block_sum", [v, v, 4]), "block_sum")
