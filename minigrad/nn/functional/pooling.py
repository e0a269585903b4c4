"""Max and average pooling over 2-D windows.

Pooling looks at one ``kh x kw`` window per output pixel and keeps its maximum
(max pooling) or its mean (average pooling). Like im2col, the windows are
strided slices of the input: the ``(i, j)`` *tap* of every window at once is
``x[:, :, i::sh, j::sw]`` (cut to ``Ho x Wo``). So both ops loop over the
``kh*kw`` taps only, each step vectorised over the whole batch:

- max: keep a running maximum and, for each output, *which tap* won
  (``argmax``, one small integer per output);
- average: add the taps up and divide.

Backward sends each output's gradient back through the taps: for max pooling
only to the element that won its window (the others did not affect the
output), for average pooling to every element of the window, divided by the
window's size. Overlapping windows (stride < kernel) make an input element
receive from several outputs, so the taps are *added* into the gradient.

Padding: max pooling pads with ``-inf`` (a padded element never wins), average
pooling with zeros (``count_include_pad`` chooses whether the padded zeros
count in the divisor). ``dilation``, ``ceil_mode`` and ``return_indices`` are not
implemented.

This file is the clear version. The library runs max pooling through
:mod:`.pooling_fast` (a speed path, tested equal to this one) whenever
``MaxPool2dFunction.backward`` is its own; a learner's, put in by
``use_exercise``, always runs as written.
"""

from __future__ import annotations

import numpy as np

from minigrad.nn.functional._utils import (
    check_float, check_tensor, is_channels_last, library_defines, pad_images, pair, window_tap, zeros_in_layout,
)
from minigrad.nn.functional.pooling_fast import FastMaxPool2dFunction
from minigrad.tensor import Function, ShapeError, Tensor, array_module

__all__ = ["max_pool2d", "avg_pool2d", "MaxPool2dFunction", "AvgPool2dFunction"]


class MaxPool2dFunction(Function):
    op = "max_pool2d"

    def forward(ctx, x, kernel_size, stride, padding, out_size):
        kh, kw = kernel_size
        padded = pad_images(x, padding, -np.inf)
        out = window_tap(padded, 0, 0, stride, out_size).copy()
        argmax = array_module(x).zeros(out.shape, dtype=np.int64)  # which tap holds the maximum, per output
        for k in range(1, kh * kw):  # tap k is (i, j) = (k // kw, k % kw)
            tap = window_tap(padded, k // kw, k % kw, stride, out_size)
            argmax[tap > out] = k  # strictly greater: on ties the first maximum wins, as in PyTorch
            array_module(x).maximum(out, tap, out=out)
        ctx.save_for_backward(argmax)
        ctx.geometry = (x.shape, padded.shape, kernel_size, stride, padding, out_size)
        return out

    def backward(ctx, grad):
        """``dx`` (N, C, H, W): each output's gradient at the element that won its window, added up over windows."""
        (argmax,) = ctx.saved_tensors
        x_shape, padded_shape, (kh, kw), stride, (ph, pw), out_size = ctx.geometry
        dx = array_module(grad).zeros(padded_shape, dtype=grad.dtype)
        ### BEGIN SOLUTION 6.3 | one vectorised step per tap of the window: which outputs did this tap win (the forward pass remembered), and where in dx does the tap sit? Windows may overlap
        for k in range(kh * kw):
            window = window_tap(dx, k // kw, k % kw, stride, out_size)
            window += grad * (argmax == k)
        ### END SOLUTION
        H, W = x_shape[2], x_shape[3]
        return dx[:, :, ph : ph + H, pw : pw + W], None, None, None, None


class AvgPool2dFunction(Function):
    op = "avg_pool2d"

    def forward(ctx, x, kernel_size, stride, padding, out_size, divisor):
        kh, kw = kernel_size
        if isinstance(divisor, np.ndarray):
            divisor = array_module(x).asarray(divisor, dtype=x.dtype)
        padded = pad_images(x, padding, 0)
        out = window_tap(padded, 0, 0, stride, out_size).copy(order="K")  # "K": keep the input's memory layout
        for k in range(1, kh * kw):
            out += window_tap(padded, k // kw, k % kw, stride, out_size)
        out /= divisor
        ctx.geometry = (x.shape, padded.shape, is_channels_last(x), kernel_size, stride, padding, out_size)
        if hasattr(divisor, "shape"):  # a count per window (count_include_pad=False): an array, kept as one
            ctx.save_for_backward(divisor)
        else:
            ctx.divisor = divisor
        return out

    def backward(ctx, grad):
        x_shape, padded_shape, channels_last, (kh, kw), stride, (ph, pw), out_size = ctx.geometry
        divisor = getattr(ctx, "divisor", None)
        if divisor is None:
            (divisor,) = ctx.saved_tensors
        dx = zeros_in_layout(padded_shape, grad, channels_last)
        share = grad / divisor  # every element of a window gets an equal share
        for k in range(kh * kw):
            window = window_tap(dx, k // kw, k % kw, stride, out_size)
            window += share
        H, W = x_shape[2], x_shape[3]
        return dx[:, :, ph : ph + H, pw : pw + W], None, None, None, None, None


def _pool_args(input, kernel_size, stride, padding, op):
    check_tensor(input, "input", op)
    check_float(input, "input", op)
    kernel = pair(kernel_size, "kernel_size", op)
    stride = kernel if stride is None or stride == () else pair(stride, "stride", op)
    padding = pair(padding, "padding", op)
    if min(kernel) < 1 or min(stride) < 1:
        raise ValueError(f"{op}: kernel_size and stride must be >= 1, got kernel_size={kernel}, stride={stride}")
    if padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2 or min(padding) < 0:
        raise ValueError(
            f"{op}: padding {padding} must be between 0 and half the kernel size {kernel} (PyTorch's rule)"
        )
    if input.ndim not in (3, 4):
        raise ShapeError(
            f"{op}: expected input (N, C, H, W) or (C, H, W), got shape {tuple(input.shape)}"
            + (" — reshape flattened images to (N, C, H, W) first" if input.ndim == 2 else "")
        )
    H, W = input.shape[-2], input.shape[-1]
    out_size = ((H + 2 * padding[0] - kernel[0]) // stride[0] + 1, (W + 2 * padding[1] - kernel[1]) // stride[1] + 1)
    if min(out_size) < 1:
        raise ShapeError(
            f"{op}: the input is {H}x{W} (with padding {padding}) but the window is {kernel[0]}x{kernel[1]}; "
            f"the output would be empty. Use a smaller kernel_size or pool fewer times"
        )
    return kernel, stride, padding, out_size


def _unsupported(op, **flags):
    for name, value in flags.items():
        if value:
            raise NotImplementedError(f"{op}: {name}={value!r} is not implemented in minigrad")


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """The maximum of each ``kernel_size`` window, moved by ``stride`` (default: the kernel size)."""
    op = "max_pool2d"
    if pair(dilation, "dilation", op) != (1, 1):
        raise NotImplementedError(f"{op}: dilation={dilation!r} is not implemented in minigrad")
    _unsupported(op, ceil_mode=ceil_mode, return_indices=return_indices)
    kernel, stride, padding, out_size = _pool_args(input, kernel_size, stride, padding, op)
    fast = library_defines("pooling.py", MaxPool2dFunction.backward)
    function = FastMaxPool2dFunction if fast else MaxPool2dFunction  # the same numbers, faster
    if input.ndim == 3:
        return function.apply(input.unsqueeze(0), kernel, stride, padding, out_size).squeeze(0)
    return function.apply(input, kernel, stride, padding, out_size)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """The mean of each ``kernel_size`` window, moved by ``stride`` (default: the kernel size).

    With padding, ``count_include_pad=True`` (the default) divides by the full
    window size; ``False`` divides by the number of real (non-padding) elements.
    """
    op = "avg_pool2d"
    _unsupported(op, ceil_mode=ceil_mode)
    kernel, stride, padding, out_size = _pool_args(input, kernel_size, stride, padding, op)
    if divisor_override is not None:
        divisor = float(divisor_override)
    elif count_include_pad or padding == (0, 0):
        divisor = float(kernel[0] * kernel[1])
    else:  # how many taps of each window land inside the image, per output row and column
        H, W = input.shape[-2], input.shape[-1]
        rows = [sum(0 <= o * stride[0] - padding[0] + i < H for i in range(kernel[0])) for o in range(out_size[0])]
        cols = [sum(0 <= o * stride[1] - padding[1] + j < W for j in range(kernel[1])) for o in range(out_size[1])]
        divisor = np.outer(rows, cols)  # (Ho, Wo), broadcast over (N, C)
    if input.ndim == 3:
        return AvgPool2dFunction.apply(input.unsqueeze(0), kernel, stride, padding, out_size, divisor).squeeze(0)
    return AvgPool2dFunction.apply(input, kernel, stride, padding, out_size, divisor)
