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

Each check first runs the same kernel with ``TILE x BLOCK_ROWS`` = 4 x 2
(8 threads, ``PITCH`` = 5; see
:func:`~minigrad.grading.checks._kernels.launch_scaled`) on matrices of a
few elements, then at the exercise's 32 x 8: a failure there is reported
with the smallest 4 x 2 launch that fails too. Coalescing and bank
conflicts are judged at 32 x 8 only.
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
TILE, BLOCK_ROWS = 32, 8
SMALL, SMALL_ROWS = 4, 2  # the scaled-down tile: 4 x 4 floats, blocks of 4 x 2 threads


@probe
def library_transpose(submission, state, x):
    """(child) ``shared_memory_transpose(x)``, the library's host wrapper around the learner's kernel."""
    return submission.shared_memory_transpose(x)


def _block(tile: int) -> tuple[int, int]:
    return (TILE, BLOCK_ROWS) if tile == TILE else (tile, SMALL_ROWS)


def _sizes(tile: int) -> dict:
    """The module's sizes for a tile of ``tile``: its block, and the pitch one more than the tile."""
    return {"TILE": [TILE, tile], "BLOCK_ROWS": [BLOCK_ROWS, _block(tile)[1]], "PITCH": [TILE + 1, tile + 1]}


def _grid(rows: int, cols: int, tile: int) -> tuple[int, int]:
    return (cols + tile - 1) // tile, (rows + tile - 1) // tile


def _run(learner, gen, rows: int, cols: int, tile: int, what: str, layout: bool = False) -> None:
    """``x.T`` for ``x`` of ``rows x cols`` with tiles of ``tile`` (scaled if smaller); ``layout``: coalescing and banks, at TILE only."""
    x = gen.standard_normal((rows, cols)).astype(np.float32)
    grid = _grid(rows, cols, tile)
    block = _block(tile)
    args = [x, nan_array((cols, rows)), rows, cols]
    if tile == TILE:
        answer = learner.probe("launch", "transpose_kernel", grid, block, args)
    else:
        answer = learner.probe("launch_scaled", "transpose_kernel", _sizes(tile), grid, block, args)
        if answer is None:  # the module's sizes are not the exercise's: no scaled-down run
            return
    where = (f"your transpose_kernel ({learner.defined_at('transpose_kernel')}): {what} ({rows} x {cols}, "
             f"grid {grid} x block {block})")
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
    if layout and tile == TILE:
        assert_coalesced(stats, where)
        assert stats["shared_max_conflict"] == 1, (
            f"{where}: the worst shared-memory access was a {stats['shared_max_conflict']}-way bank conflict "
            f"({stats['shared_wavefronts'] - stats['shared_requests']:,} extra passes): a column of a tile whose rows "
            f"are 32 words apart lies in one bank; pad each row of the tile"
        )


def _describe(case) -> str:
    rows, cols, tile = case
    note = f" {scaled_note(_sizes(tile))}" if tile != TILE else ""
    return f"a {rows} x {cols} matrix, {blocks_of(_grid(rows, cols, tile), _block(tile))}{note}"


def _matrices(learner, gen, what: str, small, full, layout: bool = False) -> None:
    """``(rows, cols, tile)`` matrices: ``small`` ones with tiles of 4 (blocks of 4 x 2), then ``full`` ones at 32."""
    attempt = on_the_learners_line(learner, lambda case: _run(learner, gen, *case, what, layout=layout))
    first_failure_confirmed(small, full, attempt, _describe)


@exercise("7.5")
def test_whole_tiles_coalesced_and_free_of_bank_conflicts(learner, rng):
    gen = np_generator(rng)
    rows, cols = TILE * int(gen.integers(1, 3)), TILE * int(gen.integers(2, 4))
    _matrices(learner, gen, "a matrix of whole tiles", [(SMALL, 2 * SMALL, SMALL)], [(rows, cols, TILE)], layout=True)


@exercise("7.5")
def test_ragged_edges(learner, rng):
    gen = np_generator(rng)
    _matrices(learner, gen, "a matrix whose edge tiles are partial", [(5, 6, SMALL), (6, 9, SMALL)],
              [(int(gen.integers(33, 70)), int(gen.integers(33, 90)), TILE)])


@exercise("7.5")
def test_a_row_and_a_column(learner, rng):
    gen = np_generator(rng)
    _matrices(learner, gen, "one row", [(1, 6, SMALL)], [(1, int(gen.integers(40, 100)), TILE)])
    _matrices(learner, gen, "one column", [(6, 1, SMALL)], [(int(gen.integers(40, 100)), 1, TILE)])


@exercise("7.5")
def test_the_library_wrapper_transposes(learner, rng):
    gen = np_generator(rng)
    x = gen.standard_normal((int(gen.integers(2, 50)), int(gen.integers(2, 50)))).astype(np.float32)
    assert_close(learner.probe("library_transpose", x), x.T, f"shared_memory_transpose of {x.shape}", rtol=0, atol=0)


@exercise("7.5")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _matrices(learner, np_generator(rng), "a small launch before the GPU build", [(SMALL, SMALL, SMALL)], [(TILE, TILE, TILE)])
    m = np.zeros((4, 4), np.float32)
    assert_compiles_for_gpu(learner.probe("compile_for_gpu", "transpose_kernel", [m, m, 4, 4]), "transpose_kernel")
