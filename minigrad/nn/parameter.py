"""``Parameter``: a tensor that a ``Module`` learns.

A Parameter is an ordinary leaf :class:`~minigrad.tensor.Tensor` with
``requires_grad=True``; the class exists so that a ``Module`` can tell, when
you write ``self.weight = Parameter(...)``, that this tensor is to be trained
(returned by ``parameters()``, saved in ``state_dict()``, moved by ``to()``).
Results of ops on parameters are plain tensors.
"""

from __future__ import annotations

from minigrad.tensor import Tensor, empty

__all__ = ["Parameter"]


class Parameter(Tensor):
    """``Parameter(data, requires_grad=True)``: shares ``data``'s memory (like PyTorch) and requires grad.

    ``data`` is a Tensor (or anything ``tensor()`` accepts, which is copied).
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        elif not isinstance(data, Tensor):
            data = Tensor(data)
        if data.grad_fn is not None:
            data = data.detach()
        self._data = data._data  # the same memory: no copy
        self._device = data._device
        self._requires_grad = False
        self._grad = None
        self.grad_fn = None
        self._version_counter = data._version_counter
        self._accum = None
        self._base = None
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach().cpu().numpy().copy(), str(self.device), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        copy = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            copy.grad = self.grad.clone()
        memo[id(self)] = copy
        return copy


def _rebuild_parameter(array, device: str, requires_grad: bool) -> Parameter:
    return Parameter(Tensor(array, device=device), requires_grad)
