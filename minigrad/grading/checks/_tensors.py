"""Gradient checks split across the trust boundary, for the tensor chapters (04-06).

In the child, :func:`analytic` runs ``fn`` on the library's tensors (whose
graded module is the learner's file) and backpropagates ``L = sum(w * out)``
for weights ``w`` the grader chose; it sends back the outputs and the input
gradients. Here, :func:`gradcheck_here` computes central differences of the
same ``L`` with the library's own reference and compares, with the
tolerances of :func:`minigrad.tensor.gradcheck` (eps 1e-6, atol 1e-5,
rtol 1e-3). The library is imported inside functions: the child imports this
module before the submission is loaded.
"""

from __future__ import annotations

import numpy as np


def as_array(t) -> np.ndarray:
    """A library Tensor's values as an ndarray (child side; only an exact Tensor is read)."""
    from minigrad.tensor import Tensor

    if type(t) is not Tensor:
        raise TypeError(f"expected a minigrad Tensor, got {type(t).__name__}")
    return np.array(t.detach().numpy())


def _tensors(arrays, requires):
    import minigrad.tensor as mt

    return [
        mt.tensor(a, requires_grad=bool(r)) if isinstance(a, np.ndarray) else a
        for a, r in zip(arrays, requires)
    ]


def _outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def analytic(fn, arrays, requires, weights) -> dict:
    """(child) Outputs of ``fn`` and gradients of ``sum(w * out)`` for the inputs with ``requires``."""
    import minigrad.tensor as mt

    inputs = _tensors(arrays, requires)
    outs = _outputs(fn(*inputs))
    loss = None
    for o, w in zip(outs, weights):
        term = (o.double() * mt.tensor(w)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    grads = [
        (None if x.grad is None else as_array(x.grad)) if r else None
        for x, r in zip(inputs, requires)
    ]
    return {"outputs": [as_array(o) for o in outs], "grads": grads}


def reference_outputs(fn, arrays) -> list[np.ndarray]:
    """(grader) ``fn``'s outputs with the library's reference, as float64 arrays."""
    from minigrad.tensor import no_grad

    with no_grad():
        outs = _outputs(fn(*_tensors(arrays, [False] * len(arrays))))
    return [o.numpy().astype(np.float64) for o in outs]


def gradcheck_here(fn, arrays, requires, answer, weights, what, eps=1e-6, atol=1e-5, rtol=1e-3) -> None:
    """(grader) Each requested input gradient the child sent against central differences of the reference."""
    arrays = [np.array(a, dtype=np.float64) if r else a for a, r in zip(arrays, requires)]

    def objective() -> float:
        return sum(float((o * w).sum()) for o, w in zip(reference_outputs(fn, arrays), weights))

    for i, (x, r) in enumerate(zip(arrays, requires)):
        if not r:
            continue
        got = answer["grads"][i]
        if got is None:
            got = np.zeros(x.shape)
        assert isinstance(got, np.ndarray) and got.shape == x.shape, (
            f"{what}: the gradient of input {i} has shape {np.shape(got)}, expected {x.shape}"
        )
        for index in np.ndindex(*x.shape):
            keep = x[index]
            x[index] = keep + eps
            plus = objective()
            x[index] = keep - eps
            minus = objective()
            x[index] = keep
            numeric = (plus - minus) / (2 * eps)
            a = float(got[index])
            assert abs(a - numeric) <= atol + rtol * abs(numeric), (
                f"{what}: gradcheck mismatch at input {i}, element {index}: backward gives {a:.8g}, "
                f"finite differences give {numeric:.8g}"
            )


def remote_gradcheck(learner, probe: str, name: str, fn, arrays, requires=None, seed: int = 0, what: str = "") -> dict:
    """Backward in the child (probe ``probe`` running function ``name``), finite differences here."""
    requires = [isinstance(a, np.ndarray) and a.dtype == np.float64 for a in arrays] if requires is None else requires
    gen = np.random.default_rng(seed)
    weights = [gen.standard_normal(o.shape) for o in reference_outputs(fn, arrays)]
    answer = learner.probe(probe, name, list(arrays), list(requires), weights)
    gradcheck_here(fn, arrays, requires, answer, weights, what or name)
    return answer
