"""Hostile: answers that are objects whose comparisons and conversions lie."""


class Liar(float):
    def __eq__(self, other):
        return True

    __ne__ = lambda self, other: False
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __float__ = lambda self: 0.0
    __hash__ = float.__hash__
    __abs__ = lambda self: self
    __sub__ = __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = lambda self, other: self

    def __array__(self, *args, **kwargs):
        import numpy as np

        return np.zeros(())


class LyingList(list):
    def __len__(self):
        return 200_001

    def __iter__(self):
        return iter([])

    def __eq__(self, other):
        return True

    __hash__ = None


class Value:
    def __init__(self, data, _children=(), _local_grads=(), _op="", label=""):
        self.data, self.grad = Liar(data), Liar(0.0)
        self._children, self._local_grads = LyingList(), LyingList()

    def _op(self, *args):
        return Value(0.0)

    __add__ = __radd__ = __mul__ = __rmul__ = __pow__ = __rpow__ = __sub__ = __rsub__ = __truediv__ = _op
    __rtruediv__ = tanh = exp = log = relu = sigmoid = __neg__ = _op

    def backward(self):
        pass


def topological_order(root):
    return LyingList([root])
