"""Tensor data: factories, dtypes and promotion, printing, conversion, and forward values against NumPy."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad.tensor as mt
from minigrad.tensor.ops.elementwise import erf

# ----------------------------------------------------------------------------- factories


def test_tensor_infers_pytorch_dtypes_and_copies():
    assert mt.tensor([1.0, 2.0]).dtype == mt.float32
    assert mt.tensor([1, 2]).dtype == mt.int64
    assert mt.tensor([True]).dtype == mt.bool_
    assert mt.tensor(np.zeros(2)).dtype == mt.float64  # NumPy arrays keep their dtype
    assert mt.tensor(np.zeros(2, np.uint8)).dtype == mt.int64  # mapped to a supported one
    assert mt.tensor(np.zeros(2, ">f4")).dtype == mt.float32
    assert mt.tensor([1, 2], dtype=mt.float16).dtype == mt.float16
    assert mt.tensor([1, 2], dtype="float64").dtype == mt.float64
    a = np.zeros(3, np.float32)
    t = mt.tensor(a)
    a[0] = 1
    assert t[0].item() == 0  # tensor() copies
    f = mt.from_numpy(a)
    a[1] = 2
    assert f[1].item() == 2 and mt.from_numpy(a.T).shape == (3,)  # from_numpy shares
    assert mt.tensor([mt.tensor(1.0), mt.tensor(2.0)]).tolist() == [1.0, 2.0]


def test_factories():
    assert mt.zeros(2, 3).shape == (2, 3) and mt.zeros((2, 3)).dtype == mt.float32
    assert mt.ones(4, dtype=mt.int64).tolist() == [1, 1, 1, 1]
    assert mt.full((2,), 7).dtype == mt.int64 and mt.full((2,), 0.5).dtype == mt.float32
    assert mt.full((1,), True).dtype == mt.bool_
    assert mt.arange(5).tolist() == [0, 1, 2, 3, 4] and mt.arange(5).dtype == mt.int64
    assert mt.arange(0, 1, 0.25).dtype == mt.float32 and mt.arange(0, 1, 0.25).numel() == 4
    np.testing.assert_allclose(mt.linspace(0, 1, 5).cpu().numpy(), [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_array_equal(mt.eye(2).cpu().numpy(), np.eye(2))
    x = mt.randn(3, 2, dtype=mt.float64)
    for like in (mt.zeros_like, mt.ones_like, mt.empty_like, mt.randn_like, mt.rand_like):
        y = like(x)
        assert y.shape == (3, 2) and y.dtype == mt.float64
    assert mt.full_like(x, 3.0).cpu().numpy().tolist() == [[3.0, 3.0]] * 3
    assert mt.zeros(2, requires_grad=True).requires_grad
    assert sorted(mt.randperm(5).tolist()) == [0, 1, 2, 3, 4]
    r = mt.randint(3, 7, (100,))
    assert r.dtype == mt.int64 and 3 <= r.min().item() and r.max().item() < 7
    assert mt.rand(1000).min().item() >= 0 and mt.rand(1000).max().item() < 1
    assert mt.randn(2, dtype=mt.float16).dtype == mt.float16
    with pytest.raises(mt.DTypeError, match="floating point"):
        mt.randn(2, dtype=mt.int64)


def test_seeding_and_generators():
    mt.manual_seed(0)
    a = mt.randn(5)
    mt.manual_seed(0)
    b = mt.randn(5)
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    np.testing.assert_array_equal(mt.rand(4, generator=g1).cpu().numpy(), mt.rand(4, generator=g2).cpu().numpy())
    state = mt.get_rng_state()
    c = mt.randn(3)
    mt.set_rng_state(state)
    np.testing.assert_array_equal(mt.randn(3).cpu().numpy(), c.cpu().numpy())
    with mt.fork_rng():
        mt.randn(10)
    np.testing.assert_raises(AssertionError, np.testing.assert_array_equal, mt.randn(3).cpu().numpy(), c.cpu().numpy())
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        mt.randn(2, generator=42)


# ----------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (mt.float32, mt.float64, mt.float64),
        (mt.float16, mt.float32, mt.float32),
        (mt.int64, mt.float16, mt.float16),
        (mt.bool_, mt.int64, mt.int64),
        (mt.bool_, mt.float32, mt.float32),
        (mt.int64, mt.int64, mt.int64),
    ],
)
def test_promotion_follows_pytorch(a, b, expected):
    assert mt.promote_types(a, b) == expected
    assert (mt.ones(2, dtype=a) + mt.ones(2, dtype=b)).dtype == expected


def test_python_numbers_do_not_widen_tensors():
    assert (mt.ones(2, dtype=mt.float16) * 2.5).dtype == mt.float16
    assert (mt.ones(2, dtype=mt.int64) * 2.5).dtype == mt.float32
    assert (mt.ones(2, dtype=mt.int64) + 1).dtype == mt.int64
    assert (mt.ones(2, dtype=mt.int64) / 2).dtype == mt.float32
    assert (mt.ones(2, dtype=mt.float32) * np.float64(2.0)).dtype == mt.float32
    assert (mt.arange(3) > 1).dtype == mt.bool_
    assert mt.arange(3).float().dtype == mt.float32 and mt.arange(3).double().dtype == mt.float64
    assert mt.ones(2).half().dtype == mt.float16 and mt.ones(2).long().dtype == mt.int64
    assert mt.ones(2).to(mt.float64).dtype == mt.float64 and mt.ones(2).bool().dtype == mt.bool_
    assert mt.arange(3).exp().dtype == mt.float32  # float functions of integers give float32
    assert mt.tensor([True, True]).sum().item() == 2


# ----------------------------------------------------------------------------- printing


@pytest.mark.parametrize(
    "make, text",
    [
        (lambda: mt.tensor([1.0, 2.5]), "tensor([1.0000, 2.5000])"),
        (lambda: mt.tensor([1.0, 2.0]), "tensor([1., 2.])"),
        (lambda: mt.tensor(3.0), "tensor(3.)"),
        (lambda: mt.tensor([[1, 2], [3, 4]]), "tensor([[1, 2],\n        [3, 4]])"),
        (lambda: mt.tensor([True, False]), "tensor([ True, False])"),
        (lambda: mt.tensor([1.0, -2.0], requires_grad=True), "tensor([ 1., -2.], requires_grad=True)"),
        (lambda: mt.tensor([1.0, 2.0], requires_grad=True) * 2, "tensor([2., 4.], grad_fn=<MulBackward>)"),
        (lambda: mt.tensor([0.5], dtype=mt.float64), "tensor([0.5000], dtype=float64)"),
        (lambda: mt.tensor([1e-5, 1e5]), "tensor([1.0000e-05, 1.0000e+05])"),
        (lambda: mt.tensor([float("nan"), 1.5]), "tensor([   nan, 1.5000])"),
        (lambda: mt.zeros(0), "tensor([])"),
        (lambda: mt.zeros(0, 3), "tensor([], size=(0, 3))"),
    ],
)
def test_repr_looks_like_pytorch(make, text, device):
    if device is not mt.cpu:  # PyTorch names a non-CPU device before requires_grad / grad_fn
        marks = [text.rindex(m) for m in (", requires_grad=True", ", grad_fn=") if m in text]
        at = marks[0] if marks else len(text) - 1
        text = text[:at] + f", device='{device}'" + text[at:]
    assert repr(make()) == text


def test_repr_summarises_large_tensors():
    text = repr(mt.arange(2000.0))
    assert text.startswith("tensor([0.0000e+00, 1.0000e+00,") and "..." in text and "1.9990e+03]" in text
    assert repr(mt.zeros(50, 40)).count("\n") == 6


# ----------------------------------------------------------------------------- data access


def test_data_access():
    x = mt.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.tolist() == [[1, 2], [3, 4]] and x[1, 0].item() == 3.0 and float(x[0, 1]) == 2.0
    assert len(x) == 2 and [r.tolist() for r in x] == [[1, 2], [3, 4]]
    assert x.numel() == 4 and x.dim() == 2 and x.size() == (2, 2) and x.size(-1) == 2
    assert x.element_size() == 4 and x.nbytes == 16 and x.stride() == (2, 1) and x.stride(0) == 2
    assert x.is_floating_point() and (x.device is not mt.cpu or x.numpy() is x.numpy())
    assert x[1].storage_offset() == 2 and x.T.storage_offset() == 0
    assert int(mt.tensor(7)) == 7 and [10, 20, 30][mt.tensor(1)] == 20


def test_shares_memory():
    x = mt.zeros(4, 4)
    assert mt.shares_memory(x, x[1:, ::2]) and not mt.shares_memory(x[0], x[1])
    assert not mt.shares_memory(x, x.clone())


def test_every_way_of_making_a_tensor_sets_every_field():
    """Tensor(), make_tensor, op outputs, views and unpickling all initialise every slot (through init_tensor)."""
    import pickle

    fields = [name for name in mt.Tensor.__slots__ if name != "__weakref__"]
    leaf = mt.Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    plain = mt.ones(2, 2)  # factories wrap their array with make_tensor
    loss = (leaf * plain).sum()
    loss.backward()
    view = leaf.T[0]  # a view of a view: its base is the leaf
    made = {
        "Tensor()": leaf, "ones()": plain, "op output": loss, "view": view, "no-grad op": plain + plain,
        "detach": leaf.detach(), "grad": leaf.grad, "unpickled": pickle.loads(pickle.dumps(leaf)),
    }
    for how, t in made.items():
        missing = [name for name in fields if not hasattr(t, name)]
        assert not missing, f"{how}: fields never set: {missing}"
    assert view._base is leaf and view._version_counter is leaf._version_counter
    assert loss._base is None and loss.grad_fn is not None and loss._accum is None
    assert made["unpickled"].requires_grad and made["unpickled"]._version_counter is not leaf._version_counter


# ----------------------------------------------------------------------------- forward values against NumPy

arrays = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple).flatmap(
    lambda s: st.builds(lambda seed: np.random.default_rng(seed).standard_normal(s).astype(np.float32), st.integers(0, 10_000))
)


@given(arrays, st.data())
def test_reductions_match_numpy(a, data):
    x = mt.tensor(a)
    dim = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    keep = data.draw(st.booleans())
    for ours, theirs in [
        (x.sum(dim, keep), a.sum(dim, keepdims=keep)),
        (x.mean(dim, keep), a.mean(dim, keepdims=keep)),
        (x.amax(dim, keep), a.max(dim, keepdims=keep)),
        (x.amin(dim, keep), a.min(dim, keepdims=keep)),
        (x.var(dim, keep, correction=0), a.var(dim, keepdims=keep)),
        (x.std(dim, keep, correction=0), a.std(dim, keepdims=keep)),
        (x.logsumexp(dim if dim is not None else tuple(range(a.ndim)), keep),
         np.log(np.exp(a.astype(np.float64)).sum(dim, keepdims=keep))),
    ]:
        assert ours.shape == np.shape(theirs)
        np.testing.assert_allclose(ours.cpu().numpy(), theirs, rtol=1e-4, atol=1e-5)
    if dim is not None:
        assert (x.argmax(dim, keep).cpu().numpy() == a.argmax(dim, keepdims=keep)).all()
        values, indices = x.max(dim, keep)
        np.testing.assert_array_equal(values.cpu().numpy(), a.max(dim, keepdims=keep))
        np.testing.assert_array_equal(indices.cpu().numpy(), a.argmax(dim, keepdims=keep))
    assert x.argmin().item() == a.argmin()


@given(arrays, st.data())
def test_indexing_matches_numpy(a, data):
    x = mt.tensor(a)
    key = []
    for n in a.shape[: data.draw(st.integers(1, a.ndim))]:
        choice = data.draw(st.sampled_from(["int", "slice", "array", "none"]))
        if choice == "int":
            key.append(data.draw(st.integers(-n, n - 1)))
        elif choice == "slice":
            key.append(slice(data.draw(st.integers(0, n)), None, data.draw(st.integers(1, 3))))
        elif choice == "array":
            key.append(np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))))
        else:
            key.append(None)
            key.append(slice(None))
    key = tuple(key)
    arrays_in_key = sum(isinstance(k, np.ndarray) for k in key)
    if arrays_in_key > 1 and len({k.size for k in key if isinstance(k, np.ndarray)}) > 1:
        return  # NumPy would refuse to broadcast these index arrays
    np.testing.assert_array_equal(x[key].cpu().numpy(), a[key])
    mask = a > 0
    np.testing.assert_array_equal(x[mt.tensor(mask)].cpu().numpy(), a[mask])


def test_split_chunk_cat_stack_values():
    a = np.arange(10.0, dtype=np.float32)
    x = mt.tensor(a)
    assert [p.tolist() for p in x.split(4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.numel() for p in x.chunk(3)] == [4, 4, 2]
    assert all(mt.shares_memory(p, x) for p in x.split(3))
    np.testing.assert_array_equal(mt.cat(x.split([3, 7])).cpu().numpy(), a)
    np.testing.assert_array_equal(mt.stack([x, x], dim=1).cpu().numpy(), np.stack([a, a], 1))
    assert mt.cat([mt.ones(2), mt.ones(1, dtype=mt.float64)]).dtype == mt.float64


def test_nn_helpers_values():
    z = np.array([[1000.0, 1000.0, -1000.0], [0.0, 1.0, 2.0]], np.float32)
    x = mt.tensor(z)
    sm = x.softmax(-1).cpu().numpy()
    np.testing.assert_allclose(sm.sum(-1), [1, 1], rtol=1e-6)
    assert np.isfinite(x.log_softmax(1).cpu().numpy()).all()  # no overflow, no log(0)
    np.testing.assert_allclose(mt.logsumexp(x, 1).cpu().numpy(), [1000 + math.log(2), np.log(np.exp([0, 1, 2]).sum())], rtol=1e-6)
    assert mt.logsumexp(mt.tensor([-float("inf")] * 2), 0).item() == -float("inf")
    assert mt.one_hot(mt.tensor([2, 0]), 3).tolist() == [[0, 0, 1], [1, 0, 0]]
    assert mt.one_hot(mt.tensor([1, 3])).shape == (2, 4) and mt.one_hot(mt.tensor([1])).dtype == mt.int64
    padded = mt.pad(mt.ones(1, 2), (1, 0, 0, 1), value=-1.0)
    assert padded.tolist() == [[-1, 1, 1], [-1, -1, -1]]


def test_activation_values():
    v = np.linspace(-4, 4, 17).astype(np.float64)
    x = mt.tensor(v)
    np.testing.assert_allclose(x.sigmoid().cpu().numpy(), 1 / (1 + np.exp(-v)), rtol=1e-12)
    np.testing.assert_allclose(x.relu().cpu().numpy(), np.maximum(v, 0))
    np.testing.assert_allclose(mt.leaky_relu(x, 0.2).cpu().numpy(), np.where(v > 0, v, 0.2 * v))
    exact = np.array([0.5 * t * (1 + math.erf(t / math.sqrt(2))) for t in v])
    np.testing.assert_allclose(x.gelu().cpu().numpy(), exact, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(x.float().gelu().cpu().numpy(), exact, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.clamp(-1, 2).cpu().numpy(), np.clip(v, -1, 2))
    np.testing.assert_allclose(mt.maximum(x, 0.5).cpu().numpy(), np.maximum(v, 0.5))
    np.testing.assert_allclose(mt.where(x > 0, x, -x).cpu().numpy(), np.abs(v))


def test_erf_is_accurate():
    v = np.concatenate([np.linspace(-6, 6, 241), [0.0, 1e-8, -1e-8, 30.0]])
    expected = np.array([math.erf(t) for t in v])
    np.testing.assert_allclose(erf(v), expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(erf(v.astype(np.float32)), expected, rtol=2e-6, atol=2e-7)


def test_pickle_and_deepcopy_keep_data_requires_grad_and_grad():
    import copy
    import pickle

    w = mt.randn(3, requires_grad=True)
    (w * w).sum().backward()
    for clone in (pickle.loads(pickle.dumps(w)), copy.deepcopy(w)):
        assert clone.requires_grad and clone.is_leaf and not mt.shares_memory(clone, w)
        np.testing.assert_array_equal(clone.detach().cpu().numpy(), w.detach().cpu().numpy())
        np.testing.assert_array_equal(clone.grad.cpu().numpy(), w.grad.cpu().numpy())
    assert 2.0 in mt.tensor([1.0, 2.0]) and 5 not in mt.arange(3)


@pytest.mark.parametrize("call, error, message", [
    (lambda: mt.arange(0, 1, 0), ValueError, "arange: step must not be 0"),
    (lambda: mt.arange(0, float("inf")), ValueError, "arange: end must be finite"),
    (lambda: mt.arange("3"), TypeError, "arange: end must be a number, got str"),
    (lambda: mt.eye(2.5), TypeError, "eye: sizes must be ints, got float 2.5"),
    (lambda: mt.eye(2, -1), ValueError, "eye: sizes must be >= 0"),
    (lambda: mt.device("cpu:-1"), mt.DeviceError, "must be a whole number >= 0"),
])
def test_factories_and_devices_refuse_bad_arguments_with_their_own_message(call, error, message):
    with pytest.raises(error, match=message):
        call()
