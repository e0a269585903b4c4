"""Graded checks for chapter 07, exercise 7.5 (transpose through a padded shared tile): ``exercises/07_transpose.py``.

The learner's ``transpose_kernel`` runs on the simulator in the child with
blocks of ``TILE x BLOCK_ROWS`` = 32 x 8 threads over float32 matrices the
grader draws; the grader compares with ``x.T`` here. It also reads the
launch's counters, which is the point of the exercise: on matrices made of
whole tiles, at least 90 % of the bytes of the 32-byte sectors the warps
touched must be used (reads and writes both along rows), the shared tile
must be read without bank conflicts (the padded pitch), and each block passes
exactly one barrier. Elements outside ragged matrices must be neither read
nor written (an out-of-bounds access costs the check), and a missing barrier
is a shared-memory race, reported with the simulator's message. Where CuPy
is installed, the kernel must also build for a GPU.
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
TILE, BLOCK_ROWS = 32, 8


@probe
def library_transpose(submission, state, x):
    """(child) ``shared_memory_transpose(x)``, the library's host wrapper around the learner's kernel."""
    return submission.shared_memory_transpose(x)


def _run(learner, gen, rows: int, cols: int, what: str) -> dict:
    x = gen.standard_normal((rows, cols)).astype(np.float32)
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    answer = learner.probe("launch", "transpose_kernel", grid, (TILE, BLOCK_ROWS), [x, nan_array((cols, rows)), rows, cols])
    where = f"{what} ({rows} x {cols}, grid {grid} x block ({TILE}, {BLOCK_ROWS}))"
    assert_close(answer["arrays"][1], x.T, where, rtol=0, atol=0)
    stats = answer["stats"]
    assert stats["global_load_bytes"] == 4 * rows * cols and stats["global_store_bytes"] == 4 * rows * cols, (
        f"{where}: read {stats['global_load_bytes']} and wrote {stats['global_store_bytes']} bytes of global memory; "
        f"each element is read once and written once ({4 * rows * cols} bytes each)"
    )
    blocks = grid[0] * grid[1]
    assert stats["barriers"] == blocks, (
        f"{where}: {stats['barriers']} barriers passed in {blocks} blocks; the tile needs exactly one per block, "
        f"between filling it and reading it"
    )
    return {"where": where, "stats": stats}


@exercise("7.5")
def test_whole_tiles_coalesced_and_free_of_bank_conflicts(learner, rng):
    gen = np_generator(rng)
    rows, cols = TILE * int(gen.integers(1, 3)), TILE * int(gen.integers(2, 4))
    result = _run(learner, gen, rows, cols, "a matrix of whole tiles")
    stats, where = result["stats"], result["where"]
    assert_coalesced(stats, where)
    assert stats["shared_max_conflict"] == 1, (
        f"{where}: the worst shared-memory access was a {stats['shared_max_conflict']}-way bank conflict "
        f"({stats['shared_wavefronts'] - stats['shared_requests']:,} extra passes): a column of a tile whose rows "
        f"are 32 words apart lies in one bank; pad each row of the tile"
    )


@exercise("7.5")
def test_ragged_edges(learner, rng):
    gen = np_generator(rng)
    _run(learner, gen, int(gen.integers(33, 70)), int(gen.integers(33, 90)), "a matrix whose edge tiles are partial")


@exercise("7.5")
def test_a_row_and_a_column(learner, rng):
    gen = np_generator(rng)
    _run(learner, gen, 1, int(gen.integers(40, 100)), "one row")
    _run(learner, gen, int(gen.integers(40, 100)), 1, "one column")


@exercise("7.5")
def test_the_library_wrapper_transposes(learner, rng):
    gen = np_generator(rng)
    x = gen.standard_normal((int(gen.integers(2, 50)), int(gen.integers(2, 50)))).astype(np.float32)
    assert_close(learner.probe("library_transpose", x), x.T, f"shared_memory_transpose of {x.shape}", rtol=0, atol=0)


@exercise("7.5")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _run(learner, np_generator(rng), TILE, TILE, "a small launch before the GPU build")
    m = np.zeros((4, 4), np.float32)
    assert_compiles_for_gpu(learner.probe("compile_for_gpu", "transpose_kernel", [m, m, 4, 4]), "transpose_kernel")
