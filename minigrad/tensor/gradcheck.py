"""Check ``backward()`` against finite differences, in float64.

``gradcheck(fn, inputs)`` reduces ``fn``'s output to a number with fixed random
weights, ``L = sum(w * fn(*inputs))``, then compares, for every element of
every input that requires grad, the gradient from ``backward()`` with the
central difference ``(L(x + eps) - L(x - eps)) / (2 eps)``, whose error is
O(eps^2). Random weights make every output element matter (with ``sum()`` a
wrong gradient that sums to the right total would slip through).

An element passes when ``|analytic - numeric| <= atol + rtol * |numeric|``.
The result names the worst element, so a failing check says where to look.

Inputs should be float64 (float32's ~1e-7 resolution drowns a 1e-6 step);
other floating point inputs are replaced by float64 copies. Inputs are
perturbed in place, so a non-contiguous input (``x.T``, a slice) is checked
with its own strides.
"""

from __future__ import annotations

import numpy as np

from minigrad.tensor.function import no_grad
from minigrad.tensor.gradcheck_result import GradcheckError, GradcheckResult
from minigrad.tensor.tensor import Tensor

__all__ = ["gradcheck", "GradcheckError", "GradcheckResult"]


def _outputs(result) -> tuple[Tensor, ...]:
    outs = result if isinstance(result, (tuple, list)) else (result,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"gradcheck: fn must return a Tensor (or a tuple of them), got {type(o).__name__}")
    return tuple(outs)


def gradcheck(fn, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, seed: int = 0) -> GradcheckResult:
    """Compare ``backward()`` of ``fn(*inputs)`` with central differences; see the module docstring.

    ``inputs``: a tensor or a sequence of tensors and other arguments; the
    tensors with ``requires_grad=True`` are checked. Raises
    :class:`GradcheckError` on a mismatch unless ``raise_exception=False``.
    """
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    targets = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not targets:
        raise ValueError("gradcheck: no input has requires_grad=True, so there is nothing to check")
    for i in targets:
        if inputs[i].dtype != np.float64:
            inputs[i] = inputs[i].detach().double().requires_grad_(True)

    # the analytic gradient of L = sum(w * out)
    saved = [inputs[i].grad for i in targets]
    for i in targets:
        inputs[i].grad = None
    outs = _outputs(fn(*inputs))
    gen = np.random.default_rng(seed)
    weights = [gen.standard_normal(o.shape) for o in outs]
    loss = None
    for o, w in zip(outs, weights):
        if not o.requires_grad:
            continue
        term = (o.double() * Tensor(w, dtype=np.float64, device=o.device)).sum()
        loss = term if loss is None else loss + term
    analytic = []
    if loss is not None:
        loss.backward()
    for i in targets:
        g = inputs[i].grad
        analytic.append(np.zeros(inputs[i].shape) if g is None else g._host().astype(np.float64))
    for i, old in zip(targets, saved):
        inputs[i].grad = old

    def objective() -> float:
        total = 0.0
        for o, w in zip(_outputs(fn(*inputs)), weights):
            total += float((o._host().astype(np.float64) * w).sum())
        return total

    # the numeric gradient, one element at a time
    worst = (-np.inf, 0, (), 0.0, 0.0, 0.0)
    ok = True
    checked = 0
    with no_grad():
        for slot, i in enumerate(targets):
            data = inputs[i]._data
            for index in np.ndindex(*data.shape):
                original = data[index]
                data[index] = original + eps
                plus = objective()
                data[index] = original - eps
                minus = objective()
                data[index] = original
                numeric = (plus - minus) / (2 * eps)
                a = float(analytic[slot][index])
                diff = abs(a - numeric)
                excess = diff - atol - rtol * abs(numeric)
                checked += 1
                if excess > 0:
                    ok = False
                if excess > worst[0]:
                    worst = (excess, i, index, a, numeric, diff)
    result = GradcheckResult(ok, worst[1], worst[2], worst[3], worst[4], worst[5], checked)
    if not ok and raise_exception:
        raise GradcheckError(str(result))
    return result
