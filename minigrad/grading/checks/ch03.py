"""Graded checks for chapter 03 (exercises 3.1-3.4), on fresh random shapes and views each run.

The learner's functions run in the sandboxed child (``learner.NAME(...)``); the
shapes, views and expected answers are made here. NumPy is the oracle: the element strides of an array are ``arr.strides``
divided by its item size (NumPy counts bytes, we count elements), and
``np.ravel_multi_index``, ``np.broadcast_shapes`` and ``np.transpose`` give
the expected positions, shapes and strides. Each exercise is checked on its
own: 3.2-3.4 never call the learner's 3.1.
"""

import itertools

import numpy as np

from minigrad.grading.probing import exercise, must_raise

DTYPES = (np.float32, np.float64, np.float16, np.int64, np.int8)


def element_strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def storage_offset(view: np.ndarray, base: np.ndarray) -> int:
    """Elements between the start of ``base``'s buffer and ``view[0, 0, ...]``."""
    return (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // base.itemsize


def random_shape(rng, min_ndim=0, max_ndim=4, max_size=5) -> tuple[int, ...]:
    return tuple(rng.randint(1, max_size) for _ in range(rng.randint(min_ndim, max_ndim)))


def random_view(rng, allow_negative: bool = True):
    """(base, view): a strided NumPy view of ``base = arange(n)``: sliced with steps, transposed, maybe broadcast."""
    shape = random_shape(rng, 1, 4)
    base = np.arange(int(np.prod(shape)), dtype=rng.choice(DTYPES[:2]))
    view = base.reshape(shape)
    key = []
    for size in shape:
        step = rng.choice((1, 1, 2, 3) + ((-1, -2) if allow_negative else ()))
        start = rng.randrange(size)
        key.append(slice(start, None, step))
    view = view[tuple(key)]
    view = view.transpose(rng.sample(range(view.ndim), view.ndim))
    if rng.random() < 0.3:  # broadcast: a new leading dimension with stride 0
        view = np.broadcast_to(view, (rng.randint(2, 3),) + view.shape)
    return base, view


def all_indices(shape):
    return itertools.product(*(range(n) for n in shape))


def _as_tuple_of_ints(value, what: str) -> tuple[int, ...]:
    assert isinstance(value, tuple), (
        f"{what} must be a tuple (as x.shape and x.strides are), got {type(value).__name__} {value!r}"
    )
    assert all(isinstance(v, (int, np.integer)) for v in value), f"{what} must hold ints, got {value!r}"
    return tuple(int(v) for v in value)


# ------------------------------------------------------- 3.1 strides_for_shape

@exercise("3.1")
def test_strides_for_shape_matches_numpy(learner, rng):
    for _ in range(60):
        shape = random_shape(rng, 1, 6, 7)
        dtype = rng.choice(DTYPES)
        expected = element_strides(np.empty(shape, dtype))
        got = _as_tuple_of_ints(learner.strides_for_shape(shape), f"strides_for_shape({shape})")
        assert got == expected, (
            f"strides_for_shape({shape}) gave {got}; a contiguous {np.dtype(dtype)} array of that shape has "
            f"strides {expected} (in elements; NumPy's byte strides divided by the item size)"
        )


@exercise("3.1")
def test_strides_for_shape_edge_cases(learner, rng):
    assert _as_tuple_of_ints(learner.strides_for_shape(()), "strides_for_shape(())") == (), (
        "a 0-d tensor (a single number) has no dimensions, so no strides: ()"
    )
    n = rng.randint(2, 9)
    assert learner.strides_for_shape((n,)) == (1,), f"strides_for_shape(({n},)) must be (1,)"
    assert learner.strides_for_shape((1,)) == (1,)
    a, b = rng.randint(2, 6), rng.randint(2, 6)
    shape = (1, a, 1, b, 1)  # size-1 dimensions still take part in the products
    got = learner.strides_for_shape(shape)
    assert got == element_strides(np.empty(shape)), f"strides_for_shape({shape}) gave {got}"
    shape = [a, b]  # a list works as well as a tuple
    assert tuple(learner.strides_for_shape(shape)) == (b, 1)


# ------------------------------------------------------- 3.2 index_to_position

@exercise("3.2")
def test_index_to_position_contiguous_matches_ravel_multi_index(learner, rng):
    for _ in range(40):
        shape = random_shape(rng, 1, 5, 6)
        strides = element_strides(np.empty(shape))
        index = tuple(rng.randrange(n) for n in shape)
        got = learner.index_to_position(index, strides)
        expected = int(np.ravel_multi_index(index, shape))
        assert got == expected, f"index_to_position({index}, {strides}) gave {got}, expected {expected}"


@exercise("3.2")
def test_index_to_position_reads_numpy_views(learner, rng):
    for _ in range(25):
        base, view = random_view(rng)
        strides, offset = element_strides(view), storage_offset(view, base)
        indices = list(all_indices(view.shape))
        positions = learner.call_each("index_to_position", [(index, strides, offset) for index in indices])
        for index, position in zip(indices, positions):
            assert base[position] == view[index], (
                f"view of shape {view.shape}, strides {strides}, offset {offset}: index {index} gave position "
                f"{position}, which holds {base[position]}, but the view's element is {view[index]}"
            )


@exercise("3.2")
def test_index_to_position_reads_minigrad_tensor_views(learner, rng):
    import minigrad.tensor as mt

    shape = random_shape(rng, 3, 3, 5)
    x = mt.arange(int(np.prod(shape))).view(*shape)
    storage = x.view(-1).tolist()
    views = [x.mT, x[:, ::2], x[rng.randrange(shape[0])], x.permute(2, 0, 1), x[:, :1].expand(-1, 3, -1)]
    for v in views:
        indices = list(all_indices(v.shape))
        positions = learner.call_each("index_to_position", [(index, v.strides, v.storage_offset()) for index in indices])
        for index, position in zip(indices, positions):
            assert storage[position] == v[index].item(), (
                f"tensor view with strides {v.strides}, offset {v.storage_offset()}: index {index} -> {position}"
            )


@exercise("3.2")
def test_index_to_position_edge_cases(learner, rng):
    offset = rng.randint(1, 50)
    assert learner.index_to_position((), ()) == 0, "a 0-d tensor's only element is at position 0 + offset"
    assert learner.index_to_position((), (), offset) == offset, "the offset alone, for a 0-d tensor"
    i = rng.randint(0, 9)
    assert learner.index_to_position((i, 0), (0, 1), offset) == offset, "a stride of 0 (broadcast) never moves"
    assert learner.index_to_position((0, 0, 0), (12, 4, 1), offset) == offset


# ------------------------------------------------------- 3.3 broadcast_shapes

def _broadcastable(rng, count: int):
    """``count`` shapes that broadcast together: each drops leading dims of a target and sets some sizes to 1."""
    target = random_shape(rng, 0, 5, 5)
    shapes = []
    for _ in range(count):
        keep = rng.randint(0, len(target))
        shape = tuple(1 if rng.random() < 0.4 else s for s in target[len(target) - keep:])
        shapes.append(shape)
    return shapes


@exercise("3.3")
def test_broadcast_shapes_matches_numpy(learner, rng):
    for _ in range(80):
        shapes = _broadcastable(rng, rng.randint(1, 4))
        expected = tuple(np.broadcast_shapes(*shapes))
        got = _as_tuple_of_ints(learner.broadcast_shapes(*shapes), f"broadcast_shapes{tuple(shapes)}")
        assert got == expected, f"broadcast_shapes{tuple(shapes)} gave {got}, NumPy gives {expected}"


@exercise("3.3")
def test_broadcast_shapes_rejects_mismatches(learner, rng):
    for _ in range(40):
        shapes = _broadcastable(rng, rng.randint(2, 3))
        ndim = max(len(s) for s in shapes)
        if ndim == 0:
            continue
        # put two different sizes > 1 in the same column of two shapes
        a, b = rng.sample(range(2, 7), 2)
        column = rng.randrange(1, ndim + 1)  # counted from the right
        first, second = rng.sample(range(len(shapes)), 2)
        bad = [list((1,) * (ndim - len(s)) + s) for s in shapes]
        bad[first][-column], bad[second][-column] = a, b
        bad = [tuple(s) for s in bad]
        try:
            np.broadcast_shapes(*bad)
            raise RuntimeError(f"the oracle broadcasts {bad}: the check built a bad case")
        except ValueError:
            pass  # the oracle agrees these do not fit
        must_raise(lambda: learner.broadcast_shapes(*bad), ("ValueError",), f"broadcast_shapes{tuple(bad)}")


@exercise("3.3")
def test_broadcast_shapes_edge_cases(learner, rng):
    n = rng.randint(2, 6)
    cases = [
        [()],
        [(), ()],
        [(), (n,)],
        [(n, 1), ()],
        [(1,), (n,)],
        [(n,), (1, 1, 1)],
        [(0,), (1,)],  # an empty dimension broadcasts with 1 ...
        [(1, 0), (n, 1)],
    ]
    for shapes in cases:
        expected = tuple(np.broadcast_shapes(*shapes))
        got = learner.broadcast_shapes(*shapes)
        assert tuple(got) == expected, f"broadcast_shapes{tuple(shapes)} gave {got}, expected {expected}"
    for shapes in ([(0,), (n,)], [(n, 2), (n, 3)], [(n + 1,), (n,)]):  # ... but not with n > 1
        must_raise(lambda: learner.broadcast_shapes(*shapes), ("ValueError",), f"broadcast_shapes{tuple(shapes)}")


# ------------------------------------------------------- 3.4 permute_strides

@exercise("3.4")
def test_permute_strides_matches_numpy_transpose(learner, rng):
    for _ in range(40):
        base, view = random_view(rng)
        dims = tuple(rng.sample(range(view.ndim), view.ndim))
        shape, strides = view.shape, element_strides(view)
        expected = np.transpose(view, dims)
        result = learner.permute_strides(shape, strides, dims)
        got_shape = _as_tuple_of_ints(result[0], "the shape permute_strides returns")
        got_strides = _as_tuple_of_ints(result[1], "the strides permute_strides returns")
        assert (got_shape, got_strides) == (expected.shape, element_strides(expected)), (
            f"permute_strides({shape}, {strides}, {dims}) gave ({got_shape}, {got_strides}); "
            f"np.transpose gives ({expected.shape}, {element_strides(expected)})"
        )
        for index in all_indices(got_shape):  # the permuted view reads the right elements
            position = storage_offset(view, base) + sum(i * s for i, s in zip(index, got_strides))
            assert base[position] == expected[index]


@exercise("3.4")
def test_permute_strides_negative_dims(learner, rng):
    for _ in range(20):
        shape = random_shape(rng, 1, 5, 5)
        strides = element_strides(np.empty(shape))
        dims = rng.sample(range(len(shape)), len(shape))
        negative = tuple(d - len(shape) if rng.random() < 0.5 else d for d in dims)
        assert tuple(map(tuple, learner.permute_strides(shape, strides, negative))) == (
            tuple(shape[d] for d in dims), tuple(strides[d] for d in dims)
        ), f"permute_strides({shape}, {strides}, {negative}): negative dims count from the end"


@exercise("3.4")
def test_permute_strides_rejects_bad_dims(learner, rng):
    n = rng.randint(3, 4)
    shape = random_shape(rng, n, n, 5)
    strides = element_strides(np.empty(shape))
    bad = [
        tuple(range(n - 1)),  # too few
        tuple(range(n)) + (0,),  # too many
        (0,) * n,  # repeated
        tuple(range(n - 1)) + (n,),  # out of range
        tuple(range(n - 1)) + (-n - 1,),  # out of range, negative
        (1, 1) + tuple(range(2, n)),  # a dimension missing, another twice
    ]
    for dims in bad:
        must_raise(lambda: learner.permute_strides(shape, strides, dims), ("ValueError", "IndexError"),
                   f"permute_strides({shape}, {strides}, {dims})")


@exercise("3.4")
def test_permute_strides_edge_cases(learner, rng):
    import minigrad.tensor as mt

    assert tuple(map(tuple, learner.permute_strides((), (), ()))) == ((), ()), "a 0-d tensor permutes to itself"
    n = rng.randint(2, 7)
    assert tuple(map(tuple, learner.permute_strides((n,), (3,), (0,)))) == ((n,), (3,))
    assert tuple(map(tuple, learner.permute_strides((1, n), (n, 1), (1, 0)))) == ((n, 1), (1, n))
    x = mt.arange(2 * 3 * n).view(2, 3, n)
    for dims in [(2, 0, 1), (1, 2, 0), (0, 2, 1)]:
        expected = x.permute(*dims)
        assert tuple(map(tuple, learner.permute_strides(x.shape, x.strides, dims))) == (
            expected.shape, expected.strides
        ), f"permute_strides agrees with Tensor.permute{dims}"
