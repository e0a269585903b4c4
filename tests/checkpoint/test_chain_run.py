"""run_segments: the same values and gradients as the plain chain for any placement; each checkpointed layer runs
once more in backward; placements that do not tile the chain are clear errors."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.checkpoint.chain_run import check_segments, run_segments
from minigrad.tensor import gradcheck


def _chain(n=5, width=4, dtype=np.float64, seed=0):
    gen = np.random.default_rng(seed)
    weights = [mt.tensor(gen.standard_normal((width, width)).astype(dtype) / 2, requires_grad=True) for _ in range(n)]
    calls = [0] * n

    def layer(i):
        def fn(x):
            calls[i] += 1
            return (x @ weights[i]).tanh()
        return fn

    return [layer(i) for i in range(n)], weights, calls


PLACEMENTS = [
    [(0, 4, False)],
    [(0, 4, True)],
    [(0, 1, True), (2, 4, False)],
    [(0, 0, False), (1, 2, True), (3, 3, False), (4, 4, True)],
]


@pytest.mark.parametrize("segments", PLACEMENTS)
def test_values_and_gradients_match_the_plain_chain(segments):
    functions, weights, calls = _chain()
    x = mt.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    plain = x
    for fn in functions:
        plain = fn(plain)
    plain.sum().backward()
    expected = [w.grad.numpy().copy() for w in weights] + [x.grad.numpy().copy()]
    for t in (*weights, x):
        t.grad = None
    calls[:] = [0] * len(calls)
    y = run_segments(functions, segments, x)
    np.testing.assert_array_equal(y.detach().numpy(), plain.detach().numpy())
    y.sum().backward()
    for got, want in zip([w.grad.numpy() for w in weights] + [x.grad.numpy()], expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    once_more = {i for start, end, ck in segments if ck for i in range(start, end + 1)}
    assert calls == [2 if i in once_more else 1 for i in range(len(functions))]


def test_a_checkpointed_placement_passes_gradcheck():
    functions, weights, _ = _chain(n=4, width=3)
    x = mt.tensor(np.random.default_rng(2).standard_normal((2, 3)), requires_grad=True)
    gradcheck(lambda x, w0, w2: run_segments(functions, [(0, 1, True), (2, 2, False), (3, 3, True)], x),
              [x, weights[0], weights[2]])


def test_keyword_arguments_reach_every_checkpoint():
    functions, _, _ = _chain(n=3)
    entered = []

    class Mark:
        def __enter__(self):
            entered.append(True)

        def __exit__(self, *exc):
            return None

    x = mt.tensor(np.ones((2, 4)), requires_grad=True)
    y = run_segments(functions, [(0, 0, True), (1, 1, False), (2, 2, True)], x, context_fn=lambda: (Mark(), Mark()))
    assert len(entered) == 2  # the two first runs
    y.sum().backward()
    assert len(entered) == 4  # and the two recomputes


@pytest.mark.parametrize("segments, message", [
    ([], r"cover functions 0..-1 of 0..2"),
    ([(0, 1, True)], r"cover functions 0..1 of 0..2; the last segment must end"),
    ([(0, 1, True), (1, 2, False)], r"segment \(1, 2, False\) does not continue the chain.*start at 2"),
    ([(0, 0, True), (2, 2, False)], r"must start at 1"),
    ([(1, 2, True)], r"must start at 0"),
    ([(0, 2)], r"each segment is \(start, end, checkpointed\)"),
    ([(0, -1, True)], r"does not continue the chain"),
])
def test_placements_that_do_not_tile_the_chain_are_clear_errors(segments, message):
    functions, _, _ = _chain(n=3)
    with pytest.raises(ValueError, match=message):
        run_segments(functions, segments, mt.tensor(np.ones((1, 4))))


def test_an_empty_chain_or_a_non_callable_is_a_clear_error():
    with pytest.raises(ValueError, match="run_segments: the chain is empty"):
        run_segments([], [], mt.tensor(np.ones(2)))
    with pytest.raises(TypeError, match=r"functions\[1\] is a int, not a callable"):
        run_segments([abs, 3], [(0, 1, False)], mt.tensor(np.ones(2)))
    with pytest.raises(ValueError, match="CheckpointChain.set_segments: segment"):
        check_segments([abs, abs], [(0, 0, True), (0, 1, False)], "CheckpointChain.set_segments")
