"""The op catalogue: every differentiable op of the tensor core, each a :class:`~minigrad.tensor.function.Function`.

The ops sit above the core (``tensor.py``, ``function.py``, the backward
pass), which imports none of them: each op module registers the functions the
Tensor's methods call in the op table (:mod:`minigrad.tensor.op_table`) when it
is imported. ``minigrad.tensor`` imports them all.
"""
