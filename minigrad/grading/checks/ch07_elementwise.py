"""Graded checks for chapter 07, exercise 7.1 (thread index, bounds check, grid-stride loop): ``exercises/07_elementwise.py``.

The learner's ``scaled_add_kernel`` runs on the simulator in the child with
launches the grader picks: a grid that fits the array exactly, one with more
threads than elements (the extra threads must idle: touching ``x[n]`` is an
out-of-bounds error), and one with far fewer (each thread must take several
elements). The grader compares ``alpha * x + y`` here, and reads the
launch's counters to see that each element was read once and written once.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import (
    assert_close, assert_coalesced, assert_compiles_for_gpu, compile_for_gpu, launch, nan_array, np_generator,
    prepare_child,
)
from minigrad.grading.checks._smallest import first_failure
from minigrad.grading.probing import exercise, probe

launch = probe(launch)
compile_for_gpu = probe(compile_for_gpu)


def _run(learner, gen, n: int, blocks: int, threads: int, what: str, coalesced: bool = False) -> None:
    alpha = np.float32(gen.uniform(-2, 2))
    x = gen.standard_normal(n).astype(np.float32)
    y = gen.standard_normal(n).astype(np.float32)
    answer = learner.probe("launch", "scaled_add_kernel", blocks, threads, [alpha, x, y, nan_array(n), n])
    out = answer["arrays"][-1]
    assert_close(out, alpha * x + y, f"{what} (n={n}, grid {blocks} x block {threads})", rtol=1e-6, atol=1e-6)
    stats = answer["stats"]
    loads, stores = stats["global_load_bytes"], stats["global_store_bytes"]
    assert loads == 8 * n and stores == 4 * n, (
        f"{what} (n={n}, grid {blocks} x block {threads}): the launch read {loads} bytes and wrote {stores} bytes "
        f"of global memory; each element of x and y should be read once and each element of out written once "
        f"({8 * n} and {4 * n} bytes): do two threads handle the same element?"
    )
    if coalesced:
        assert_coalesced(stats, f"{what} (n={n}, grid {blocks} x block {threads})")


def _launches(learner, gen, what: str, launches) -> None:
    """``(n, blocks, threads, coalesced)`` launches in order (blocks of 8 threads first); the first failure is reported."""
    first_failure(launches, lambda launch: _run(learner, gen, launch[0], launch[1], launch[2], what, coalesced=launch[3]),
                  lambda launch: f"n={launch[0]} elements, a grid of {launch[1]} block(s) of {launch[2]} threads")


@exercise("7.1")
def test_one_thread_per_element(learner, rng):
    gen = np_generator(rng)
    threads = int(gen.choice([32, 64]))
    blocks = int(gen.integers(2, 5))
    _launches(learner, gen, "a grid with exactly one thread per element",
              [(8, 1, 8, False), (16, 2, 8, False), (blocks * threads, blocks, threads, True)])


@exercise("7.1")
def test_threads_past_the_end_stay_idle(learner, rng):
    gen = np_generator(rng)
    threads = 32
    blocks = int(gen.integers(3, 6))
    n = blocks * threads - int(gen.integers(1, threads))
    _launches(learner, gen, "a grid with more threads than elements", [(5, 1, 8, False), (13, 2, 8, False), (n, blocks, threads, False)])


@exercise("7.1")
def test_a_small_grid_covers_a_large_array(learner, rng):
    gen = np_generator(rng)
    threads = 32
    blocks = int(gen.integers(2, 4))
    n = int(gen.integers(4, 9)) * blocks * threads + int(gen.integers(1, threads))
    whole = int(gen.integers(4, 9)) * blocks * threads
    _launches(learner, gen, "a grid-stride launch with fewer threads than elements",
              [(20, 1, 8, False), (37, 2, 8, False), (n, blocks, threads, False)])
    _launches(learner, gen, "a grid-stride launch over whole warps", [(whole, blocks, threads, True)])


@exercise("7.1")
def test_one_block_and_tiny_arrays(learner, rng):
    gen = np_generator(rng)
    small = [(1, 1, 8, False), (3, 1, 8, False), (1, 1, 32, False), (int(gen.integers(2, 31)), 1, 32, False)]
    _launches(learner, gen, "a single block", small)
    _launches(learner, gen, "a single block smaller than the array", [(int(gen.integers(40, 100)), 1, 32, False)])


@exercise("7.1")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _run(learner, np_generator(rng), 64, 2, 32, "a small launch before the GPU build")
    v = np.zeros(4, np.float32)
    answer = learner.probe("compile_for_gpu", "scaled_add_kernel", [np.float32(1), v, v, v, 4])
    assert_compiles_for_gpu(answer, "scaled_add_kernel")
