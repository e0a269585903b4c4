"""The plain-Python strides functions (chapter 03) and Tensor views, checked against NumPy."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad.tensor as mt
from minigrad.tensor.strides import (
    broadcast_index,
    Layout,
    broadcast_shapes,
    expand_strides,
    index_to_position,
    is_contiguous,
    numel,
    permute_strides,
    position_to_index,
    strided_map,
    strides_for_shape,
    view_strides,
)

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


def element_strides(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


@given(nonempty_shapes)
def test_strides_for_shape_matches_numpy(shape):
    assert strides_for_shape(shape) == element_strides(np.zeros(shape, np.float32))


def test_strides_for_shape_with_empty_dims_follows_pytorch():
    assert strides_for_shape((0,)) == (1,)
    assert strides_for_shape((2, 0, 3)) == (0, 3, 1)
    assert strides_for_shape(()) == ()


@given(nonempty_shapes, st.data())
def test_index_to_position_and_back(shape, data):
    index = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    position = index_to_position(index, strides_for_shape(shape))
    assert position == (np.ravel_multi_index(index, shape) if shape else 0)
    assert position_to_index(position, shape) == index
    if shape:
        assert position_to_index(position, shape) == tuple(int(i) for i in np.unravel_index(position, shape))


@st.composite
def random_views(draw):
    """A NumPy view of arange(n) made by slicing with steps and transposing, with its base."""
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple))
    base = np.arange(numel(shape), dtype=np.float64)
    view = base.reshape(shape)
    key = tuple(
        slice(draw(st.integers(0, n - 1)), None, draw(st.integers(1, 2))) for n in shape
    )
    view = view[key]
    view = view.transpose(draw(st.permutations(range(view.ndim))))
    return base, view


@given(random_views(), st.data())
def test_index_to_position_reads_the_same_element_as_numpy_for_any_view(base_and_view, data):
    base, view = base_and_view
    t = mt.from_numpy(view)
    assert t.strides == element_strides(view)
    index = tuple(data.draw(st.integers(0, n - 1)) for n in view.shape)
    assert base[index_to_position(index, t.strides, t.storage_offset())] == view[index]


@given(st.lists(shapes, min_size=1, max_size=3))
def test_broadcast_shapes_matches_numpy(shape_list):
    try:
        expected = np.broadcast_shapes(*shape_list)
    except ValueError:
        with pytest.raises(ValueError, match="cannot be broadcast"):
            broadcast_shapes(*shape_list)
    else:
        assert broadcast_shapes(*shape_list) == expected


@st.composite
def broadcastable_pairs(draw):
    big = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple))
    cut = draw(st.integers(0, len(big)))
    small = tuple(1 if draw(st.booleans()) else n for n in big[cut:])
    return big, small


@given(broadcastable_pairs(), st.data())
def test_broadcast_index_reads_what_numpy_broadcasting_reads(pair, data):
    big, small = pair
    a = np.arange(numel(small)).reshape(small)
    index = tuple(data.draw(st.integers(0, n - 1)) for n in big)
    assert np.broadcast_to(a, big)[index] == a[broadcast_index(index, big, small)]


@given(random_views(), st.data())
def test_permute_strides_matches_numpy_transpose(base_and_view, data):
    _, view = base_and_view
    dims = tuple(data.draw(st.permutations(range(view.ndim))))
    dims = tuple(d - view.ndim if data.draw(st.booleans()) else d for d in dims)  # some negative
    shape, strides = permute_strides(view.shape, element_strides(view), dims)
    expected = view.transpose(dims)
    assert shape == expected.shape and strides == element_strides(expected)
    t = mt.from_numpy(view).permute(*dims)
    assert t.shape == expected.shape and t.strides == element_strides(expected)
    assert mt.shares_memory(t, mt.from_numpy(view))


def test_permute_strides_rejects_bad_dims():
    with pytest.raises(ValueError, match="exactly once"):
        permute_strides((2, 3), (3, 1), (0, 0))
    with pytest.raises(ValueError, match="2 dimensions"):
        permute_strides((2, 3), (3, 1), (0,))


@given(random_views())
def test_is_contiguous_matches_numpy(base_and_view):
    _, view = base_and_view
    assert is_contiguous(view.shape, element_strides(view)) == view.flags.c_contiguous
    assert mt.from_numpy(view).is_contiguous() == view.flags.c_contiguous


def _factorizations(n: int, draw) -> tuple:
    shape = []
    while n > 1:
        divisors = [d for d in range(2, n + 1) if n % d == 0]
        d = draw(st.sampled_from(divisors))
        shape.append(d)
        n //= d
    ones = draw(st.integers(0, 2))
    for _ in range(ones):
        shape.insert(draw(st.integers(0, len(shape))), 1)
    return tuple(shape)


@given(random_views(), st.data())
def test_view_strides_is_sound_and_as_capable_as_numpy(base_and_view, data):
    base, view = base_and_view
    new_shape = _factorizations(view.size, data.draw)
    strides = view_strides(view.shape, element_strides(view), new_shape)
    try:
        expected = np.reshape(view, new_shape, copy=False)
    except ValueError:
        expected = None
    assert (strides is None) == (expected is None)
    if strides is not None:
        t = mt.from_numpy(view).view(new_shape)
        np.testing.assert_array_equal(t.cpu().numpy(), view.reshape(new_shape))
        assert mt.shares_memory(t, mt.from_numpy(base))
        offset = mt.from_numpy(view).storage_offset()
        for index in np.ndindex(*new_shape):
            assert base[index_to_position(index, strides, offset)] == expected[index]


@given(broadcastable_pairs(), st.integers(0, 1))
def test_expand_strides_match_numpy_broadcast_to(pair, transposed):
    big, small = pair
    a = np.arange(numel(small), dtype=np.float64).reshape(small)
    if transposed:  # a non-contiguous operand keeps its own strides where sizes do not change
        a = np.ascontiguousarray(a.T).T
    got = expand_strides(a.shape, element_strides(a), big)
    expected = np.broadcast_to(a, big)
    assert all(g == e for g, e, n in zip(got, element_strides(expected), big) if n > 1)
    base = a.ravel(order="K") if transposed else a.ravel()
    for index in np.ndindex(*big):
        assert base[index_to_position(index, got)] == expected[index]


def test_expand_strides_rejects_what_cannot_broadcast():
    with pytest.raises(ValueError, match=r"size 3 would have to become 4"):
        expand_strides((3, 1), (1, 1), (4, 2))
    with pytest.raises(ValueError, match="fewer dimensions"):
        expand_strides((2, 3), (3, 1), (3,))
    assert expand_strides((), (), (2, 3)) == (0, 0)
    assert expand_strides((1, 3), (3, 1), (2, 5, 3)) == (0, 0, 1)


def test_view_strides_examples():
    assert view_strides((2, 3, 4), (12, 4, 1), (6, 4)) == (4, 1)
    assert view_strides((4, 3), (1, 4), (12,)) is None  # a transposed matrix cannot be flattened
    assert view_strides((4, 3), (1, 4), (2, 2, 3)) == (2, 1, 4)  # splitting a dimension is always free
    assert view_strides((3, 4), (0, 1), (3, 2, 2)) == (0, 2, 1)  # an expanded dimension stays stride 0
    assert view_strides((2, 1, 3), (3, 99, 1), (6,)) == (1,)  # the stride of a size-1 dimension does not matter
    assert view_strides((2, 3), (3, 1), (5,)) is None  # a different number of elements
    assert view_strides((0, 3), (3, 1), (3, 0)) == (0, 1)


@st.composite
def strided_map_cases(draw):
    """A source view (maybe broadcast) and an output layout of the broadcast shape inside a larger storage."""
    base, view = draw(random_views())
    shape = view.shape
    if draw(st.booleans()):
        shape = (draw(st.integers(1, 3)),) + tuple(1 if n == 1 and draw(st.booleans()) else n for n in shape)
        view_shape = tuple(draw(st.sampled_from((1, n))) for n in shape[1:])
        if view_shape != view.shape:  # keep the source broadcastable: reduce it with slices of length 1
            view = view[tuple(slice(0, 1) if m == 1 and n != 1 else slice(None) for m, n in zip(view_shape, view.shape))]
        shape = (shape[0],) + tuple(max(a, b) for a, b in zip(shape[1:], view.shape))
    dims = tuple(draw(st.permutations(range(len(shape)))))
    out_offset = draw(st.integers(0, 3))
    storage_shape = tuple(shape[d] for d in dims)
    # the output is the permutation of a contiguous block that starts at out_offset
    block_strides = strides_for_shape(storage_shape)
    inverse = [dims.index(d) for d in range(len(shape))]
    out_strides = tuple(block_strides[i] for i in inverse)
    return base, view, Layout(shape, out_strides, out_offset)


def _source_layout(base: np.ndarray, view: np.ndarray) -> Layout:
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // base.itemsize
    return Layout(view.shape, element_strides(view), offset)


@given(strided_map_cases())
def test_strided_map_writes_every_output_element_through_both_layouts(case):
    base, view, out_layout = case
    storage = [-1.0] * (out_layout.offset + numel(out_layout.shape) + 2)
    strided_map(lambda v: 2 * v + 1, base.tolist(), _source_layout(base, view), storage, out_layout)
    expected = 2 * np.broadcast_to(view, out_layout.shape) + 1
    for index in np.ndindex(*out_layout.shape):
        assert storage[index_to_position(index, out_layout.strides, out_layout.offset)] == expected[index]
    untouched = storage[: out_layout.offset] + storage[out_layout.offset + numel(out_layout.shape) :]
    assert untouched == [-1.0] * len(untouched)


def test_strided_map_rejects_a_source_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"strided_map: a source of shape \(3,\) does not broadcast to the output shape \(2,\)"):
        strided_map(float, [0, 1, 2], Layout((3,), (1,)), [0, 0], Layout((2,), (1,)))


# ----------------------------------------------------------------------------- tensor views against NumPy

VIEW_OPS = ("transpose", "slice", "unsqueeze", "squeeze", "expand", "index")


@given(nonempty_shapes.filter(lambda s: len(s) >= 1), st.lists(st.sampled_from(VIEW_OPS), max_size=4), st.data())
def test_chains_of_view_ops_match_numpy(shape, ops, data):
    a = np.arange(numel(shape), dtype=np.float32).reshape(shape)
    t = mt.tensor(a)
    root = t
    for name in ops:
        if name == "transpose":
            dims = tuple(data.draw(st.permutations(range(a.ndim))))
            a, t = a.transpose(dims), t.permute(*dims)
        elif name == "slice":
            key = tuple(slice(data.draw(st.integers(0, max(n - 1, 0))), None, data.draw(st.integers(1, 2))) for n in a.shape)
            a, t = a[key], t[key]
        elif name == "unsqueeze":
            d = data.draw(st.integers(-a.ndim - 1, a.ndim))
            a, t = np.expand_dims(a, d), t.unsqueeze(d)
        elif name == "squeeze":
            a, t = a.squeeze(), t.squeeze()
        elif name == "expand":
            a, t = np.broadcast_to(a[None], (2,) + a.shape), t.expand(2, *a.shape)
        elif name == "index" and a.ndim and a.shape[0]:
            i = data.draw(st.integers(-a.shape[0], a.shape[0] - 1))
            a, t = a[i], t[i]
        assert t.shape == a.shape
        assert t.strides == element_strides(a)
        np.testing.assert_array_equal(t.cpu().numpy(), a)
        if t.numel():
            assert mt.shares_memory(t, root)
        assert t._version_counter is root._version_counter


def test_reshape_is_a_view_when_possible_and_copies_otherwise():
    x = mt.arange(12.0).reshape(3, 4)
    y = x.reshape(2, 6)
    assert mt.shares_memory(x, y) and y._version_counter is x._version_counter
    z = x.T.reshape(12)  # needs a copy
    assert not mt.shares_memory(x, z)
    np.testing.assert_array_equal(z.cpu().numpy(), np.arange(12.0).reshape(3, 4).T.reshape(12))
    assert x.T.contiguous().is_contiguous() and x.contiguous() is x


def test_view_refuses_what_needs_a_copy():
    x = mt.arange(12.0).reshape(3, 4)
    with pytest.raises(mt.ShapeError, match=r"view: cannot view a tensor of shape \(4, 3\) with strides \(1, 4\) as \(12,\).*\.reshape"):
        x.T.view(12)
    assert x.T.contiguous().view(12).shape == (12,)
    assert x.view(-1, 2).shape == (6, 2)
    with pytest.raises(mt.ShapeError, match="only one dimension can be -1"):
        x.view(-1, -1)
    with pytest.raises(mt.ShapeError, match="invalid for a tensor of 12 elements"):
        x.reshape(5, -1)
