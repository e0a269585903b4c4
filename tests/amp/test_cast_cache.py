"""The weight-cast cache for autocast: each weight cast once per region, invalidated by in-place edits."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.amp import active_cache, cached_cast, casting_policy, weight_cast_cache

BF16 = mt.bfloat16


def weight(seed=0):
    return mt.tensor(np.random.default_rng(seed).standard_normal((4, 3)), dtype=mt.float32, requires_grad=True)


def test_a_weight_is_cast_once_per_region():
    w = weight()
    with weight_cast_cache() as cache:
        first = cached_cast(w, BF16)
        assert cached_cast(w, BF16) is first
        assert cached_cast(w, "bfloat16") is first
        assert cached_cast(w, mt.float16) is not first  # another target dtype, another entry
        assert (cache.misses, cache.hits, len(cache)) == (2, 2, 2)
    assert first.dtype is BF16 and first.grad_fn is not None


def test_the_cache_is_emptied_when_the_region_ends_and_not_used_outside():
    w = weight()
    with weight_cast_cache() as cache:
        inside = cached_cast(w, BF16)
    assert len(cache) == 0 and active_cache() is None
    assert cached_cast(w, BF16) is not inside
    assert cached_cast(w, BF16) is not cached_cast(w, BF16)  # no region: a new cast each time
    with weight_cast_cache():
        assert cached_cast(w, BF16) is not inside


def test_nested_regions_share_the_outer_cache():
    w = weight()
    with weight_cast_cache() as outer:
        a = cached_cast(w, BF16)
        with weight_cast_cache() as inner:
            assert inner is outer and cached_cast(w, BF16) is a
        assert len(outer) == 1  # the inner exit does not clear it
        assert cached_cast(w, BF16) is a


def test_an_in_place_change_of_the_weight_invalidates_its_entry():
    w = weight()
    with weight_cast_cache() as cache:
        before = cached_cast(w, BF16)
        with mt.no_grad():
            w.mul_(2)  # what optimizer.step() does: the version counter moves
        after = cached_cast(w, BF16)
        assert after is not before
        np.testing.assert_array_equal(after.detach().float().cpu().numpy(), w.detach().bfloat16().float().cpu().numpy())
        assert cached_cast(w, BF16) is after
        w.data = mt.zeros(4, 3)  # new memory without a version bump
        assert cached_cast(w, BF16).detach().abs().sum().item() == 0
        assert cache.misses == 3


def test_only_parameter_like_leaves_are_cached():
    w = weight()
    with weight_cast_cache() as cache:
        activation = w * 1  # not a leaf
        assert cached_cast(activation, BF16) is not cached_cast(activation, BF16)
        data = mt.ones(2, 2)  # does not require grad
        assert cached_cast(data, BF16) is not cached_cast(data, BF16)
        assert len(cache) == 0
        assert cached_cast(w.detach().bfloat16(), BF16).dtype is BF16  # already that dtype: returned as is


def test_a_cast_made_under_no_grad_is_not_reused_where_gradients_flow():
    w = weight()
    with weight_cast_cache():
        with mt.no_grad():
            frozen = cached_cast(w, BF16)
        assert frozen.grad_fn is None
        live = cached_cast(w, BF16)
        assert live is not frozen and live.grad_fn is not None


def test_the_cached_cast_is_differentiable_back_to_the_float32_weight():
    w = weight()
    x = mt.tensor(np.random.default_rng(1).standard_normal((2, 4)), dtype=BF16)
    with weight_cast_cache():
        loss = ((x @ cached_cast(w, BF16)).sum() + (x @ cached_cast(w, BF16)).sum()).float()
    loss.backward()
    assert w.grad.dtype is mt.float32
    expected = 2 * x.float().cpu().numpy().sum(0)[:, None] * np.ones((1, 3))
    np.testing.assert_allclose(w.grad.cpu().numpy(), expected, rtol=2.0**-7)


def test_a_dtype_policy_casts_through_the_cache():
    w = weight()
    x = mt.randn(5, 4)

    def policy(op, dtypes):
        return BF16 if op == "matmul" else None

    with mt.dtype_policy(casting_policy(policy)), weight_cast_cache() as cache:
        y = (x @ w) + (x @ w) + (x.relu() @ w)
    assert y.dtype is BF16
    assert (cache.misses, cache.hits) == (1, 2)  # w cast once; the activations are not cached
    y.float().sum().backward()
    assert w.grad is not None and w.grad.dtype is mt.float32


def test_bad_target_dtypes_are_refused():
    with weight_cast_cache(), pytest.raises(TypeError, match="unknown dtype"):
        cached_cast(weight(), "bfloat")
