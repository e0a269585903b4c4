"""Speed path of ``conv2d``: the same im2col convolution as :mod:`.conv`, with memory orders chosen for speed.

Read :mod:`.conv` first: it is the idea (im2col, one matrix product, col2im),
and exercises 6.1 and 6.2 are carved from it. This module computes the same
numbers faster, and ``conv2d`` runs it instead of the clear version whenever
the clear functions are the library's own (``_utils.library_defines``); under
``use_exercise``, or when grading, a learner's functions stand in for them and
the clear version runs, so the learner's code is what computes.
``tests/nn/test_nn_conv_fast.py`` checks both give the same outputs and gradients.

NumPy copies and adds fastest along long contiguous runs, so the im2col
matrix is stored in one of two orders, chosen by :func:`taps_first` from the
number of channels and the output width:

- **rows first** (many channels, e.g. 16 channels of an 8-pixel-wide map):
  the padded input is copied to a channels-last buffer ``(N, H, W, C)``, each
  row of ``cols`` is one window (runs of ``C`` contiguous numbers), and the
  product ``cols @ W2.T`` is ``(N, Ho, Wo, O)``, channels-last;
- **taps first** (few channels, e.g. the 1-channel 28x28 MNIST input): ``cols``
  is stored column by column, each column one tap's shifted copy of the image
  (runs of ``Wo`` contiguous numbers), and the product is computed image by
  image, ``W2 @ cols_n.T`` (a batched matmul), giving ``(N, O, Ho, Wo)`` directly.

Either way the output has the input's memory format, PyTorch's rule: a
contiguous (N, C, H, W) input gives a contiguous output, a channels-last input
a channels-last one. In the backward pass ``dcols`` is computed tap by tap, so
that each of col2im's ``kh*kw`` adds reads one contiguous block, and with
``cols`` stored taps first ``dW2`` is summed image by image, which needs no
transposing copy of ``G``. The bias gradient, a column sum of a tall, narrow
matrix, is a matrix-vector product with a vector of ones: BLAS does it ~10x
faster than NumPy's ``sum(axis=0)`` on such a shape. Products go through
``fast_float16.product`` (float16 multiplied in float32 on the CPU).

On float16 and bfloat16 operands the op computes in float32 and rounds once
(:mod:`minigrad.tensor.bfloat16_compute`); the node ``widens_saved_on_use``,
so backward widens the saved im2col matrix only for the weight-gradient
product, and with window-by-window ``cols`` it adds ``dcols`` into the
input's gradient one tap at a time (:func:`input_gradient_by_tap`): neither
is held whole in float32, so the step's memory stays about half of float32's.
"""

from __future__ import annotations

from minigrad.nn.functional._utils import as_strided, in_memory_format, is_channels_last
from minigrad.tensor import Function, array_module
from minigrad.tensor.bfloat16_compute import wide
from minigrad.tensor.fast_float16 import product
from minigrad.tensor.events import working_array

__all__ = [
    "FastConv2dFunction", "taps_first", "pad_input", "im2col", "col2im",
    "output_rows", "weight_gradient", "bias_gradient", "cols_gradient", "input_gradient_by_tap",
]

def taps_first(channels: int, out_width: int) -> bool:
    """Store im2col's matrix column by column (one tap's shifted image per column) rather than window by window?

    Yes when a tap's row of output pixels (``out_width`` numbers) is a longer
    contiguous run to copy than a window's channels (``channels`` numbers).
    """
    return channels < out_width


def _windows_out(size: int, kernel: int, stride: int, dilation: int) -> int:
    """How many windows fit along one dimension of an already padded input."""
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def pad_input(x, padding: tuple[int, int], channels_last: bool):
    """``x`` (N, C, H, W) zero-padded, stored channels-last (N, Hp, Wp, C) if asked, else (N, C, Hp, Wp).

    Returns ``x`` itself when there is no padding and its layout fits.
    """
    ph, pw = padding
    if ph == 0 and pw == 0 and (is_channels_last(x) or not channels_last):
        return x
    N, C, H, W = x.shape
    xp = array_module(x)
    if not channels_last:
        buffer = xp.zeros((N, C, H + 2 * ph, W + 2 * pw), dtype=x.dtype)
        buffer[:, :, ph : ph + H, pw : pw + W] = x
        return buffer
    buffer = xp.zeros((N, H + 2 * ph, W + 2 * pw, C), dtype=x.dtype)
    buffer[:, ph : ph + H, pw : pw + W, :] = x.transpose(0, 2, 3, 1)
    return buffer.transpose(0, 3, 1, 2)


def im2col(x, kernel_size, stride, dilation):
    """:func:`.conv.im2col`'s matrix (N*Ho*Wo, kh*kw*C), stored row by row or, when :func:`taps_first`, column by column."""
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel_size, stride, dilation
    Ho, Wo = _windows_out(H, kh, sh, dh), _windows_out(W, kw, sw, dw)
    sN, sC, sH, sW = x.strides
    taps = as_strided(x, (kh, kw, C, N, Ho, Wo), (sH * dh, sW * dw, sC, sN, sH * sh, sW * sw))  # a view
    if taps_first(C, Wo):  # the only copy, tap by tap: each tap's image is copied in runs along its rows
        return taps.reshape(kh * kw * C, N * Ho * Wo).T
    return taps.transpose(3, 4, 5, 0, 1, 2).reshape(N * Ho * Wo, kh * kw * C)  # the only copy, window by window


def _window_array(dcols, N: int, Ho: int, Wo: int, kh: int, kw: int, C: int):
    """``dcols`` as an (N, Ho, Wo, kh, kw, C) array, without a copy when it is a C- or Fortran-ordered matrix."""
    if dcols.ndim == 6:
        return dcols
    if dcols.flags.f_contiguous and not dcols.flags.c_contiguous:
        return dcols.T.reshape(kh, kw, C, N, Ho, Wo).transpose(3, 4, 5, 0, 1, 2)
    return dcols.reshape(N, Ho, Wo, kh, kw, C)


def col2im(dcols, padded_shape, kernel_size, stride, dilation):
    """:func:`.conv.col2im` for ``dcols`` in any of the orders made here (or as an (N, Ho, Wo, kh, kw, C) array).

    Returns the padded input's gradient (N, C, Hp, Wp) as a view of an array
    stored channels-last when the channels are innermost in ``dcols``.
    """
    N, C, Hp, Wp = padded_shape
    (kh, kw), (sh, sw), (dh, dw) = kernel_size, stride, dilation
    Ho, Wo = _windows_out(Hp, kh, sh, dh), _windows_out(Wp, kw, sw, dw)
    patches = _window_array(dcols, N, Ho, Wo, kh, kw, C)
    xp = array_module(dcols)
    if C == 1 or patches.strides[5] < patches.strides[2]:  # channels innermost: add runs of channels
        dx = xp.zeros((N, Hp, Wp, C), dtype=dcols.dtype)
    else:  # image rows innermost: an (N, C, Hp, Wp) array, indexed as (N, Hp, Wp, C) below
        dx = xp.zeros((N, C, Hp, Wp), dtype=dcols.dtype).transpose(0, 2, 3, 1)
    for i in range(kh):
        for j in range(kw):
            dx[:, i * dh : i * dh + sh * (Ho - 1) + 1 : sh, j * dw : j * dw + sw * (Wo - 1) + 1 : sw, :] += \
                patches[:, :, :, i, j, :]
    return dx.transpose(0, 3, 1, 2)


def output_rows(grad):
    """The output gradient (N, O, Ho, Wo) as the (N*Ho*Wo, O) matrix ``g``; free when it is channels-last."""
    return grad.transpose(0, 2, 3, 1).reshape(-1, grad.shape[1])


def weight_gradient(grad, cols, g=None):
    """``g.T @ cols``, the weight gradient as an (O, kh*kw*C) matrix (``g``: :func:`output_rows`, if already made).

    When ``cols`` is stored tap by tap and ``grad`` is contiguous, it is
    computed image by image, ``sum_n grad[n] @ cols[n]``: a batched product
    that needs no transposing copy of ``grad``.
    """
    N, O, Ho, Wo = grad.shape
    if cols.flags.f_contiguous and not cols.flags.c_contiguous and grad.flags.c_contiguous:
        P = Ho * Wo
        per_image = product(grad.reshape(N, O, P), cols.T.reshape(-1, N, P).transpose(1, 2, 0))  # (N, O, K)
        working_array(per_image)
        return working_array(per_image.sum(axis=0))
    g = output_rows(grad) if g is None else g
    return working_array(product(cols.T, g).T)  # computed as (cols.T @ g).T, the order BLAS runs faster


def bias_gradient(grad):
    """``grad`` summed over all but its channel dimension, (O,), as products with a vector of ones."""
    N, O, Ho, Wo = grad.shape
    xp = array_module(grad)
    if grad.flags.c_contiguous:  # each (image, channel) is a contiguous row of Ho*Wo numbers
        per_channel = product(grad.reshape(N * O, Ho * Wo), xp.ones(Ho * Wo, dtype=grad.dtype))
        return per_channel.reshape(N, O).sum(axis=0)
    g = output_rows(grad)
    return product(xp.ones(g.shape[0], dtype=g.dtype), g)


def cols_gradient(grad, weight, g=None):
    """``g @ W2``, the gradient of ``cols``, as an (N, Ho, Wo, kh, kw, C) array stored tap by tap.

    Stored tap-major, each of col2im's adds reads one contiguous block: with many
    channels one (N*Ho*Wo, O) @ (O, C) product per tap (a batched matmul), with
    few one (kh*kw*C, O) @ (O, Ho*Wo) product per image.
    """
    O, C, kh, kw = weight.shape
    N, _, Ho, Wo = grad.shape
    if taps_first(C, Wo):
        w2 = weight.transpose(0, 2, 3, 1).reshape(O, kh * kw * C)
        if grad.flags.c_contiguous:
            d = working_array(product(w2.T, grad.reshape(N, O, Ho * Wo)))  # (N, kh*kw*C, Ho*Wo)
            return d.reshape(N, kh, kw, C, Ho, Wo).transpose(0, 4, 5, 1, 2, 3)
        g = output_rows(grad) if g is None else g
        d = working_array(product(w2.T, g.T))  # (kh*kw*C, N*Ho*Wo)
        return d.reshape(kh, kw, C, N, Ho, Wo).transpose(3, 4, 5, 0, 1, 2)
    g = working_array(output_rows(grad) if g is None else g)
    w_taps = weight.transpose(2, 3, 0, 1).reshape(kh * kw, O, C)
    d = working_array(product(g, w_taps))  # (kh*kw, N*Ho*Wo, C): kh*kw times the input, the backward's largest
    return d.reshape(kh, kw, N, Ho, Wo, C).transpose(2, 3, 4, 0, 1, 5)


def input_gradient_by_tap(g, weight, padded_shape, kernel_size, stride, dilation):
    """``col2im(cols_gradient(grad, weight, g), ...)`` for window-by-window ``cols``, one tap at a time.

    Each tap's (N*Ho*Wo, C) slice of ``dcols`` is made and added into the
    input's gradient at once, so the whole ``dcols`` (kh*kw times the input)
    never exists. Used where the op computes in float32 for float16 or
    bfloat16 storage: there a whole ``dcols`` would be a float32 temporary
    twice the size the stored format's would be. The same products and adds,
    in the same order, so the same numbers.
    """
    O, C, kh, kw = weight.shape
    N, _, Hp, Wp = padded_shape
    (sh, sw), (dh, dw) = stride, dilation
    Ho, Wo = _windows_out(Hp, kh, sh, dh), _windows_out(Wp, kw, sw, dw)
    w_taps = weight.transpose(2, 3, 0, 1).reshape(kh * kw, O, C)
    dx = array_module(g).zeros((N, Hp, Wp, C), dtype=g.dtype)
    for i in range(kh):
        for j in range(kw):
            tap = working_array(product(g, w_taps[i * kw + j])).reshape(N, Ho, Wo, C)
            dx[:, i * dh : i * dh + sh * (Ho - 1) + 1 : sh, j * dw : j * dw + sw * (Wo - 1) + 1 : sw, :] += tap
    return dx.transpose(0, 3, 1, 2)


class FastConv2dFunction(Function):
    """``conv2d(x, weight, bias)`` as one node, as :class:`.conv.Conv2dFunction` but in the memory orders above."""

    op = "conv2d"
    widens_saved_on_use = True  # float16 / bfloat16 operands: see the module docstring

    def forward(ctx, x, weight, bias, stride, padding, dilation):
        N, C, H, W = x.shape
        O, _, kh, kw = weight.shape
        Wo = _windows_out(W + 2 * padding[1], kw, stride[1], dilation[1])
        padded = working_array(pad_input(x, padding, channels_last=not taps_first(C, Wo)))  # x itself if no padding
        Ho = _windows_out(padded.shape[2], kh, stride[0], dilation[0])
        cols = im2col(padded, (kh, kw), stride, dilation)  # (N*Ho*Wo, kh*kw*C)
        w2 = weight.transpose(0, 2, 3, 1).reshape(O, kh * kw * C)  # taps ordered (i, j, c) like cols
        if cols.flags.c_contiguous:  # window by window: the product is (N, Ho, Wo, O), channels-last
            out = product(cols, w2.T)
            if bias is not None:
                out += bias
            out = out.reshape(N, Ho, Wo, O).transpose(0, 3, 1, 2)
        else:  # tap by tap: one (O, K) @ (K, Ho*Wo) product per image gives (N, O, Ho, Wo) directly
            out = product(w2, cols.T.reshape(-1, N, Ho * Wo).transpose(1, 0, 2))
            if bias is not None:
                out += bias[:, None]
            out = out.reshape(N, O, Ho, Wo)
        ctx.save_for_backward(cols, weight)
        ctx.geometry = (x.shape, padded.shape, (kh, kw), stride, padding, dilation)
        ctx.channels_last = is_channels_last(x) and C > 1
        return in_memory_format(out, ctx.channels_last)  # PyTorch's rule: the output has the input's memory format

    def backward(ctx, grad):
        cols, weight = ctx.saved_tensors  # float16 / bfloat16 ones are widened where they are read
        weight = wide(weight)
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        x_shape, padded_shape, kernel, stride, padding, dilation = ctx.geometry
        O, C, kh, kw = weight.shape
        dx = dw = db = None
        # g: (N*Ho*Wo, O), made once here for window-by-window cols; the helpers make it if they need it
        g = output_rows(grad) if cols.flags.c_contiguous and (need_w or need_x) else None
        if need_w:
            dw2 = weight_gradient(grad, wide(cols), g)  # g.T @ cols, (O, kh*kw*C)
            dw = dw2.reshape(O, kh, kw, C).transpose(0, 3, 1, 2).copy()
        if need_b:
            db = bias_gradient(grad)  # g summed over its rows
        if need_x and ctx._storage is not None and g is not None:  # 16-bit storage: see input_gradient_by_tap
            dpadded = input_gradient_by_tap(g, weight, padded_shape, kernel, stride, dilation)
        elif need_x:
            dcols = cols_gradient(grad, weight, g)  # g @ w2, stored tap by tap
            dpadded = col2im(dcols, padded_shape, kernel, stride, dilation)
        if need_x:
            (ph, pw), H, W = padding, x_shape[2], x_shape[3]
            dx = in_memory_format(dpadded[:, :, ph : ph + H, pw : pw + W], ctx.channels_last)
        return dx, dw, db, None, None, None
