"""Graded checks for chapter 09, exercise 9.5 (the fused unscale + inf/NaN check kernel): ``exercises/09_loss_scale.py``.

The learner's ``unscale_and_check_kernel`` runs on the simulator in the
child with launches the grader picks: grids that fit, grids with more
threads than gradients (the extra threads must stay idle: touching
``grads[n]`` is an out-of-bounds error) and grids with far fewer (each
thread takes several elements). The gradients hold an inf, a -inf or a NaN
at chosen places, or none; the flag starts at 0 or already at 1 (another
gradient of the same step overflowed). Here the grader compares the
unscaled gradients bit for bit with NumPy's float32 products, checks the
flag (1 if anything was not finite or it was 1 already, else 0), and reads
the launch's counters: one pass, each gradient read once and written once.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import (
    assert_compiles_for_gpu, compile_for_gpu, launch, np_generator, prepare_child,  # noqa: F401 (prepare_child: the child runs it)
)
from minigrad.grading.checks._smallest import first_failure
from minigrad.grading.probing import exercise, probe

launch = probe(launch)
compile_for_gpu = probe(compile_for_gpu)


def _gradients(gen, n: int, bad: dict) -> np.ndarray:
    grads = (gen.standard_normal(n) * 2.0**16).astype(np.float32)
    for index, value in bad.items():
        grads[index] = value
    return grads


def _show(value: float) -> str:
    return "NaN" if value != value else repr(float(value))


def _describe(case) -> str:
    n, blocks, threads, bad, flag = case
    where = ", ".join(f"{_show(v)} at {i}" for i, v in sorted(bad.items())) or "all finite"
    return f"n={n} gradients ({where}), found_inf starting at {flag}, a grid of {blocks} block(s) of {threads} threads"


def _run(learner, gen, case, one_pass: bool = False) -> None:
    n, blocks, threads, bad, flag = case
    grads = _gradients(gen, n, bad)
    inv = np.float32(2.0 ** -int(gen.integers(8, 17)))
    answer = learner.probe("launch", "unscale_and_check_kernel", blocks, threads,
                           [grads.copy(), np.array([inv], np.float32), np.array([flag], np.float32), n])
    out, _, found = answer["arrays"]
    expected = grads * inv
    wrong = ~((out == expected) | (np.isnan(out) & np.isnan(expected)))
    if wrong.any():
        k = int(np.argmax(wrong))
        raise AssertionError(f"{int(wrong.sum())} of {n} gradients are wrong after the launch, the first at index {k}: "
                             f"got {_show(out[k])}, expected {_show(expected[k])} (gradient {_show(grads[k])} times "
                             f"inv_scale {float(inv)!r}, in float32)")
    should = np.float32(1.0 if bad or flag else 0.0)
    assert found.shape == (1,) and found[0] == should, (
        f"found_inf is {found.tolist()} after the launch, expected [{float(should)}]: "
        + ("a thread that sees an inf or NaN sets it to 1" if bad else
           "it was already 1 (an earlier gradient of this step overflowed) and must stay 1: no thread resets it"
           if flag else "every gradient was finite, so no thread may set it"))
    if one_pass:
        stats = answer["stats"]
        loads, stores = stats["global_load_bytes"], stats["global_store_bytes"]
        assert 4 * n <= loads <= 8 * n, (
            f"the launch read {loads} bytes of global memory for {n} float32 gradients: one pass reads each gradient "
            f"once ({4 * n} bytes, plus inv_scale: at most {8 * n}); is the array read twice (a check pass, then a "
            f"multiply pass)?")
        assert 4 * n <= stores <= 4 * n + 4 * len(bad), (
            f"the launch wrote {stores} bytes of global memory: each of the {n} gradients once ({4 * n} bytes) and the "
            f"flag at most once per non-finite gradient ({4 * len(bad)} bytes); does every thread write found_inf?")


def _launches(learner, gen, cases, one_pass: bool = False) -> None:
    first_failure(cases, lambda case: _run(learner, gen, case, one_pass), _describe)


@exercise("9.5")
def test_finite_gradients_are_unscaled_and_leave_the_flag_at_0(learner, rng):
    gen = np_generator(rng)
    blocks = int(gen.integers(2, 5))
    _launches(learner, gen, [(8, 1, 8, {}, 0), (16, 2, 8, {}, 0), (blocks * 32, blocks, 32, {}, 0)])


@exercise("9.5")
def test_an_inf_or_nan_anywhere_sets_the_flag(learner, rng):
    gen = np_generator(rng)
    n = int(gen.integers(100, 200))
    _launches(learner, gen, [(8, 1, 8, {7: np.inf}, 0), (8, 1, 8, {0: np.nan}, 0), (13, 2, 8, {12: -np.inf}, 0),
                             (37, 2, 8, {int(gen.integers(16, 37)): np.nan}, 0),
                             (n, 2, 32, {int(gen.integers(0, n)): np.inf, int(gen.integers(0, n)): np.nan}, 0)])


@exercise("9.5")
def test_the_flag_is_never_reset(learner, rng):
    gen = np_generator(rng)
    _launches(learner, gen, [(8, 1, 8, {}, 1), (24, 1, 8, {}, 1), (int(gen.integers(40, 90)), 2, 32, {}, 1),
                             (20, 1, 8, {3: np.inf}, 1)])


@exercise("9.5")
def test_threads_past_the_end_stay_idle(learner, rng):
    gen = np_generator(rng)
    threads = 32
    blocks = int(gen.integers(3, 6))
    n = blocks * threads - int(gen.integers(1, threads))
    _launches(learner, gen, [(5, 1, 8, {}, 0), (13, 2, 8, {4: np.inf}, 0), (n, blocks, threads, {}, 0)])


@exercise("9.5")
def test_one_pass_over_the_gradients(learner, rng):
    gen = np_generator(rng)
    n = int(gen.integers(6, 12)) * 64 + int(gen.integers(1, 32))
    _launches(learner, gen, [(40, 1, 8, {}, 0), (40, 1, 8, {5: np.inf, 30: np.nan}, 0), (n, 2, 32, {}, 0),
                             (n, 2, 32, {int(gen.integers(0, n)): np.inf}, 0)], one_pass=True)


@exercise("9.5")
def test_the_kernel_builds_for_a_gpu(learner, rng):
    _run(learner, np_generator(rng), (64, 2, 32, {}, 0))  # a small launch first: without CuPy the check rests on it
    v = np.zeros(4, np.float32)
    answer = learner.probe("compile_for_gpu", "unscale_and_check_kernel", [v, v[:1].copy(), v[:1].copy(), 4])
    assert_compiles_for_gpu(answer, "unscale_and_check_kernel")
