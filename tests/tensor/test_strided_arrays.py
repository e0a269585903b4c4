"""The arrays behind permute/expand/view/contiguous: the clear path (built from strides.py) equals the speed path.

The clear path runs whenever a function of ``minigrad.tensor.strides`` is
replaced; here the reference solutions are plugged in with ``use_exercise``, so
the library builds every view with ``as_strided`` and copies with
``strided_map`` while computing the same numbers as its own functions.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad.tensor as mt
from minigrad.grading import use_exercise
from minigrad.tensor import strided_arrays, strides

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions" / "03_tensors.py"

OPS = ("transpose", "permute", "expand", "view", "contiguous", "slice")


@pytest.fixture(autouse=True)
def _cpu_only(device):
    if device != "cpu":
        pytest.skip("the clear path builds NumPy arrays; other backends take the speed path")


def _run(shape, ops, choices):
    """Apply ``ops`` to arange(shape); ``choices`` (a list of ints) decides the details of each op."""
    x = mt.arange(float(np.prod(shape))).view(*shape)
    results = [x]
    pick = iter(choices)
    for op in ops:
        ndim = x.ndim
        if op == "transpose" and ndim >= 2:
            x = x.transpose(next(pick) % ndim, next(pick) % ndim)
        elif op == "permute":
            dims = list(range(ndim))
            k = next(pick) % max(ndim, 1)
            x = x.permute(*(dims[k:] + dims[:k]))
        elif op == "expand":
            x = x.unsqueeze(next(pick) % (ndim + 1))
            sizes = [n if n != 1 else 3 for n in x.shape]
            x = x.expand(*sizes)
        elif op == "view":
            flat = strides.view_strides(x.shape, x.strides, (x.numel(),))
            x = x.view(-1) if flat is not None else x.contiguous().view(-1)
            if x.numel() % 2 == 0:
                x = x.view(2, -1)
        elif op == "contiguous":
            x = x.contiguous()
        elif op == "slice" and ndim and x.shape[0] > 1:
            x = x[1::2]
        results.append(x)
    return results


@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    st.lists(st.sampled_from(OPS), max_size=5),
    st.lists(st.integers(0, 7), min_size=12, max_size=12),
)
def test_the_clear_path_builds_the_same_tensors_as_the_speed_path(shape, ops, choices):
    fast = _run(shape, ops, choices)
    assert not strided_arrays.strides_replaced()
    with use_exercise("03", SOLUTIONS):
        assert strided_arrays.strides_replaced()
        clear = _run(shape, ops, choices)
    assert not strided_arrays.strides_replaced()
    for a, b in zip(fast, clear):
        assert a.shape == b.shape
        assert all(sa == sb for sa, sb, n in zip(a.strides, b.strides, a.shape) if n > 1)  # size-1 strides are free
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert mt.shares_memory(a, fast[0]) == mt.shares_memory(b, clear[0])


def test_contiguous_copies_through_strided_map_for_any_numpy_layout():
    base = np.arange(60.0).reshape(3, 4, 5)
    layouts = [base[::-1, :, ::2], base.transpose(2, 0, 1)[1:, ::-2], np.broadcast_to(base[:, :1], (2, 3, 4, 5)),
               np.asfortranarray(base)[::-1, 1:]]  # an owner that is not row-major: the span it reads is the storage
    with use_exercise("03", SOLUTIONS):
        for array in layouts:
            copy = strided_arrays.contiguous_copy(array)
            assert copy.flags.c_contiguous and not np.shares_memory(copy, base)
            np.testing.assert_array_equal(copy, array)


def _buggy(tmp_path, original: str, replacement: str) -> Path:
    text = SOLUTIONS.read_text()
    assert text.count(original) == 1, original
    path = tmp_path / "03_tensors.py"
    path.write_text(text.replace(original, replacement))
    return path


def test_the_library_runs_the_learners_permute_strides(tmp_path):
    x = mt.arange(12.0).view(3, 4)
    path = _buggy(tmp_path, "tuple(strides[d] for d in dims)", "tuple(strides)")  # forgets to reorder the strides
    with use_exercise("03", path):
        wrong = x.T
        assert wrong.strides == (4, 1)
        assert wrong.tolist() != x.numpy().T.tolist()
    assert x.T.strides == (1, 4)


def test_the_library_copies_with_the_learners_strided_map(tmp_path):
    x = mt.arange(12.0).view(3, 4)
    path = _buggy(
        tmp_path,
        "source[index_to_position(source_index, source_layout.strides, source_layout.offset)]",
        "source[index_to_position(source_index, source_layout.strides)]",  # forgets the offset
    )
    with use_exercise("03", path):
        wrong = x[1:].mT.contiguous()
    assert wrong.tolist() != x[1:].mT.contiguous().tolist()
    assert wrong.tolist() == x[:2].mT.tolist()  # it read from the start of the storage


def test_the_library_expands_and_views_with_the_learners_strides(tmp_path):
    row = mt.arange(4.0).view(1, 4)
    path = _buggy(tmp_path, "            new_strides.append(0)\n", "            new_strides.append(stride)\n")
    with use_exercise("03", path):
        wrong = row.expand(3, 4)
    assert wrong.strides == (4, 1)  # reads past the row: the learner's stride, not 0
    with use_exercise("3.4", SOLUTIONS):
        v = mt.arange(24.0).view(2, 3, 4).transpose(0, 1).view(3, 2, 2, 2)
    np.testing.assert_array_equal(v.numpy(), np.arange(24.0).reshape(2, 3, 4).transpose(1, 0, 2).reshape(3, 2, 2, 2))


def test_expanded_views_stay_read_only_on_both_paths():
    row = mt.arange(4.0).view(1, 4)
    for context in (use_exercise("3.3", SOLUTIONS), _nothing()):
        with context:
            e = row.expand(3, 4)
        with pytest.raises(RuntimeError, match="expanded view"):
            e[0, 0] = 1.0


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
