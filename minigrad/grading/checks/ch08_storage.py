"""Graded checks for chapter 08, exercise 8.1 (bytes a set of tensors holds): ``exercises/08_storage.py``.

Views only share memory inside one process, so the tensors and their views
are made in the child by :func:`storage_of` from shapes chosen here; the
expected byte counts (each owning buffer once, whole) are worked out here
from the same shapes.
"""

from __future__ import annotations

import numpy as np

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.probing import exercise, probe

DTYPES = {"float32": 4, "float64": 8, "float16": 2, "int64": 8}


@probe
def storage_of(submission, state, case, shape_a, shape_b, dtype, as_tensors):
    """``storage_bytes`` of the tensors of ``case``, made here from two fresh buffers ``a`` and ``b``."""
    import minigrad.tensor as mt
    from numpy.lib.stride_tricks import as_strided, sliding_window_view

    a, b = np.zeros(shape_a, dtype=dtype), np.ones(shape_b, dtype=dtype)
    if as_tensors:
        a, b = mt.tensor(a), mt.tensor(b)

    def wrap(array):  # a strided view of a (or of the tensor a's array), as the caller holds it
        return mt.from_numpy(array) if as_tensors else array

    def arr(x):
        return x.numpy() if as_tensors else x

    rows = arr(a).shape[0]
    cases = {
        "as_strided views": lambda: [wrap(as_strided(arr(a), (rows - 1, 2), arr(a).strides)),
                                     wrap(as_strided(arr(a), (2,), (arr(a).strides[0],))),
                                     wrap(as_strided(arr(a), arr(a).shape, arr(a).strides))],
        "sliding windows and a slice": lambda: [wrap(sliding_window_view(arr(a), (2, 2))), a[1:],
                                                wrap(sliding_window_view(arr(a)[1:], 2, axis=0))],
        "two buffers of the same size": lambda: [a, wrap(arr(a).copy()), a.T],
        "two buffers": lambda: [a, b],
        "the same tensor twice": lambda: [a, a, b],
        "a tensor and its views": lambda: [a, a[1:], a.T, a.reshape(-1)],
        "a slice alone": lambda: [a[:1]],
        "a view of a view": lambda: [a[1:][:, ::2]],
        "views of two buffers": lambda: [b.T, a[::2], b[:1], a.T[1:]],
        "nothing": lambda: [],
    }
    return submission.storage_bytes(cases[case]())


EXPECTED_BUFFERS = {  # which of the two buffers each case holds
    "two buffers": "ab", "the same tensor twice": "ab", "a tensor and its views": "a", "a slice alone": "a",
    "a view of a view": "a", "views of two buffers": "ab", "nothing": "",
    "as_strided views": "a", "sliding windows and a slice": "a", "two buffers of the same size": "aa",
}


def _check(learner, gen, case: str, as_tensors: bool) -> None:
    dtype = str(gen.choice(sorted(DTYPES)))
    shape_a = (int(gen.integers(3, 9)), int(gen.integers(2, 7)))
    shape_b = (int(gen.integers(2, 6)), int(gen.integers(2, 6)))
    nbytes = {"a": int(np.prod(shape_a)) * DTYPES[dtype], "b": int(np.prod(shape_b)) * DTYPES[dtype]}
    expected = sum(nbytes[name] for name in EXPECTED_BUFFERS[case])
    got = learner.probe("storage_of", case, shape_a, shape_b, dtype, as_tensors)
    kind = "minigrad tensors" if as_tensors else "NumPy arrays"
    assert isinstance(got, (int, np.integer)) and not isinstance(got, bool), (
        f"storage_bytes must return an int number of bytes, got {type(got).__name__} ({case}, {kind})")
    assert got == expected, (
        f"storage_bytes for {case} ({kind}; a: {shape_a}, b: {shape_b}, {dtype}) returned {got} bytes, "
        f"expected {expected}: each buffer counts once and whole, however many views of it are in the list"
    )


@exercise("8.1")
def test_distinct_buffers_add_up(learner, rng):
    gen = np_generator(rng)
    for case in ("two buffers", "nothing"):
        _check(learner, gen, case, as_tensors=False)
    _check(learner, gen, "two buffers", as_tensors=True)


@exercise("8.1")
def test_a_buffer_counts_once(learner, rng):
    gen = np_generator(rng)
    for as_tensors in (False, True):
        _check(learner, gen, "the same tensor twice", as_tensors)
        _check(learner, gen, "a tensor and its views", as_tensors)


@exercise("8.1")
def test_a_view_holds_its_whole_buffer(learner, rng):
    gen = np_generator(rng)
    for as_tensors in (False, True):
        _check(learner, gen, "a slice alone", as_tensors)
        _check(learner, gen, "a view of a view", as_tensors)


@exercise("8.1")
def test_strided_views_count_their_buffer_once(learner, rng):
    gen = np_generator(rng)
    for as_tensors in (False, True):
        _check(learner, gen, "as_strided views", as_tensors)
        _check(learner, gen, "sliding windows and a slice", as_tensors)


@exercise("8.1")
def test_two_buffers_of_the_same_size_are_two(learner, rng):
    gen = np_generator(rng)
    for as_tensors in (False, True):
        _check(learner, gen, "two buffers of the same size", as_tensors)


@exercise("8.1")
def test_views_of_several_buffers(learner, rng):
    gen = np_generator(rng)
    for as_tensors in (False, True):
        _check(learner, gen, "views of two buffers", as_tensors)
