"""``Adam`` and ``AdamW``: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

from typing import Any, Iterable

from minigrad.optim import functional
from minigrad.optim.optimizer import Optimizer, _bump, check_number
from minigrad.optim.update_kernels import run_update
from minigrad.tensor import Tensor

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    r"""Adam (Kingma & Ba, 2015), as ``torch.optim.Adam``.

    For each parameter ``p`` with gradient ``g``, at step ``t = 1, 2, ...``::

        g = -g                            if maximize
        g = g + weight_decay * p          if weight_decay != 0   (L2 penalty)
        m = beta1 * m + (1 - beta1) * g          (running mean of g)
        v = beta2 * v + (1 - beta2) * g * g      (running mean of g**2)
        v_max = max(v_max, v)             if amsgrad; v_max then replaces v below
        m_hat = m / (1 - beta1**t)               (bias corrections: m and v start
        v_hat = v / (1 - beta2**t)                at zero, so they start too small)
        p = p - lr * m_hat / (sqrt(v_hat) + eps)

    Each parameter gets its own step size: large where gradients have been
    small and steady, small where they are large or noisy.

    Args: ``params``, ``lr`` (1e-3), ``betas`` ((0.9, 0.999), each in [0, 1)),
    ``eps`` (1e-8), ``weight_decay`` (0), ``amsgrad`` (False), ``maximize`` (False).

    State per parameter: ``"step"`` (int), ``"exp_avg"`` (m), ``"exp_avg_sq"``
    (v) and, with amsgrad, ``"max_exp_avg_sq"``. The arithmetic is
    :func:`minigrad.optim.functional.adam_update`.
    """

    _decoupled_weight_decay = False

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        name = type(self).__name__
        check_number(name, "lr", group["lr"], hint="lr=1e-3")
        betas = group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"{name}: invalid betas={betas!r}; it must be a pair (beta1, beta2), e.g. (0.9, 0.999)")
        check_number(name, "betas[0]", betas[0], 0.0, 1.0, high_open=True, hint="0.9")
        check_number(name, "betas[1]", betas[1], 0.0, 1.0, high_open=True, hint="0.999")
        check_number(name, "eps", group["eps"], hint="eps=1e-8")
        check_number(name, "weight_decay", group["weight_decay"], hint="weight_decay=1e-2 for AdamW")

    def _update(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        if not state:  # first step of this parameter: zero moments, stored together (an out-of-memory error
            exp_avg, exp_avg_sq = self._zeros_state(p), self._zeros_state(p)  # in between leaves no half state)
            state.update(step=0, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq)
        if group["amsgrad"] and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = self._zeros_state(p)
        state["step"] += 1
        max_sq = state.get("max_exp_avg_sq") if group["amsgrad"] else None
        beta1, beta2 = group["betas"]
        arrays = (p._data, p.grad._data, state["exp_avg"]._data, state["exp_avg_sq"]._data,
                  None if max_sq is None else max_sq._data)
        run_update("adam", p, functional.adam_update, arrays, {
            "step": state["step"],
            "lr": group["lr"],
            "beta1": beta1,
            "beta2": beta2,
            "eps": group["eps"],
            "weight_decay": group["weight_decay"],
            "decoupled_weight_decay": self._decoupled_weight_decay,
            "amsgrad": group["amsgrad"],
            "maximize": group["maximize"],
        })
        _bump(p, state["exp_avg"], state["exp_avg_sq"], max_sq)


class AdamW(Adam):
    r"""Adam with *decoupled* weight decay (Loshchilov & Hutter, 2019), as ``torch.optim.AdamW``.

    The same as :class:`Adam` except for the weight decay, which shrinks the
    weights directly before the Adam update instead of being added to the
    gradient::

        p = p * (1 - lr * weight_decay)
        ... then the Adam step with the gradient g unchanged

    With Adam's L2 penalty, the decay term is divided by ``sqrt(v_hat)`` like
    the rest of the gradient, so weights with large gradients are barely
    regularised; decoupling makes the decay the same for every weight.
    Default ``weight_decay=1e-2``.
    """

    _decoupled_weight_decay = True

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
