"""Reading the size arguments of the shape ops: ``f(2, 3)`` or ``f((2, 3))``, and one ``-1`` to infer."""

from __future__ import annotations

import numpy as np

from minigrad.tensor.errors import ShapeError
from minigrad.tensor.strides import numel

__all__ = ["sizes", "infer_shape"]


def sizes(args, op: str) -> tuple[int, ...]:
    """Accept ``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for s in args:
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"{op}: sizes must be ints, got {args!r}")
    return tuple(int(s) for s in args)


def infer_shape(shape: tuple[int, ...], x, op: str) -> tuple[int, ...]:
    """Fill in a single -1 so that the number of elements is unchanged."""
    total = x._data.size
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise ShapeError(f"{op}: shape {shape} is invalid: only one dimension can be -1 and sizes must be >= 0")
    known = numel(tuple(s for s in shape if s != -1))
    if unknown:
        if known == 0 or total % known:
            raise ShapeError(
                f"{op}: shape {shape} is invalid for a tensor of {total} elements (shape {x.shape}): "
                f"{total} is not a multiple of {known}"
            )
        shape = shape[: unknown[0]] + (total // known,) + shape[unknown[0] + 1 :]
    elif known != total:
        raise ShapeError(
            f"{op}: shape {shape} is invalid for a tensor of {total} elements (shape {x.shape}); "
            f"the product of the sizes must be {total} (use -1 for one size to have it inferred)"
        )
    return shape
