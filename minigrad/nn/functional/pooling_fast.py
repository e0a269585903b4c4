"""Speed path of ``max_pool2d``: the same max pooling as :mod:`.pooling`, on contiguous copies of the taps.

Read :mod:`.pooling` first: it is the idea, and exercise 6.3 is carved from
it. ``max_pool2d`` runs this version instead whenever the clear backward is
the library's own (``_utils.library_defines``); a learner's, under
``use_exercise`` or when grading, runs as written.
``tests/nn/test_nn_pooling_fast.py`` checks both give the same outputs and gradients.

An op on a strided tap reads one number in every ``sw``, which NumPy does
~7x slower than a contiguous run. So the forward pass gathers the taps once,
with one copy, into a ``(kh*kw, N, C, Ho, Wo)`` array (keeping runs of
channels for a channels-last input) and runs its loop on contiguous blocks;
the running ``argmax`` is updated with an elementwise maximum rather than a
masked assignment. When windows do not overlap, the backward pass writes
every tap of the gradient in one op, through a ``(kh, kw, N, C, Ho, Wo)`` view.
"""

from __future__ import annotations

import numpy as np

from minigrad.nn.functional._utils import (
    as_strided, in_memory_format, is_channels_last, pad_images, window_tap, zeros_in_layout,
)
from minigrad.tensor import Function, array_module
from minigrad.tensor.events import working_array

__all__ = ["FastMaxPool2dFunction"]


def _tap_views(a, kernel_size, stride, out_size, writeable: bool = False):
    """Every tap of every window at once: a (kh, kw, N, C, Ho, Wo) view of ``a`` (N, C, H, W)."""
    (kh, kw), (sh, sw), (Ho, Wo) = kernel_size, stride, out_size
    N, C = a.shape[:2]
    sN, sC, sH, sW = a.strides
    return as_strided(a, (kh, kw, N, C, Ho, Wo), (sH, sW, sN, sC, sH * sh, sW * sw), writeable=writeable)


def _gather_taps(a, kernel_size, stride, out_size):
    """The taps as a (kh*kw, N, C, Ho, Wo) array, one contiguous (N, C, Ho, Wo) block per tap, in ``a``'s layout."""
    xp = array_module(a)
    views = _tap_views(a, kernel_size, stride, out_size)
    if is_channels_last(a):  # keep runs of channels: copy as (kh, kw, N, Ho, Wo, C)
        taps = xp.ascontiguousarray(views.transpose(0, 1, 2, 4, 5, 3)).transpose(0, 1, 2, 5, 3, 4)
    else:
        taps = xp.ascontiguousarray(views)
    return taps.reshape((-1,) + taps.shape[2:])


class FastMaxPool2dFunction(Function):
    """:class:`.pooling.MaxPool2dFunction` on contiguous copies of the taps (same outputs, same gradients)."""

    op = "max_pool2d"

    def forward(ctx, x, kernel_size, stride, padding, out_size):
        kh, kw = kernel_size
        padded = pad_images(x, padding, -np.inf)
        xp = array_module(x)
        index_type = np.dtype(np.uint8 if kh * kw <= 256 else np.int64)
        taps = working_array(_gather_taps(padded, kernel_size, stride, out_size))  # one copy; then every step is contiguous
        out = taps[0].copy(order="K")  # "K": keep the input's memory layout
        argmax = xp.zeros_like(out, dtype=index_type)  # which tap holds the maximum, per output
        for k in range(1, kh * kw):
            better = taps[k] > out  # strictly: on ties the first maximum wins, as in PyTorch
            xp.maximum(out, taps[k], out=out)
            # argmax[better] = k, written as a (much faster) elementwise maximum: argmax < k so far
            xp.maximum(argmax, better * index_type.type(k), out=argmax)
        ctx.save_for_backward(argmax)
        ctx.geometry = (x.shape, padded.shape, is_channels_last(x), kernel_size, stride, padding, out_size)
        return out

    def backward(ctx, grad):
        (argmax,) = ctx.saved_tensors
        x_shape, padded_shape, channels_last, (kh, kw), stride, (ph, pw), out_size = ctx.geometry
        grad = in_memory_format(grad, is_channels_last(argmax))  # like argmax, so elementwise ops between them are fast
        dx = zeros_in_layout(padded_shape, grad, channels_last)
        xp = array_module(grad)
        if stride[0] >= kh and stride[1] >= kw:  # windows do not overlap: write every tap at once
            taps = xp.arange(kh * kw, dtype=argmax.dtype).reshape(kh, kw, 1, 1, 1, 1)
            xp.multiply(grad, argmax == taps, out=_tap_views(dx, (kh, kw), stride, out_size, writeable=True))
        else:  # overlapping windows: an element can win several windows, so add tap by tap
            for k in range(kh * kw):
                window = window_tap(dx, k // kw, k % kw, stride, out_size)
                window += grad * (argmax == k)
        H, W = x_shape[2], x_shape[3]
        return dx[:, :, ph : ph + H, pw : pw + W], None, None, None, None
