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
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import assert_compiles_for_gpu, compile_for_gpu, prepare_child, launch, np_generator
from minigrad.grading.probing import exercise, probe

launch = probe(launch)
compile_for_gpu = probe(compile_for_gpu)
BLOCK = 256  # the block size the kernel's shared array is sized for
LEVELS = 8  # log2(BLOCK): the levels of the tree


@probe
def library_sum(submission, state, x):
    """(child) ``shared_memory_sum(x)``, the library's host wrapper around the learner's kernel."""
    return submission.shared_memory_sum(x)


def _expected(x: np.ndarray, what: str, got) -> None:
    exact = float(np.sum(x.astype(np.float64)))
    tolerance = 1e-5 * float(np.sum(np.abs(x.astype(np.float64)))) + 1e-6
    got = float(np.asarray(got).reshape(-1)[0])
    assert abs(got - exact) <= tolerance, f"{what}: got {got:.7g}, expected {exact:.7g} (within {tolerance:.2g})"


def _run(learner, gen, n: int, blocks: int, what: str) -> None:
    x = gen.standard_normal(n).astype(np.float32)
    answer = learner.probe("launch", "block_sum", blocks, BLOCK, [x, np.zeros(1, np.float32), n])
    _expected(x, f"{what} (n={n}, {blocks} blocks of {BLOCK})", answer["arrays"][1])
    atomics = answer["stats"]["atomics"]
    assert atomics == blocks, f"{what}: {atomics} atomic additions for {blocks} blocks; the block's total is added once per block"
    per_block = answer["stats"]["barriers"] / blocks
    assert LEVELS <= per_block <= LEVELS + 2, (
        f"{what}: {per_block:g} barriers per block; a tree over {BLOCK} partial sums has {LEVELS} levels, each "
        f"ended by a barrier, plus one after the stores ({LEVELS + 1}): is the sum made by one thread, or is "
        f"a barrier inside a loop that repeats it?"
    )


@exercise("7.2")
def test_one_block(learner, rng):
    gen = np_generator(rng)
    _run(learner, gen, BLOCK, 1, "one block, one element per thread")


@exercise("7.2")
def test_several_blocks_with_a_ragged_end(learner, rng):
    gen = np_generator(rng)
    blocks = int(gen.integers(2, 4))
    _run(learner, gen, int(gen.integers(blocks * BLOCK // 2, 3 * blocks * BLOCK)), blocks, "several blocks")


@exercise("7.2")
def test_fewer_elements_than_threads(learner, rng):
    gen = np_generator(rng)
    _run(learner, gen, int(gen.integers(1, 40)), 1, "most threads hold a total of 0")


@exercise("7.2")
def test_the_library_wrapper_sums(learner, rng):
    gen = np_generator(rng)
    n = int(gen.integers(700, 1500))
    x = (gen.standard_normal(n) + 0.5).astype(np.float32)
    _expected(x, f"shared_memory_sum of {n} elements", learner.probe("library_sum", x))


@exercise("7.2")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _run(learner, np_generator(rng), BLOCK, 1, "a small launch before the GPU build")
    v = np.zeros(4, np.float32)
    assert_compiles_for_gpu(learner.probe("compile_for_gpu", "block_sum", [v, v, 4]), "block_sum")
