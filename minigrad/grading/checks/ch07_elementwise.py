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


@exercise("7.1")
def test_one_thread_per_element(learner, rng):
    gen = np_generator(rng)
    threads = int(gen.choice([32, 64]))
    blocks = int(gen.integers(2, 5))
    _run(learner, gen, blocks * threads, blocks, threads, "a grid with exactly one thread per element", coalesced=True)


@exercise("7.1")
def test_threads_past_the_end_stay_idle(learner, rng):
    gen = np_generator(rng)
    threads = 32
    blocks = int(gen.integers(3, 6))
    n = blocks * threads - int(gen.integers(1, threads))
    _run(learner, gen, n, blocks, threads, "a grid with more threads than elements")


@exercise("7.1")
def test_a_small_grid_covers_a_large_array(learner, rng):
    gen = np_generator(rng)
    threads = 32
    blocks = int(gen.integers(2, 4))
    n = int(gen.integers(4, 9)) * blocks * threads + int(gen.integers(1, threads))
    _run(learner, gen, n, blocks, threads, "a grid-stride launch with fewer threads than elements")
    n = int(gen.integers(4, 9)) * blocks * threads
    _run(learner, gen, n, blocks, threads, "a grid-stride launch over whole warps", coalesced=True)


@exercise("7.1")
def test_one_block_and_tiny_arrays(learner, rng):
    gen = np_generator(rng)
    for n in (1, int(gen.integers(2, 31))):
        _run(learner, gen, n, 1, 32, "a single block")
    _run(learner, gen, int(gen.integers(40, 100)), 1, 32, "a single block smaller than the array")


@exercise("7.1")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _run(learner, np_generator(rng), 64, 2, 32, "a small launch before the GPU build")
    v = np.zeros(4, np.float32)
    answer = learner.probe("compile_for_gpu", "scaled_add_kernel", [np.float32(1), v, v, v, 4])
    assert_compiles_for_gpu(answer, "scaled_add_kernel")
