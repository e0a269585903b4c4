"""Small helpers shared by the functional ops: argument normalisation, checks, strided views and memory formats."""

from __future__ import annotations

import os

import numpy as np

from minigrad.tensor import DTypeError, Tensor, array_module, get_dtype_policy, is_floating_point

__all__ = [
    "pair", "check_tensor", "check_float", "check_same_dtype", "is_channels_last", "in_memory_format", "as_strided",
    "window_tap", "zeros_in_layout", "pad_images", "library_defines",
]

_FUNCTIONAL = os.path.dirname(os.path.abspath(__file__))


def pair(value, name: str, op: str) -> tuple[int, int]:
    """``3 -> (3, 3)``, ``(3, 5) -> (3, 5)``: the (height, width) form of a 2-D size argument."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value), int(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, (int, np.integer)) for v in value):
        return int(value[0]), int(value[1])
    raise TypeError(f"{op}: {name} must be an int or a pair of ints (height, width), got {value!r}")


def check_tensor(x, name: str, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{op}: {name} must be a Tensor, got {type(x).__name__}; wrap data with minigrad.tensor.tensor(...)"
        )
    return x


def check_float(x: Tensor, name: str, op: str) -> None:
    if not is_floating_point(x.dtype):
        raise DTypeError(f"{op}: {name} must be a floating point tensor, got {x.dtype} (shape {x.shape}); convert it with .float()")


def check_same_dtype(op: str, **tensors) -> None:
    """Raise when the given tensors (None skipped) do not share one dtype, as PyTorch's layers do.

    Skipped while a dtype policy is installed (mixed precision, chapter 09): the
    policy casts the operands of each op itself.
    """
    if get_dtype_policy() is not None:
        return
    given = {k: v for k, v in tensors.items() if v is not None}
    dtypes = {v.dtype for v in given.values()}
    if len(dtypes) > 1:
        listing = ", ".join(f"{k} is {v.dtype}" for k, v in given.items())
        raise DTypeError(
            f"{op}: {listing}; they must have the same dtype. Convert the input (x.float()) or the "
            f"layer (model.float() / model.double())"
        )


def is_channels_last(a) -> bool:
    """True when an (N, C, H, W) array stores its channels innermost, i.e. it is an (N, H, W, C) array in memory."""
    return a.ndim == 4 and (a.shape[1] == 1 or a.strides[1] == a.itemsize)


def in_memory_format(a, channels_last: bool):
    """``a`` (N, C, H, W) stored channels-last or contiguous, as asked (copied only when it is not already)."""
    xp = array_module(a)
    if channels_last:
        return a if is_channels_last(a) else xp.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    return xp.ascontiguousarray(a)


def as_strided(x, shape, strides, writeable: bool = False):
    """A view of ``x``'s memory with the given shape and strides (in bytes); NumPy or CuPy (always writeable)."""
    xp = array_module(x)
    if xp is np:
        return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=writeable)
    return xp.lib.stride_tricks.as_strided(x, shape, strides)  # CuPy has no writeable flag


def window_tap(a, i: int, j: int, stride, out_size):
    """Element (i, j) of every window of ``a`` (N, C, H, W): a strided (N, C, Ho, Wo) view."""
    (sh, sw), (Ho, Wo) = stride, out_size
    return a[:, :, i : i + sh * (Ho - 1) + 1 : sh, j : j + sw * (Wo - 1) + 1 : sw]


def zeros_in_layout(shape, like, channels_last: bool):
    """Zeros of (N, C, H, W) ``shape`` and ``like``'s dtype, stored channels-last if asked."""
    xp = array_module(like)
    if channels_last:
        N, C, H, W = shape
        return xp.zeros((N, H, W, C), dtype=like.dtype).transpose(0, 3, 1, 2)
    return xp.zeros(shape, dtype=like.dtype)


def pad_images(x, padding, value):
    """``x`` (N, C, H, W) with ``padding`` rows and columns of ``value`` around each image, in ``x``'s layout."""
    ph, pw = padding
    if ph == 0 and pw == 0:
        return x
    N, C, H, W = x.shape
    out = zeros_in_layout((N, C, H + 2 * ph, W + 2 * pw), x, is_channels_last(x))
    if value != 0:
        out[...] = value
    out[:, :, ph : ph + H, pw : pw + W] = x
    return out


def library_defines(file_name: str, *functions) -> bool:
    """True when every one of ``functions`` was defined in the library's own ``functional/<file_name>``.

    A speed path may replace an exercise's clear functions only then: a
    function swapped in by ``use_exercise``, or loaded from a learner's file
    by the grader, was defined elsewhere, and must run as written.
    """
    path = os.path.normcase(os.path.join(_FUNCTIONAL, file_name))
    return all(os.path.normcase(f.__code__.co_filename) == path for f in functions)
