"""float16/bfloat16 numerics as PyTorch's: reductions accumulate in float32, 0-d tensors rank low in promotion.

Every reduction over a 16-bit float (sum, mean, var/std, vector norms,
softmax/log_softmax/logsumexp, the losses, matrix products) adds up in
float32 and rounds its result once; the sweep compares values near each
format's limits (float16's largest number is 65,504, bfloat16's ~3.39e38)
with PyTorch's CPU kernels, to one unit in the last place (the order of the
float32 additions differs). The promotion table compares every pair of
dtypes, 0-d and 1-d, with ``torch.result_type``.
"""

import itertools
import math

import ml_dtypes
import numpy as np
import pytest

import minigrad.nn.functional as F
import minigrad.tensor as mt
from minigrad import nn

torch = pytest.importorskip("torch")

HALF = {"float16": (mt.float16, torch.float16), "bfloat16": (mt.bfloat16, torch.bfloat16)}


def _numpy(t) -> np.ndarray:
    return t.detach().float().cpu().numpy().astype(np.float64)


def _assert_within_ulps(ours, theirs, dtype_name: str, what: str, ulps: int = 1, finite_only: bool = False):
    """Same non-finite pattern, finite values at most ``ulps`` units in the last place of the 16-bit dtype apart
    (``finite_only``: compare only where both are finite)."""
    a, b = np.atleast_1d(_numpy(ours)), np.atleast_1d(theirs.detach().float().numpy().astype(np.float64))
    assert a.shape == b.shape, what
    if not finite_only:
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{what}: nan pattern")
        np.testing.assert_array_equal(np.isposinf(a), np.isposinf(b), err_msg=f"{what}: +inf pattern")
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b), err_msg=f"{what}: -inf pattern")
    finite = np.isfinite(a) & np.isfinite(b)
    info = ml_dtypes.finfo(np.float16 if dtype_name == "float16" else ml_dtypes.bfloat16)
    magnitude = np.maximum(np.abs(b[finite]), float(info.smallest_normal))
    ulp = ulps * float(info.eps) * 2.0 ** np.floor(np.log2(magnitude))
    assert (np.abs(a[finite] - b[finite]) <= ulp).all(), (
        f"{what}: ours {a[finite][:4]} vs torch {b[finite][:4]}"
    )


def _pair(values, dtype_name, requires_grad=False):
    ours_dtype, their_dtype = HALF[dtype_name]
    ours = mt.tensor(values, dtype=ours_dtype, requires_grad=requires_grad)
    theirs = torch.tensor(values, dtype=torch.float64).to(their_dtype).requires_grad_(requires_grad)
    return ours, theirs


# values near each format's limits: many terms whose sums or squares overflow the format, tiny terms, mixed signs
CASES = {
    "float16": {
        "10k of 3.0": np.full((4, 2500), 3.0),
        "near max": np.random.default_rng(0).uniform(6e4, 6.5e4, (4, 64)),
        "many tiny": np.full((4, 5000), 1e-4),
        "mixed": np.random.default_rng(1).standard_normal((4, 512)) * 2000.0,
    },
    "bfloat16": {
        "near max": np.random.default_rng(2).uniform(2e38, 3.3e38, (4, 64)),
        "squares overflow float32": np.full((4, 256), 1e20),
        "many small": np.full((4, 5000), 0.1),
        "mixed": np.random.default_rng(3).standard_normal((4, 512)) * 1e30,
    },
}

REDUCTIONS = {
    "sum": (lambda m, x: m.sum(x), lambda t, x: t.sum(x)),
    "sum(dim=1)": (lambda m, x: x.sum(1), lambda t, x: x.sum(1)),
    "mean": (lambda m, x: x.mean(), lambda t, x: x.mean()),
    "mean(dim=1)": (lambda m, x: x.mean(1), lambda t, x: x.mean(1)),
    "var(dim=1)": (lambda m, x: x.var(1), lambda t, x: x.var(1)),
    "std(dim=1)": (lambda m, x: x.std(1), lambda t, x: x.std(1)),
    "norm": (lambda m, x: x.norm(), lambda t, x: torch.linalg.vector_norm(x)),
    "norm(1, dim=1)": (lambda m, x: x.norm(1, dim=1), lambda t, x: torch.linalg.vector_norm(x, 1, dim=1)),
    "norm(inf)": (lambda m, x: x.norm(math.inf), lambda t, x: torch.linalg.vector_norm(x, math.inf)),
    "norm(3, dim=1)": (lambda m, x: x.norm(3.0, dim=1), lambda t, x: torch.linalg.vector_norm(x, 3.0, dim=1)),
    "softmax": (lambda m, x: x.softmax(1), lambda t, x: x.softmax(1)),
    "log_softmax": (lambda m, x: x.log_softmax(1), lambda t, x: x.log_softmax(1)),
    "logsumexp": (lambda m, x: x.logsumexp(1), lambda t, x: x.logsumexp(1)),
    "mse_loss": (lambda m, x: F.mse_loss(x, x * 0.5), lambda t, x: torch.nn.functional.mse_loss(x, x * 0.5)),
    "bce_with_logits": (
        lambda m, x: F.binary_cross_entropy_with_logits(x, (x > 0).to(x.dtype)),
        lambda t, x: torch.nn.functional.binary_cross_entropy_with_logits(x, (x > 0).to(x.dtype)),
    ),
    "cross_entropy": (
        lambda m, x: F.cross_entropy(x, mt.tensor([0, 1, 2, 3])),
        lambda t, x: torch.nn.functional.cross_entropy(x, torch.tensor([0, 1, 2, 3])),
    ),
    "nll_loss(sum)": (
        lambda m, x: F.nll_loss(x, mt.tensor([0, 1, 2, 3]), reduction="sum"),
        lambda t, x: torch.nn.functional.nll_loss(x, torch.tensor([0, 1, 2, 3]), reduction="sum"),
    ),
}

# PyTorch composes these from 16-bit elementwise ops, each rounding, before its float32 mean; ours round once
TORCH_ROUNDS_IN_BETWEEN = {"bce_with_logits": 4}

SWEEP = [(d, c, r) for d in CASES for c in CASES[d] for r in REDUCTIONS]


@pytest.mark.host_only
@pytest.mark.parametrize("dtype_name, case, reduction", SWEEP, ids=[f"{d}-{c}-{r}" for d, c, r in SWEEP])
def test_reductions_match_torch_near_the_format_limits(dtype_name, case, reduction):
    ours_fn, their_fn = REDUCTIONS[reduction]
    ours, theirs = _pair(CASES[dtype_name][case], dtype_name)
    with np.errstate(all="ignore"):
        out = ours_fn(mt, ours)
        exact = ours_fn(mt, ours.double()).to(ours.dtype)  # the float64 result, rounded once
    expected = their_fn(torch, theirs)
    assert out.dtype is HALF[dtype_name][0] and expected.dtype is HALF[dtype_name][1]
    what = f"{reduction} on {dtype_name} {case}"
    _assert_within_ulps(out, expected, dtype_name, what + " (torch)", TORCH_ROUNDS_IN_BETWEEN.get(reduction, 1))
    # where float32 accumulation overflows (torch's too), float64 does not: compare the finite values only
    _assert_within_ulps(out, torch.tensor(_numpy(exact)), dtype_name, what + " (float64 rounded once)", finite_only=True)


# a product's k terms: past float16's 65,504 (inf in both), or just inside each format's range
MATMUL_CASES = [("float16", 3.0, 10_000), ("float16", 10.0, 600), ("float16", 1e-3, 4096),
                ("bfloat16", 1e18, 512), ("bfloat16", 1e-18, 512), ("bfloat16", 0.1, 5000)]


@pytest.mark.host_only
@pytest.mark.parametrize("dtype_name, scale, k", MATMUL_CASES)
def test_matrix_products_accumulate_in_float32_and_round_once(dtype_name, scale, k):
    values = np.abs(np.random.default_rng(7).standard_normal((3, k))) * scale
    ours, theirs = _pair(values, dtype_name)
    with np.errstate(over="ignore"):
        out = ours @ ours.T
        rounded_once = (ours.float() @ ours.float().T).to(ours.dtype)
    np.testing.assert_array_equal(_numpy(out), _numpy(rounded_once))
    _assert_within_ulps(out, theirs @ theirs.T, dtype_name, f"matmul {dtype_name} x{scale:g} k={k}")


@pytest.mark.host_only
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("reduction", ["sum(dim=1)", "mean", "std(dim=1)", "norm", "norm(inf)", "softmax",
                                       "log_softmax", "logsumexp", "cross_entropy"])
def test_reduction_gradients_match_torch_and_keep_the_dtype(dtype_name, reduction):
    ours_fn, their_fn = REDUCTIONS[reduction]
    values = np.random.default_rng(4).standard_normal((4, 300)) * 8.0
    ours, theirs = _pair(values, dtype_name, requires_grad=True)
    weights = np.random.default_rng(5).standard_normal(tuple(their_fn(torch, theirs.detach()).shape))
    (ours_fn(mt, ours) * mt.tensor(weights, dtype=ours.dtype)).sum().backward()
    (their_fn(torch, theirs) * torch.tensor(weights).to(theirs.dtype)).sum().backward()
    assert ours.grad.dtype is ours.dtype
    a, b = _numpy(ours.grad), theirs.grad.float().numpy().astype(np.float64)
    tolerance = 4 * float(mt.finfo(ours.dtype).eps)  # backward has several rounded steps (the output, the product)
    np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance * np.abs(b).max())


@pytest.mark.host_only
def test_clip_grad_norm_of_ten_thousand_float16_gradients_is_pytorchs():
    ours = nn.Parameter(mt.zeros(10_000, dtype=mt.float16))
    ours.grad = mt.full((10_000,), 3.0, dtype=mt.float16)
    theirs = torch.nn.Parameter(torch.zeros(10_000, dtype=torch.float16))
    theirs.grad = torch.full((10_000,), 3.0, dtype=torch.float16)
    total = nn.utils.clip_grad_norm_([ours], 1.0)
    expected = torch.nn.utils.clip_grad_norm_([theirs], 1.0)
    assert total.dtype is mt.float16 and total.item() == expected.item() == 300.0
    np.testing.assert_array_equal(ours.grad.cpu().numpy(), theirs.grad.numpy())
    assert ours.grad.cpu().numpy()[0] == np.float16(0.01)


@pytest.mark.host_only
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_over_mixed_dtypes_matches_torch(norm_type):
    shapes = {"float16": (3000,), "bfloat16": (50, 40), "float32": (7,)}
    ours, theirs = [], []
    for i, (name, shape) in enumerate(shapes.items()):
        values = np.random.default_rng(i).standard_normal(shape) * 200.0
        p = nn.Parameter(mt.zeros(*shape, dtype=name))
        p.grad = mt.tensor(values, dtype=name)
        t = torch.nn.Parameter(torch.zeros(shape, dtype=getattr(torch, name)))
        t.grad = torch.tensor(values).to(getattr(torch, name))
        ours.append(p)
        theirs.append(t)
    total = nn.utils.clip_grad_norm_(ours, 5.0, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 5.0, norm_type)
    assert total.dtype is mt.float32 and expected.dtype is torch.float32
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-5)
    for p, t in zip(ours, theirs):
        eps = float(mt.finfo(p.dtype).eps)
        np.testing.assert_allclose(_numpy(p.grad), t.grad.float().numpy(), rtol=eps, atol=eps * 1e-2)


# --------------------------------------------------------------------------- gradients in float64


@pytest.mark.parametrize("fn", [
    lambda x: x.norm(), lambda x: x.norm(1.0, dim=1), lambda x: x.norm(3.0, dim=0, keepdim=True),
    lambda x: x.norm(math.inf, dim=1), lambda x: x.std(1), lambda x: x.std(), lambda x: x.std(0, correction=0),
    lambda x: mt.vector_norm(x, 2.5, dim=(0, 1)),
], ids=["norm", "norm1-dim1", "norm3-keepdim", "norm-inf", "std-dim1", "std", "std-correction0", "norm2.5"])
def test_norm_and_std_gradients_match_finite_differences(fn):
    x = mt.tensor(np.random.default_rng(6).standard_normal((3, 5)), dtype=mt.float64, requires_grad=True)
    assert mt.gradcheck(fn, [x])


def test_vector_norm_gradient_is_zero_at_the_zero_vector_and_refuses_bad_input():
    x = mt.zeros(4, dtype=mt.float64, requires_grad=True)
    x.norm().backward()
    assert x.grad.tolist() == [0.0] * 4  # PyTorch's choice: no nan at the kink
    with pytest.raises(mt.DTypeError, match="vector_norm: expected a floating point tensor"):
        mt.vector_norm(mt.tensor([1, 2]))
    for ord in (0, -1, math.nan, "two"):
        with pytest.raises(ValueError, match="vector_norm: ord must be a number > 0 or inf"):
            mt.vector_norm(mt.ones(3), ord)


# --------------------------------------------------------------------------- promotion with 0-d tensors

NAMES = ["bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
# minigrad has no int32: int32 data is stored as int64, so torch's int32 results are read as int64
OURS = {"bool": mt.bool_, "int32": mt.int64, "int64": mt.int64, "float16": mt.float16, "bfloat16": mt.bfloat16,
        "float32": mt.float32, "float64": mt.float64}
THEIRS_TO_OURS = {torch.bool: mt.bool_, torch.int32: mt.int64, torch.int64: mt.int64, torch.float16: mt.float16,
                  torch.bfloat16: mt.bfloat16, torch.float32: mt.float32, torch.float64: mt.float64}
PAIRS = list(itertools.product(itertools.product(NAMES, [0, 1]), repeat=2))


@pytest.mark.parametrize("left, right", PAIRS, ids=[f"{a}{'-vec' if i else '-0d'}*{b}{'-vec' if j else '-0d'}"
                                                    for (a, i), (b, j) in PAIRS])
def test_promotion_with_zero_dimensional_tensors_matches_torch_result_type(left, right):
    (a, a_dims), (b, b_dims) = left, right
    shape_a, shape_b = (3,) * a_dims, (3,) * b_dims
    ta, tb = torch.ones(shape_a, dtype=getattr(torch, a)), torch.ones(shape_b, dtype=getattr(torch, b))
    expected = THEIRS_TO_OURS[torch.result_type(ta, tb)]
    ma, mb = mt.ones(*shape_a, dtype=OURS[a]), mt.ones(*shape_b, dtype=OURS[b])
    assert mt.promote_types is not None
    from minigrad.tensor.dtypes import tensors_result_type
    assert tensors_result_type(ma.dtype, ma.ndim, mb.dtype, mb.ndim) is expected
    assert (ma * mb).dtype is expected and THEIRS_TO_OURS[(ta * tb).dtype] is expected
    assert (ma + mb).dtype is expected and mt.maximum(ma, mb).dtype is expected
    assert mt.where(mt.ones(3, dtype=bool), ma, mb).dtype is expected


def test_the_promotions_the_chapter_names():
    vec16 = mt.ones(3, dtype=mt.float16)
    assert (vec16 * mt.tensor(0.5)).dtype is mt.float16
    assert (vec16 * mt.tensor(0.5, dtype=mt.float64)).dtype is mt.float16
    assert (mt.ones(3, dtype=mt.bfloat16) * mt.tensor(0.5, dtype=mt.float16)).dtype is mt.bfloat16
    assert (mt.ones(3, dtype=mt.int64) * mt.tensor(0.5)).dtype is mt.float32
    assert (mt.ones(3, dtype=mt.int64) * 0.5).dtype is mt.default_float
    assert (mt.tensor(2.0, dtype=mt.float64) * mt.tensor(0.5, dtype=mt.float16)).dtype is mt.float64  # both 0-d


def test_a_zero_dimensional_operand_gets_its_gradient_in_its_own_dtype():
    vec = mt.ones(3, dtype=mt.float16, requires_grad=True)
    scale = mt.tensor(0.5, dtype=mt.float64, requires_grad=True)
    (vec * scale).sum().backward()
    assert vec.grad.dtype is mt.float16 and scale.grad.dtype is mt.float64
    assert scale.grad.item() == 3.0
