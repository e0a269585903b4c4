"""Graded checks for chapter 03 (exercises 3.1-3.5), on fresh random shapes and views each run.

The learner's functions run in the sandboxed child (``learner.NAME(...)``); the
shapes, views and expected answers are made here. NumPy is the oracle: the element strides of an array are ``arr.strides``
divided by its item size (NumPy counts bytes, we count elements), and
``np.ravel_multi_index``, ``np.broadcast_shapes`` and ``np.transpose`` give
the expected positions, shapes and strides; ``np.reshape(..., copy=False)``
says whether a view without a copy exists. Each exercise is checked on its
own: where the learner's function calls another exercise's function
(``strided_map`` calls ``index_to_position``), the probe stands a short
trusted version in for it, inside the child.
"""

import itertools

import numpy as np

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, must_raise, probe

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


def small_views(allow_negative: bool = True) -> list:
    """(base, view) pairs of at most 2 x 3 elements: contiguous, transposed, stepped, offset, broadcast, reversed."""
    base = np.arange(6.0)
    grid = base.reshape(2, 3)
    views = [base[:1], base[:3], base[::2], grid, grid.T, grid[:, ::2], grid[:, 1:], grid[1],
             np.broadcast_to(base[:3], (2, 3)), base[:2].reshape(2, 1)]
    if allow_negative:
        views += [base[::-1][:3], grid[::-1]]
    return [(base, v) for v in views]


def views(rng, count: int, allow_negative: bool = True) -> list:
    """The small views, then ``count`` random ones, smallest first."""
    drawn = [random_view(rng, allow_negative) for _ in range(count)]
    return smallest_first(small_views(allow_negative) + drawn, lambda case: case[1].size)


def describe_view(case) -> str:
    """``a view of shape (2, 3), strides (1, 2), offset 0 of storage [0 1 2 3 4 5]``, and what it reads."""
    base, view = case
    storage = np.array2string(base.astype(np.int64) if np.all(base == np.round(base)) else base, threshold=24)
    reads = np.array2string(np.asarray(view).astype(base.dtype), threshold=24).replace("\n", "")
    return (f"a view of shape {view.shape}, strides {element_strides(view)}, offset {storage_offset(view, base)} "
            f"of storage {storage}, which reads {reads}")


def all_indices(shape):
    return itertools.product(*(range(n) for n in shape))


def _as_tuple_of_ints(value, what: str) -> tuple[int, ...]:
    assert isinstance(value, tuple), (
        f"{what} must be a tuple (as x.shape and x.strides are), got {type(value).__name__} {value!r}"
    )
    assert all(isinstance(v, (int, np.integer)) for v in value), f"{what} must hold ints, got {value!r}"
    return tuple(int(v) for v in value)


# ------------------------------------------------------- 3.1 strides_for_shape and index_to_position

SMALL_SHAPES = [(1,), (3,), (2, 3), (3, 2), (2, 1, 3), (1, 2, 3)]


def shapes(rng, count: int, *args) -> list:
    """The small shapes, then ``count`` random ones (``random_shape(rng, *args)``), fewest elements first."""
    drawn = [random_shape(rng, *args) for _ in range(count)]
    return smallest_first(SMALL_SHAPES + drawn, lambda shape: (int(np.prod(shape)), len(shape)))


@exercise("3.1")
def test_strides_for_shape_matches_numpy(learner, rng):
    for shape in shapes(rng, 60, 1, 6, 7):
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


@exercise("3.1")
def test_index_to_position_contiguous_matches_ravel_multi_index(learner, rng):
    for shape in shapes(rng, 40, 1, 5, 6):
        strides = element_strides(np.empty(shape))
        index = tuple(rng.randrange(n) for n in shape)
        got = learner.index_to_position(index, strides)
        expected = int(np.ravel_multi_index(index, shape))
        assert got == expected, f"index_to_position({index}, {strides}) gave {got}, expected {expected}"


@exercise("3.1")
def test_index_to_position_reads_numpy_views(learner, rng):
    first_failure(views(rng, 25), lambda case: _reads_view(learner, *case), describe_view)


def _reads_view(learner, base, view):
    strides, offset = element_strides(view), storage_offset(view, base)
    indices = list(all_indices(view.shape))
    positions = learner.call_each("index_to_position", [(index, strides, offset) for index in indices])
    for index, position in zip(indices, positions):
        assert base[position] == view[index], (
            f"view of shape {view.shape}, strides {strides}, offset {offset}: index {index} gave position "
            f"{position}, which holds {base[position]}, but the view's element is {view[index]}"
        )


@exercise("3.1")
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


@exercise("3.1")
def test_index_to_position_edge_cases(learner, rng):
    offset = rng.randint(1, 50)
    assert learner.index_to_position((), ()) == 0, "a 0-d tensor's only element is at position 0 + offset"
    assert learner.index_to_position((), (), offset) == offset, "the offset alone, for a 0-d tensor"
    i = rng.randint(0, 9)
    assert learner.index_to_position((i, 0), (0, 1), offset) == offset, "a stride of 0 (broadcast) never moves"
    assert learner.index_to_position((0, 0, 0), (12, 4, 1), offset) == offset


# ------------------------------------------------------- 3.2 broadcast_shapes

def _broadcastable(rng, count: int):
    """``count`` shapes that broadcast together: each drops leading dims of a target and sets some sizes to 1."""
    target = random_shape(rng, 0, 5, 5)
    shapes = []
    for _ in range(count):
        keep = rng.randint(0, len(target))
        shape = tuple(1 if rng.random() < 0.4 else s for s in target[len(target) - keep:])
        shapes.append(shape)
    return shapes


def _largest(shapes) -> tuple:
    return max((int(np.prod(s)) for s in shapes), default=1), sum(map(len, shapes))


@exercise("3.2")
def test_broadcast_shapes_matches_numpy(learner, rng):
    cases = [[(3,), (2, 1)], [(2, 3), (3,)], [(1, 3), (2, 1)], [(2, 1), (1,)]]
    for shapes in smallest_first(cases + [_broadcastable(rng, rng.randint(1, 4)) for _ in range(80)], _largest):
        expected = tuple(np.broadcast_shapes(*shapes))
        got = _as_tuple_of_ints(learner.broadcast_shapes(*shapes), f"broadcast_shapes{tuple(shapes)}")
        assert got == expected, f"broadcast_shapes{tuple(shapes)} gave {got}, NumPy gives {expected}"


@exercise("3.2")
def test_broadcast_shapes_rejects_mismatches(learner, rng):
    for shapes in smallest_first([_broadcastable(rng, rng.randint(2, 3)) for _ in range(40)], _largest):
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


@exercise("3.2")
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


# ------------------------------------------------------- 3.3 permute_strides and expand_strides

@exercise("3.3")
def test_permute_strides_matches_numpy_transpose(learner, rng):
    cases = [(base, view, tuple(rng.sample(range(view.ndim), view.ndim))) for base, view in views(rng, 40)]
    first_failure(cases, lambda case: _permutes(learner, *case), lambda case: f"{describe_view(case[:2])}, dims {case[2]}")


def _permutes(learner, base, view, dims):
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


@exercise("3.3")
def test_permute_strides_negative_dims(learner, rng):
    for _ in range(20):
        shape = random_shape(rng, 1, 5, 5)
        strides = element_strides(np.empty(shape))
        dims = rng.sample(range(len(shape)), len(shape))
        negative = tuple(d - len(shape) if rng.random() < 0.5 else d for d in dims)
        assert tuple(map(tuple, learner.permute_strides(shape, strides, negative))) == (
            tuple(shape[d] for d in dims), tuple(strides[d] for d in dims)
        ), f"permute_strides({shape}, {strides}, {negative}): negative dims count from the end"


@exercise("3.3")
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


@exercise("3.3")
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


def _grown(rng, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape ``shape`` broadcasts to: maybe new leading dimensions, some sizes of 1 grown."""
    lead = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2)))
    return lead + tuple(rng.randint(2, 4) if n == 1 and rng.random() < 0.6 else n for n in shape)


@exercise("3.3")
def test_expand_strides_read_what_numpy_broadcast_to_reads(learner, rng):
    small = [(base, view[tuple(slice(0, 1) if i == 0 else slice(None) for i in range(view.ndim))]) for base, view in small_views()]
    drawn = [random_view(rng) for _ in range(30)]
    drawn = [(b, v[tuple(slice(0, 1) if rng.random() < 0.4 else slice(None) for _ in v.shape)]) for b, v in drawn]
    cases = smallest_first([(b, v, _grown(rng, v.shape)) for b, v in small + drawn], lambda case: np.prod(case[2]))
    first_failure(cases, lambda case: _expands(learner, *case),
                  lambda case: f"{describe_view(case[:2])}, expanded to shape {case[2]}")


def _expands(learner, base, view, new_shape):
    shape, strides, offset = view.shape, element_strides(view), storage_offset(view, base)
    expected = np.broadcast_to(view, new_shape)
    got = _as_tuple_of_ints(learner.expand_strides(shape, strides, new_shape),
                            f"expand_strides({shape}, {strides}, {new_shape})")
    assert len(got) == len(new_shape), (
        f"expand_strides({shape}, {strides}, {new_shape}) gave {len(got)} strides for {len(new_shape)} dimensions"
    )
    for index in all_indices(new_shape):
        position = offset + sum(i * s for i, s in zip(index, got))
        assert 0 <= position < base.size and base[position] == expected[index], (
            f"expand_strides({shape}, {strides}, {new_shape}) gave {got}: at index {index} they read "
            f"storage position {position}, but the expanded view's element there is the one at position "
            f"{int(np.flatnonzero(base == expected[index])[0])} (storage offset {offset})"
        )


@exercise("3.3")
def test_expand_strides_rejects_sizes_that_cannot_grow(learner, rng):
    a, b = rng.sample(range(2, 7), 2)
    bad = [
        ((a,), (1,), (b,)),  # a size other than 1 cannot change
        ((a, 1), (1, 1), (b, 3)),
        ((a, b), (b, 1), (b,)),  # fewer dimensions
    ]
    for shape, strides, new_shape in bad:
        must_raise(lambda: learner.expand_strides(shape, strides, new_shape), ("ValueError",),
                   f"expand_strides({shape}, {strides}, {new_shape})")


@exercise("3.3")
def test_expand_strides_edge_cases(learner, rng):
    n = rng.randint(2, 6)
    cases = [
        (((), (), (n, 3)), (0, 0)),  # a 0-d tensor read everywhere
        (((1,), (7,), (n,)), (0,)),  # a grown size-1 dimension never moves, whatever its stride was
        (((n,), (3,), (2, n)), (0, 3)),  # a new leading dimension never moves; the old stride stays
        (((n, 1), (1, 1), (n, 1)), (1, 1)),  # nothing grows: the strides are unchanged
    ]
    for args, expected in cases:
        got = _as_tuple_of_ints(learner.expand_strides(*args), f"expand_strides{args}")
        assert got == expected, f"expand_strides{args} gave {got}, expected {expected}"


# ------------------------------------------------------- 3.4 view_strides

def _trusted_strides_for_shape(shape):
    return tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))


def _trusted_index_to_position(index, strides, offset=0):
    return offset + sum(i * s for i, s in zip(index, strides))


def _trusted_broadcast_shapes(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


TRUSTED = {
    "strides_for_shape": _trusted_strides_for_shape,
    "index_to_position": _trusted_index_to_position,
    "broadcast_shapes": _trusted_broadcast_shapes,
}


def _with_trusted(submission, run):
    """(child side) ``run()`` while the other exercises' functions in the learner's module are the trusted ones."""
    saved = {name: vars(submission).get(name) for name in TRUSTED}
    for name, trusted in TRUSTED.items():
        setattr(submission, name, trusted)
    try:
        return run()
    finally:
        for name, original in saved.items():
            setattr(submission, name, original)


@probe
def view_strides_each(submission, state, cases):
    """The learner's ``view_strides`` on each (shape, strides, new_shape); the other exercises trusted."""
    return _with_trusted(submission, lambda: [submission.view_strides(*case) for case in cases])


def _factorization(rng, n: int) -> tuple[int, ...]:
    """A random shape with ``n`` elements, maybe with sizes of 1 inserted."""
    shape = []
    while n > 1:
        d = rng.choice([d for d in range(2, n + 1) if n % d == 0])
        shape.append(d)
        n //= d
    for _ in range(rng.randint(0, 2)):
        shape.insert(rng.randint(0, len(shape)), 1)
    return tuple(shape)


def _numpy_view(view: np.ndarray, new_shape):
    """NumPy's reshape of ``view`` without a copy, or None when it needs one."""
    try:
        return np.reshape(view, new_shape, copy=False)
    except ValueError:
        return None


def _check_view_strides(base, view, new_shape, got) -> None:
    shape, strides, offset = view.shape, element_strides(view), storage_offset(view, base)
    call = f"view_strides({shape}, {strides}, {new_shape})"
    expected = _numpy_view(view, new_shape)
    if expected is None:
        assert got is None, (
            f"{call} gave {got!r}, but no strides can read this layout as {new_shape} without a copy "
            f"(a view of it with those strides would read the elements in another order); return None"
        )
        return
    assert got is not None, f"{call} returned None, but this layout can be read as {new_shape} without a copy"
    got = _as_tuple_of_ints(got, call)
    assert len(got) == len(new_shape), f"{call} gave {len(got)} strides for {len(new_shape)} dimensions"
    for index in all_indices(new_shape):
        position = offset + sum(i * s for i, s in zip(index, got))
        assert 0 <= position < base.size and base[position] == expected[index], (
            f"{call} gave {got}: at index {index} they read storage position {position} (storage offset "
            f"{offset}), which is not the element the reshaped view holds there"
        )


@exercise("3.4")
def test_view_strides_agree_with_numpy_on_random_views(learner, rng):
    cases = []
    for base, view in views(rng, 40):
        shapes = [_factorization(rng, view.size), (view.size,), view.shape + (1,)]
        if view.ndim >= 2:  # merge two neighbouring dimensions, or split the last one
            d = rng.randrange(view.ndim - 1)
            shapes.append(view.shape[:d] + (view.shape[d] * view.shape[d + 1],) + view.shape[d + 2:])
        cases.extend((base, view, tuple(s)) for s in shapes)
    answers = learner.probe("view_strides_each", [(v.shape, element_strides(v), s) for _, v, s in cases])
    first_failure(list(zip(cases, answers)), lambda pair: _check_view_strides(*pair[0], pair[1]),
                  lambda pair: f"{describe_view(pair[0][:2])}, viewed as shape {pair[0][2]}")


@exercise("3.4")
def test_view_strides_edge_cases(learner, rng):
    n = rng.randint(2, 5)
    base = np.arange(4.0 * n)
    row = base[:n]
    cases = [
        (base, base.reshape(4, n), (4 * n,)),  # contiguous: always a view
        (base, base.reshape(4, n).T, (4 * n,)),  # transposed: a copy is needed
        (base, base.reshape(4, n).T, (n, 2, 2)),  # splitting a transposed dimension is free
        (base, np.broadcast_to(row, (3, n)), (3 * n,)),  # a broadcast row cannot be flattened
        (base, np.broadcast_to(row, (3, n)), (3, n, 1)),
        (base, base.reshape(4, n)[:, :1], (4,)),  # a column: size-1 dimensions never move
        (base, base[::2].reshape(2 * n, 1), (2, n)),  # a stepped slice keeps its step
        (base, base[:1].reshape(()), (1, 1)),  # a 0-d tensor grows size-1 dimensions
    ]
    answers = learner.probe("view_strides_each", [(v.shape, element_strides(v), s) for _, v, s in cases])
    for (b, view, new_shape), got in zip(cases, answers):
        _check_view_strides(b, view, new_shape, got)
    mismatch = learner.probe("view_strides_each", [((n, 3), (3, 1), (n, 4)), ((2, n), (n, 1), (2 * n + 1,))])
    assert mismatch == [None, None], (
        f"view_strides gave {mismatch} for a new shape with a different number of elements; return None"
    )


# ------------------------------------------------------- 3.5 strided_map

MAPS = {
    "identity": lambda v: v,
    "affine": lambda v: 3 * v - 1,
    "square": lambda v: v * v,
}


@probe
def run_strided_map(submission, state, fn_name, source, source_layout, out, out_layout):
    """The learner's ``strided_map`` (the other exercises trusted): the ``out`` storage after it and how often fn ran."""
    calls = [0]
    fn = MAPS[fn_name]

    def counted(value):
        calls[0] += 1
        return fn(value)

    out = list(out)
    _with_trusted(submission, lambda: submission.strided_map(
        counted, list(source), submission.Layout(*source_layout), out, submission.Layout(*out_layout)))
    return {"out": out, "calls": calls[0]}


def _out_layout(rng, shape):
    """A layout of ``shape`` in a larger storage: a permuted row-major block at an offset."""
    order = rng.sample(range(len(shape)), len(shape))
    block = element_strides(np.empty(tuple(shape[d] for d in order)))
    strides = [0] * len(shape)
    for i, d in enumerate(order):
        strides[d] = block[i]
    offset = rng.randint(0, 4)
    return (tuple(shape), tuple(strides), offset), offset + int(np.prod(shape, dtype=np.int64)) + rng.randint(0, 3)


def _check_strided_map(learner, rng, base, view, out_shape, fn_name) -> None:
    source_layout = (view.shape, element_strides(view), storage_offset(view, base))
    out_layout, size = _out_layout(rng, out_shape)
    sentinel = -1000.5
    answer = learner.probe("run_strided_map", fn_name, base.tolist(), source_layout, [sentinel] * size, out_layout)
    got, calls = answer["out"], answer["calls"]
    call = f"strided_map(fn, source, Layout{source_layout}, out, Layout{out_layout})"
    assert isinstance(got, list) and len(got) == size, f"{call}: out must stay a storage of {size} elements"
    expected = MAPS[fn_name](np.broadcast_to(view, out_shape).astype(np.float64))
    written = set()
    for index in all_indices(out_shape):
        _, strides, offset = out_layout
        position = offset + sum(i * s for i, s in zip(index, strides))
        written.add(position)
        assert got[position] == expected[index], (
            f"{call}: out[{position}] (output index {index}) is {got[position]}, expected {expected[index]}; "
            f"the source element for that index is {np.broadcast_to(view, out_shape)[index]}"
        )
    for position, value in enumerate(got):
        assert position in written or value == sentinel, (
            f"{call}: out[{position}] changed, but no output index lives there under the out layout"
        )
    n = len(written)
    assert calls == n, f"{call}: fn ran {calls} times for {n} output elements; it runs once per output element"


@exercise("3.5")
def test_strided_map_copies_views_into_any_layout(learner, rng):
    cases = []
    for base, view in views(rng, 12):
        base, view = _shifted(base, view, rng.randint(1, 9))  # values that are not their positions
        cases.append((base, view, view.shape, rng.choice(sorted(MAPS))))
    first_failure(cases, lambda case: _check_strided_map(learner, rng, *case), _describe_map)


def _shifted(base, view, by):
    """(base + by, the same view of it)."""
    shifted = base + by
    return shifted, np.lib.stride_tricks.as_strided(
        shifted[storage_offset(view, base):], view.shape, view.strides) if view.size else shifted[:0].reshape(view.shape)


def _describe_map(case) -> str:
    base, view, out_shape, fn_name = case
    return f"{describe_view((base, view))}, written to shape {out_shape} with fn {fn_name}"


@exercise("3.5")
def test_strided_map_broadcasts_the_source(learner, rng):
    cases = []
    for base, view in views(rng, 12, allow_negative=False):
        base, view = _shifted(base, view, rng.randint(1, 9))
        view = view[tuple(slice(0, 1) if rng.random() < 0.4 else slice(None) for _ in view.shape)]
        cases.append((base, view, _grown(rng, view.shape), rng.choice(sorted(MAPS))))
    cases = smallest_first(cases, lambda case: np.prod(case[2]))
    first_failure(cases, lambda case: _check_strided_map(learner, rng, *case), _describe_map)


@exercise("3.5")
def test_strided_map_edge_cases(learner, rng):
    value = float(rng.randint(2, 9))
    base = np.array([0.0, value, 0.0])
    zero_d = base[1:2].reshape(())
    _check_strided_map(learner, rng, base, zero_d, (), "affine")  # one element, both at offsets
    _check_strided_map(learner, rng, base, zero_d, (2, rng.randint(2, 4)), "square")  # a 0-d source everywhere
    n = rng.randint(2, 5)
    column = np.arange(1.0, n + 1)
    _check_strided_map(learner, rng, column, column.reshape(n, 1), (n, 3), "identity")
    _check_strided_map(learner, rng, column, column[:0], (0,), "identity")  # no elements: nothing written
