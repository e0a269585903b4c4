"""Graded checks for chapter 07, exercise 7.3 (tiled matmul in shared memory): ``exercises/07_matmul.py``.

The learner's ``tiled_matmul_kernel`` runs on the simulator in the child with
blocks of ``TILE x TILE`` = 16 x 16 threads, on float32 matrices the grader
draws: sizes that are multiples of the tile and ragged ones (the edges of
the tiles must be padded with 0 and never read past a matrix). The grader
multiplies in float64 here and compares (float32 tolerance), and checks the
point of tiling from the launch's counters: each element of ``a`` is read
from global memory once per block column of ``c``, each element of ``b``
once per block row, never once per multiply-add. A phase that overwrites a
tile before every thread finished reading it is a shared-memory race,
reported with the simulator's message. On matrices of whole tiles the
warps' global accesses must be coalesced (at least 90 % of the bytes of the
sectors they touch used: threads of consecutive ``tx`` load consecutive
columns), and where CuPy is installed the kernel must build for a GPU - an
index mixing signed and unsigned integers runs here but not there.

Each check first runs the same kernel with ``TILE`` = 2 (blocks of 2 x 2
threads; see :func:`~minigrad.grading.checks._kernels.launch_scaled`) on
matrices of a few elements, then at the exercise's 16: a failure at 16 is
reported with the smallest 2 x 2 launch that fails too. Coalescing is
judged at 16 only.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import (
    assert_close, assert_coalesced, assert_compiles_for_gpu, blocks_of, compile_for_gpu, launch, launch_scaled, nan_array,
    np_generator, on_the_learners_line, prepare_child, scaled_note,
)
from minigrad.grading.checks._smallest import first_failure_confirmed
from minigrad.grading.probing import exercise, probe

launch = probe(launch)
launch_scaled = probe(launch_scaled)
compile_for_gpu = probe(compile_for_gpu)
TILE = 16
SMALL = 2  # the scaled-down tile: blocks of 2 x 2 threads


@probe
def library_matmul(submission, state, a, b):
    """(child) ``tiled_matmul(a, b)``, the library's host wrapper around the learner's kernel."""
    return submission.tiled_matmul(a, b)


def _blocks(count: int, tile: int = TILE) -> int:
    return (count + tile - 1) // tile


def _run(learner, gen, m: int, k: int, n: int, tile: int, what: str, coalesced: bool = False) -> None:
    """``c = a @ b`` in blocks of ``tile x tile`` threads (``TILE`` scaled to it if smaller); coalescing at ``TILE`` only."""
    a = gen.standard_normal((m, k)).astype(np.float32)
    b = gen.standard_normal((k, n)).astype(np.float32)
    grid = (_blocks(n, tile), _blocks(m, tile))
    args = [a, b, nan_array((m, n)), m, k, n]
    if tile == TILE:
        answer = learner.probe("launch", "tiled_matmul_kernel", grid, (TILE, TILE), args)
    else:
        answer = learner.probe("launch_scaled", "tiled_matmul_kernel", {"TILE": [TILE, tile]}, grid, (tile, tile), args)
        if answer is None:  # the module's TILE is not the exercise's: no scaled-down run
            return
    where = (f"your tiled_matmul_kernel ({learner.defined_at('tiled_matmul_kernel')}): {what}: c = a @ b with "
             f"a {m}x{k}, b {k}x{n}, tile {tile}")
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(answer["arrays"][2], expected, where, rtol=1e-4, atol=1e-4)
    stats = answer["stats"]
    tiled_loads = 4 * (grid[0] * m * k + grid[1] * k * n)
    assert stats["global_load_bytes"] == tiled_loads, (
        f"{where}: the launch read {stats['global_load_bytes']} bytes of global memory; staging each tile once "
        f"per phase reads {tiled_loads} (each element of a once per block column, of b once per block row)"
    )
    assert stats["global_store_bytes"] == 4 * m * n, (
        f"{where}: the launch wrote {stats['global_store_bytes']} bytes, expected {4 * m * n} (each element of c once)"
    )
    if coalesced and tile == TILE:
        assert_coalesced(stats, where)


def _describe(case) -> str:
    m, k, n, tile = case[:4]
    note = f" {scaled_note({'TILE': [TILE, tile]})}" if tile != TILE else ""
    return f"a {m}x{k} @ {k}x{n} product, {blocks_of((_blocks(n, tile), _blocks(m, tile)), (tile, tile))}{note}"


def _products(learner, gen, what: str, small, full, coalesced: bool = False) -> None:
    """``(m, k, n, tile)`` products: ``small`` ones with ``TILE`` scaled to 2, then ``full`` ones at 16."""
    attempt = on_the_learners_line(learner, lambda case: _run(learner, gen, *case, what, coalesced=coalesced))
    first_failure_confirmed(small, full, attempt, _describe)


@exercise("7.3")
def test_whole_tiles(learner, rng):
    gen = np_generator(rng)
    m, n = (TILE * int(gen.integers(1, 3)) for _ in range(2))
    _products(learner, gen, "sizes that are multiples of the tile", [(2, 4, 2, SMALL), (4, 4, 2, SMALL)],
              [(m, TILE * 2, n, TILE)], coalesced=True)


@exercise("7.3")
def test_ragged_edges(learner, rng):
    gen = np_generator(rng)
    m, k, n = int(gen.integers(17, 30)), int(gen.integers(17, 40)), int(gen.integers(3, 15))
    _products(learner, gen, "sizes that are not multiples of the tile", [(3, 3, 3, SMALL), (3, 5, 2, SMALL)],
              [(m, k, n, TILE)])


@exercise("7.3")
def test_thin_and_short(learner, rng):
    gen = np_generator(rng)
    _products(learner, gen, "one row, k smaller than a tile", [(1, 1, 3, SMALL)],
              [(1, int(gen.integers(1, 16)), int(gen.integers(1, 16)), TILE)])
    _products(learner, gen, "one column, three phases", [(3, 5, 1, SMALL)],
              [(int(gen.integers(2, 9)), int(gen.integers(33, 50)), 1, TILE)])


@exercise("7.3")
def test_the_library_wrapper_multiplies(learner, rng):
    gen = np_generator(rng)
    m, k, n = int(gen.integers(5, 20)), int(gen.integers(5, 20)), int(gen.integers(5, 20))
    a = gen.standard_normal((m, k)).astype(np.float32)
    b = gen.standard_normal((k, n)).astype(np.float32)
    c = learner.probe("library_matmul", a, b)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), f"tiled_matmul(a, b), a {m}x{k}, b {k}x{n}", 1e-4, 1e-4)


@exercise("7.3")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _products(learner, np_generator(rng), "a small launch before the GPU build", [(SMALL, SMALL, SMALL, SMALL)],
              [(TILE, TILE, TILE, TILE)])
    m = np.zeros((4, 4), np.float32)
    answer = learner.probe("compile_for_gpu", "tiled_matmul_kernel", [m, m, m, 4, 4, 4])
    assert_compiles_for_gpu(answer, "tiled_matmul_kernel")
