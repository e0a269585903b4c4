"""``RMSprop``: divide the gradient by a running root-mean-square of recent gradients.

PyTorch compatibility, off chapter 05's reading path: the optimizer class and
its arithmetic (``rmsprop_update``, written like the rules of
:mod:`minigrad.optim.functional`: whole-array, in place, PyTorch's order of
operations).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from minigrad.optim.optimizer import Optimizer, _bump, check_number
from minigrad.optim.update_kernels import run_update
from minigrad.tensor import Tensor

__all__ = ["RMSprop", "rmsprop_update"]


class RMSprop(Optimizer):
    r"""RMSprop (Hinton, 2012), as ``torch.optim.RMSprop``.

    For each parameter ``p`` with gradient ``g``::

        g = -g                            if maximize
        g = g + weight_decay * p          if weight_decay != 0
        v = alpha * v + (1 - alpha) * g * g      (running mean of g**2)
        a = alpha * a + (1 - alpha) * g          if centered (running mean of g)
        s = sqrt(v - a * a) + eps                if centered (~ std of g)
        s = sqrt(v) + eps                        otherwise  (~ RMS of g)
        b = momentum * b + g / s;  p = p - lr * b        if momentum > 0
        p = p - lr * g / s                               otherwise

    Args: ``params``, ``lr`` (1e-2), ``alpha`` (0.99, in [0, 1]), ``eps``
    (1e-8), ``weight_decay`` (0), ``momentum`` (0), ``centered`` (False),
    ``maximize`` (False).

    State per parameter: ``"step"``, ``"square_avg"``, and ``"momentum_buffer"``
    (momentum > 0) and ``"grad_avg"`` (centered). The arithmetic is
    :func:`rmsprop_update`.
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        maximize: bool = False,
    ) -> None:
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                        centered=centered, maximize=maximize)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        check_number("RMSprop", "lr", group["lr"], hint="lr=1e-2")
        check_number("RMSprop", "alpha", group["alpha"], 0.0, 1.0, hint="alpha=0.99")
        check_number("RMSprop", "eps", group["eps"], hint="eps=1e-8")
        check_number("RMSprop", "weight_decay", group["weight_decay"])
        check_number("RMSprop", "momentum", group["momentum"], hint="momentum=0 or 0.9")

    def _update(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        if not state:  # stored together: an out-of-memory error while allocating leaves no half state
            square_avg = self._zeros_state(p)
            state.update(step=0, square_avg=square_avg)
        if group["momentum"] > 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = self._zeros_state(p)
        if group["centered"] and "grad_avg" not in state:
            state["grad_avg"] = self._zeros_state(p)
        state["step"] += 1
        grad_avg = state.get("grad_avg") if group["centered"] else None
        buf = state.get("momentum_buffer") if group["momentum"] > 0 else None
        arrays = (p._data, p.grad._data, state["square_avg"]._data, None if grad_avg is None else grad_avg._data,
                  None if buf is None else buf._data)
        run_update("rmsprop", p, rmsprop_update, arrays, {
            "lr": group["lr"],
            "alpha": group["alpha"],
            "eps": group["eps"],
            "weight_decay": group["weight_decay"],
            "momentum": group["momentum"],
            "centered": group["centered"],
            "maximize": group["maximize"],
        })
        _bump(p, state["square_avg"], grad_avg, buf)


def rmsprop_update(
    param,
    grad,
    square_avg,
    grad_avg=None,
    momentum_buffer=None,
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float = 0.0,
    momentum: float = 0.0,
    centered: bool = False,
    maximize: bool = False,
) -> None:
    """One RMSprop step for one parameter, in place.

    ``square_avg`` (v) is the running average of the squared gradient;
    ``grad_avg`` (a, only when ``centered``) of the gradient; ``momentum_buffer``
    (b, only when ``momentum > 0``) starts at zero::

        g = -g                            if maximize
        g = g + weight_decay * p          if weight_decay != 0
        v = alpha * v + (1 - alpha) * g * g
        a = alpha * a + (1 - alpha) * g   if centered
        s = sqrt(v - a * a) + eps         if centered (an estimate of the std)
        s = sqrt(v) + eps                 otherwise
        b = momentum * b + g / s;  p = p - lr * b     if momentum > 0
        p = p - lr * g / s                            otherwise
    """
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad + weight_decay * param
    square_avg *= alpha
    square_avg += (1 - alpha) * grad * grad
    if centered:
        grad_avg *= alpha
        grad_avg += (1 - alpha) * grad
        avg = np.sqrt(square_avg - grad_avg * grad_avg) + eps
    else:
        avg = np.sqrt(square_avg) + eps
    if momentum > 0:
        momentum_buffer *= momentum
        momentum_buffer += grad / avg
        param -= lr * momentum_buffer
    else:
        param -= lr * (grad / avg)
