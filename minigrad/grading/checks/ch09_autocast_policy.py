"""Graded checks for chapter 09, exercise 9.2 (the autocast op policy): ``exercises/09_autocast_policy.py``.

A table of ops (each of PyTorch's lists, on the CPU and on CUDA, and ops in
no list) times argument dtypes (float16, bfloat16, float32, float64, integer
tensors, plain numbers, tensors on another device type) times the region's
dtype goes through the learner's ``_eligible`` and ``target_dtype``; every
answer must equal the library's. CUDA rows need no GPU: the policy only
reads a tensor's dtype and device type, so the tensors are CPU tensors
labelled as CUDA ones. The last check runs real ops under the library's
``autocast("cpu")`` in the child, where the installed policy is the
learner's: the outputs' and gradients' dtypes, the weight cache, and an op
in no list getting its arguments back untouched.
"""

from __future__ import annotations

from minigrad.grading.checks._smallest import first_failure, smallest_first
from minigrad.grading.probing import exercise, probe

F16, BF16, F32, F64 = "float16", "bfloat16", "float32", "float64"


def _reference():
    from minigrad.amp import autocast_policy  # here, in the grader: the child's copy is the learner's

    return autocast_policy


def _arg(spec):
    """(either side) A tensor ``("t", dtype, device_type)`` (a CPU tensor labelled with that device type) or a number."""
    if spec[0] == "n":
        return spec[1]
    import minigrad.tensor as mt
    from minigrad.tensor.backend import Device

    t = mt.zeros(2, dtype=spec[1])
    if spec[2] != "cpu":
        t._device = Device(spec[2], 0)
    return t


def _show(spec) -> str:
    return repr(spec[1]) if spec[0] == "n" else f"{spec[1]} tensor on {spec[2]}"


def _name(dtype) -> str | None:
    from minigrad.tensor.dtypes import as_dtype

    return None if dtype is None else str(as_dtype(dtype))


@probe
def targets(submission, state, cases):
    """(child) The learner's ``target_dtype`` for each (op, arg specs, device type, autocast dtype)."""
    return [_name(submission.target_dtype(op, tuple(_arg(s) for s in specs), device_type, _dtype(autocast)))
            for op, specs, device_type, autocast in cases]


@probe
def eligibility(submission, state, cases):
    """(child) The learner's ``_eligible`` for each (arg spec, device type)."""
    return [submission._eligible(_arg(spec), device_type) for spec, device_type in cases]


def _dtype(name):
    from minigrad.tensor.dtypes import as_dtype

    return as_dtype(name)


_WHY = {
    "lower": "matrix products and convolutions run in the region's dtype",
    "float32": "an op on the float32 list runs in float32 whatever its inputs (softmax, exp, log, sums and losses "
               "overflow or lose too much in 16 bits)",
    "promote": "a promote op runs in the widest dtype of its eligible tensors: float32 if one is float32 or two "
               "different 16-bit formats meet, else the region's dtype; tensors autocast may not cast do not count",
    None: "an op in none of the lists gets None: its arguments stay as they are",
}


def _table():
    t = lambda dtype, dev="cpu": ("t", dtype, dev)  # noqa: E731
    cases = []
    for dev in ("cpu", "cuda"):
        for region in (F16, BF16):
            for op in ("matmul", "linear", "conv2d"):
                for args in ((t(F32, dev), t(F32, dev)), (t(F16, dev), t(F32, dev)), (t(BF16, dev), t(BF16, dev))):
                    cases.append((op, args, dev, region))
            for op in ("cross_entropy", "nll_loss", "softmax", "log_softmax", "exp", "log", "sum", "vector_norm",
                       "logsumexp", "pow"):
                for dtype in (F16, BF16, F32):
                    cases.append((op, (t(dtype, dev),), dev, region))
            for op in ("cat", "stack"):
                for args in ((t(F16, dev), t(F16, dev)), (t(BF16, dev), t(BF16, dev)), (t(F16, dev), t(F32, dev)),
                             (t(F16, dev), t(BF16, dev)), (t(F16, dev), t(F64, dev)), (t(F16, dev), t("int64", dev)),
                             (t(F16, dev), t(F32, "cuda" if dev == "cpu" else "cpu")), (t(BF16, dev),)):
                    cases.append((op, args, dev, region))
            for op, args in (("add", (t(F16, dev), t(F32, dev))), ("relu", (t(F16, dev),)), ("mul", (t(BF16, dev), ("n", 2.0))),
                             ("div", (("n", 2.0), t(F16, dev))), ("div", (t(F16, dev), ("n", 2.0))), ("getitem", (t(F16, dev), ("n", 1)))):
                cases.append((op, args, dev, region))
    return cases


def _describe(case) -> str:
    op, specs, dev, region = case
    return f"target_dtype({op!r}, ({', '.join(_show(s) for s in specs)}{',' if len(specs) == 1 else ''}), {dev!r}, {region})"


@exercise("9.2")
def test_the_target_dtype_of_each_list(learner, rng):
    from minigrad.amp.op_lists import category

    cases = _table()
    rng.shuffle(cases)
    got = learner.probe("targets", [[op, [list(s) for s in specs], dev, region] for op, specs, dev, region in cases])
    mine = {id(c): g for c, g in zip(cases, got)}
    ref = _reference()

    def attempt(case) -> None:
        op, specs, dev, region = case
        args = tuple(_arg(s) for s in specs)
        theirs = _name(ref.target_dtype(op, args, dev, _dtype(region)))
        assert mine[id(case)] == theirs, (
            f"returned {mine[id(case)]}, expected {theirs}: {_WHY[category(dev, op, args)]}")

    first_failure(smallest_first(cases, lambda c: (len(c[1]), c[2] != "cpu")), attempt, _describe)


@exercise("9.2")
def test_which_arguments_autocast_may_cast(learner, rng):
    cases = [(("t", dtype, dev), region) for dtype in (F16, BF16, F32, F64, "int64", "bool")
             for dev in ("cpu", "cuda") for region in ("cpu", "cuda")]
    cases += [(("n", 2.0), "cpu"), (("n", 3), "cuda")]
    rng.shuffle(cases)
    got = learner.probe("eligibility", [[list(spec), region] for spec, region in cases])
    mine = {id(c): g for c, g in zip(cases, got)}
    ref = _reference()

    def attempt(case) -> None:
        theirs = ref._eligible(_arg(case[0]), case[1])
        assert type(mine[id(case)]) is bool and mine[id(case)] == theirs, (
            f"returned {mine[id(case)]!r}, expected {theirs}: autocast casts floating point tensors on the region's "
            f"device type, except float64; integer and bool tensors, numbers and tensors elsewhere stay as they are")

    first_failure(cases, attempt, lambda c: f"_eligible({_show(c[0])}, {c[1]!r})")


def _run_autocast(policy_module, dtype: str) -> dict:
    """(either side) Ops under the library's autocast("cpu"): dtypes out, gradients' dtypes, cache, untouched args."""
    import numpy as np

    import minigrad.nn.functional as F
    import minigrad.tensor as mt
    from minigrad.amp import autocast
    from minigrad.amp.cast_cache import active_cache

    rng = np.random.default_rng(0)
    x = mt.tensor(rng.standard_normal((4, 6)), dtype=F32, requires_grad=True)
    w = mt.tensor(rng.standard_normal((5, 6)), dtype=F32, requires_grad=True)
    h = mt.tensor(rng.standard_normal((4, 6)), dtype=F16)
    d = mt.tensor(rng.standard_normal((3, 3)), dtype=F64)
    labels = mt.tensor([0, 1, 2, 3])
    out = {}
    with autocast("cpu", dtype=dtype):
        y = x @ w.T
        out["x @ w.T"] = str(y.dtype)
        out["linear(x, w)"] = str(F.linear(x, w).dtype)
        out["float64 d @ d"] = str((d @ d).dtype)
        out["cross_entropy(x @ w.T, labels)"] = str(F.cross_entropy(y, labels).dtype)
        out["cat([float16 h, float32 x])"] = str(mt.cat([h, x]).dtype)
        out["x @ w.T + x @ w.T"] = str((y + y).dtype)
        out["tensors in the weight cache after two products with w"] = len(active_cache())
        args = (x, w)
        out["an op in no list gets its argument tuple back"] = policy_module.autocast_policy(type("Relu", (), {"op": "relu"}), args) is args
        loss = F.cross_entropy(x @ w.T, labels)
    loss.backward()
    out["x.grad"], out["w.grad"] = str(x.grad.dtype), str(w.grad.dtype)
    return out


@probe
def autocast_run(submission, state, dtype):
    """(child) Real ops under autocast: the policy the library installs is the learner's."""
    return _run_autocast(submission, dtype)


@exercise("9.2")
def test_autocast_runs_on_your_policy(learner, rng):
    for dtype in (F16, BF16) if rng.random() < 0.5 else (BF16, F16):
        got = learner.probe("autocast_run", dtype)
        expected = _run_autocast(_reference(), dtype)
        for what, theirs in expected.items():
            assert got.get(what) == theirs, (
                f"under autocast('cpu', dtype={dtype}) on your policy: {what}: {got.get(what)!r}, expected {theirs!r}")
