"""``SGD``: stochastic gradient descent, with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

from typing import Any, Iterable

from minigrad.optim import functional
from minigrad.optim.optimizer import Optimizer, _bump, check_number, required
from minigrad.optim.update_kernels import run_update
from minigrad.tensor import Tensor

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent, as ``torch.optim.SGD``.

    For each parameter ``p`` with gradient ``g`` (``b`` is the momentum buffer)::

        g = -g                       if maximize
        g = g + weight_decay * p     if weight_decay != 0       (L2 penalty)
        if momentum != 0:
            b = g                                    on the first step
            b = momentum * b + (1 - dampening) * g   afterwards
            g = g + momentum * b     if nesterov
            g = b                    otherwise
        p = p - lr * g

    Momentum keeps a running (unnormalised) average of past gradients, so
    steps build up speed along directions where the gradients agree and
    cancel where they oscillate. Nesterov momentum evaluates the step "one
    momentum step ahead"; it needs ``momentum > 0`` and ``dampening == 0``.

    Args: ``params`` (tensors or parameter groups), ``lr`` (the learning rate,
    required), ``momentum`` (>= 0), ``dampening``, ``weight_decay`` (>= 0),
    ``nesterov``, ``maximize``.

    State per parameter: ``"momentum_buffer"`` (only when momentum != 0).
    The arithmetic is :func:`minigrad.optim.functional.sgd_update`.
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float = required,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
    ) -> None:
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        check_number("SGD", "lr", group["lr"], hint="lr=0.1 for SGD, 0.01 with momentum=0.9")
        check_number("SGD", "momentum", group["momentum"], hint="momentum=0.9")
        check_number("SGD", "dampening", group["dampening"], 0.0, 1.0)
        check_number("SGD", "weight_decay", group["weight_decay"], hint="weight_decay=5e-4")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(
                f"SGD: nesterov=True needs momentum > 0 and dampening = 0, got momentum={group['momentum']!r} "
                f"and dampening={group['dampening']!r}"
            )

    def _update(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        buf = state.get("momentum_buffer")
        arrays = (p._data, p.grad._data, None if buf is None else buf._data)
        new_buf = run_update("sgd", p, functional.sgd_update, arrays, {
            "lr": group["lr"],
            "momentum": group["momentum"],
            "dampening": group["dampening"],
            "weight_decay": group["weight_decay"],
            "nesterov": group["nesterov"],
            "maximize": group["maximize"],
        })
        if buf is None and new_buf is not None:  # the first step made the buffer
            state["momentum_buffer"] = buf = self._wrap_state(new_buf, p)
        _bump(p, buf)
