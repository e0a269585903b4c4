"""2-D convolution as one matrix product: im2col forward, col2im backward.

A convolution slides a ``(C, kh, kw)`` filter over the input. The input values
under the filter at one output pixel ``(n, oh, ow)`` form a *patch* of
``kh*kw*C`` numbers, and that output pixel is the dot product of the patch with
each filter. Lay every patch out as one row of a matrix (**im2col**, "image to
columns") and the whole layer is a single matrix product, which BLAS runs fast::

    cols   = im2col(x)               (N*Ho*Wo, kh*kw*C)   one row per output pixel
    W2     = weight as a matrix      (O, kh*kw*C)         one row per filter, taps in the same order
    out    = cols @ W2.T + bias      (N*Ho*Wo, O)         -> reshaped to (N, O, Ho, Wo)

im2col has no Python loop over pixels: the patches are a *view* of the
(padded) input with six dimensions ``(N, Ho, Wo, kh, kw, C)``, made with
``as_strided`` by choosing the right strides; only the final ``reshape`` to a
matrix copies.

The backward pass is the same kind of product, as for a Linear layer. With
``G`` the output gradient as an ``(N*Ho*Wo, O)`` matrix::

    dW2   = G.T @ cols               (O, kh*kw*C)
    dbias = G.sum(0)                 (O,)
    dcols = G @ W2                   (N*Ho*Wo, kh*kw*C)
    dx    = col2im(dcols)

An input pixel was copied into several patches (once per filter tap that
covers it), so its gradient is the *sum* of the gradients of its copies:
**col2im** adds every tap's slice of ``dcols`` back into the right strided
window of the input gradient. It loops over the ``kh*kw`` taps only; each
step is one vectorised add over the whole batch.

Memory layout, for speed. NumPy copies and adds fastest along long
contiguous runs, so the same matrices are stored in one of two orders,
chosen by :func:`taps_first` from the number of channels and the output width:

- **rows first** (many channels, e.g. 16 channels of an 8-pixel-wide map):
  the padded input is copied to a channels-last buffer ``(N, H, W, C)``, each
  row of ``cols`` is one window (runs of ``C`` contiguous numbers), and the
  product ``cols @ W2.T`` is ``(N, Ho, Wo, O)``, channels-last;
- **taps first** (few channels, e.g. the 1-channel 28x28 MNIST input): ``cols``
  is stored column by column, each column one tap's shifted copy of the image
  (runs of ``Wo`` contiguous numbers), and the product is computed image by
  image, ``W2 @ cols_n.T`` (a batched matmul), giving ``(N, O, Ho, Wo)`` directly.

Either way the output has the input's memory format, PyTorch's rule: a
contiguous (N, C, H, W) input gives a contiguous output (so ``out.view(N, -1)``
works as in PyTorch), a channels-last input a channels-last one. In the
backward pass ``dcols`` is computed tap by tap, so that each of col2im's
``kh*kw`` adds reads one contiguous block, and with ``cols`` stored taps first
``dW2`` is summed image by image, which needs no transposing copy of ``G``. The bias gradient, a column sum of a
tall, narrow matrix, is a matrix-vector product with a vector of ones: BLAS does
it ~10x faster than NumPy's ``sum(axis=0)`` on such a shape. The node saves
``cols`` (``kh*kw`` times the input's size: the price of one big matrix
product, a trade-off chapter 08 measures) and the weight.
"""

from __future__ import annotations

from minigrad.nn.functional._utils import (
    as_strided,
    check_float,
    check_same_dtype,
    check_tensor,
    in_memory_format,
    is_channels_last,
    pair,
)
from minigrad.tensor import Function, ShapeError, Tensor, array_module
from minigrad.tensor.hooks import report_temporary
from minigrad.tensor.fast_float16 import product

__all__ = [
    "conv2d", "im2col", "col2im", "conv_output_size", "check_conv_input", "Conv2dFunction", "taps_first",
    "output_rows", "weight_gradient", "bias_gradient", "cols_gradient",
]


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """How many positions a (dilated) kernel takes along one dimension: PyTorch's formula."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def taps_first(channels: int, out_width: int) -> bool:
    """Store im2col's matrix column by column (one tap's shifted image per column) rather than window by window?

    Yes when a tap's row of output pixels (``out_width`` numbers) is a longer
    contiguous run to copy than a window's channels (``channels`` numbers).
    """
    return channels < out_width


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


def im2col(x, kernel_size: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int]):
    """The patches of an (already padded) ``x`` (N, C, H, W) as a matrix (N*Ho*Wo, kh*kw*C).

    Row ``(n, oh, ow)`` holds the values under the kernel at output pixel
    ``(oh, ow)`` of image ``n``, ordered (tap row i, tap column j, channel c).
    The matrix is stored row by row (C order) or, when :func:`taps_first`,
    column by column (Fortran order); the numbers are the same.
    """
    N, C, H, W = x.shape
    kh, kw = kernel_size
    sh, sw = stride
    dh, dw = dilation
    Ho = conv_output_size(H, kh, sh, 0, dh)
    Wo = conv_output_size(W, kw, sw, 0, dw)
    sN, sC, sH, sW = x.strides  # bytes to step along each dimension of x
    ### BEGIN SOLUTION 6.1 | windows[n, oh, ow, i, j, c] = x[n, c, oh*sh + i*dh, ow*sw + j*dw]: shape (N, Ho, Wo, kh, kw, C), and each stride is x's stride along the dimension that index moves in, times how far it moves
    shape = (N, Ho, Wo, kh, kw, C)
    strides = (sN, sH * sh, sW * sw, sH * dh, sW * dw, sC)
    ### END SOLUTION
    windows = as_strided(x, shape, strides)  # a view: nothing is copied yet
    if taps_first(C, Wo):  # the only copy, tap by tap: each tap's image is copied in runs along its rows
        return windows.transpose(3, 4, 5, 0, 1, 2).reshape(kh * kw * C, N * Ho * Wo).T
    return windows.reshape(N * Ho * Wo, kh * kw * C)  # the only copy, window by window


def _window_array(dcols, N: int, Ho: int, Wo: int, kh: int, kw: int, C: int):
    """``dcols`` as an (N, Ho, Wo, kh, kw, C) array, without a copy when it is a C- or Fortran-ordered matrix."""
    if dcols.ndim == 6:
        return dcols
    if dcols.flags.f_contiguous and not dcols.flags.c_contiguous:
        return dcols.T.reshape(kh, kw, C, N, Ho, Wo).transpose(3, 4, 5, 0, 1, 2)
    return dcols.reshape(N, Ho, Wo, kh, kw, C)


def col2im(dcols, padded_shape, kernel_size, stride, dilation):
    """The adjoint of :func:`im2col`: add each patch row of ``dcols`` back where it was read from.

    ``dcols`` is (N*Ho*Wo, kh*kw*C), or the same numbers as an
    (N, Ho, Wo, kh, kw, C) array; returns the gradient of the padded input,
    (N, C, Hp, Wp), as a view of an array stored channels-last when the
    channels are innermost in ``dcols``.
    """
    N, C, Hp, Wp = padded_shape
    kh, kw = kernel_size
    sh, sw = stride
    dh, dw = dilation
    Ho = conv_output_size(Hp, kh, sh, 0, dh)
    Wo = conv_output_size(Wp, kw, sw, 0, dw)
    patches = _window_array(dcols, N, Ho, Wo, kh, kw, C)
    xp = array_module(dcols)
    if C == 1 or patches.strides[5] < patches.strides[2]:  # channels innermost: add runs of channels
        dx = xp.zeros((N, Hp, Wp, C), dtype=dcols.dtype)
    else:  # image rows innermost: an (N, C, Hp, Wp) array, indexed as (N, Hp, Wp, C) below
        dx = xp.zeros((N, C, Hp, Wp), dtype=dcols.dtype).transpose(0, 2, 3, 1)
    ### BEGIN SOLUTION 6.2 | for each tap (i, j): the rows it read start at i*dh and step by sh (Ho of them), the columns start at j*dw and step by sw (Wo of them); add patches[:, :, :, i, j, :] into that slice of dx
    for i in range(kh):
        for j in range(kw):
            rows_read = slice(i * dh, i * dh + sh * (Ho - 1) + 1, sh)
            cols_read = slice(j * dw, j * dw + sw * (Wo - 1) + 1, sw)
            dx[:, rows_read, cols_read, :] += patches[:, :, :, i, j, :]
    ### END SOLUTION
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
        report_temporary(per_image)
        return report_temporary(per_image.sum(axis=0))
    g = output_rows(grad) if g is None else g
    return report_temporary(product(cols.T, g).T)  # computed as (cols.T @ g).T, the order BLAS runs faster


def bias_gradient(grad):
    """``grad`` summed over all but its channel dimension, (O,).

    Computed as products with a vector of ones: BLAS sums a tall, narrow matrix's
    columns ~10x faster than NumPy's ``sum(axis=0)``.
    """
    N, O, Ho, Wo = grad.shape
    xp = array_module(grad)
    if grad.flags.c_contiguous:  # each (image, channel) is a contiguous row of Ho*Wo numbers
        per_channel = product(grad.reshape(N * O, Ho * Wo), xp.ones(Ho * Wo, dtype=grad.dtype))
        return per_channel.reshape(N, O).sum(axis=0)
    g = output_rows(grad)
    return product(xp.ones(g.shape[0], dtype=g.dtype), g)


def cols_gradient(grad, weight, g=None):
    """``g @ W2``, the gradient of ``cols``, as an (N, Ho, Wo, kh, kw, C) array stored tap by tap.

    ``g`` is the output gradient ``grad`` as an (N*Ho*Wo, O) matrix (made here
    if needed and not given) and ``W2`` the weight as an (O, kh*kw*C) matrix.
    Stored tap-major, each of col2im's adds reads one contiguous block: with many
    channels one (N*Ho*Wo, O) @ (O, C) product per tap (a batched matmul), with
    few one (kh*kw*C, O) @ (O, Ho*Wo) product per image.
    """
    O, C, kh, kw = weight.shape
    N, _, Ho, Wo = grad.shape
    if taps_first(C, Wo):
        w2 = weight.transpose(0, 2, 3, 1).reshape(O, kh * kw * C)
        if grad.flags.c_contiguous:
            d = report_temporary(product(w2.T, grad.reshape(N, O, Ho * Wo)))  # (N, kh*kw*C, Ho*Wo)
            return d.reshape(N, kh, kw, C, Ho, Wo).transpose(0, 4, 5, 1, 2, 3)
        g = output_rows(grad) if g is None else g
        d = report_temporary(product(w2.T, g.T))  # (kh*kw*C, N*Ho*Wo)
        return d.reshape(kh, kw, C, N, Ho, Wo).transpose(3, 4, 5, 0, 1, 2)
    g = report_temporary(output_rows(grad) if g is None else g)
    w_taps = weight.transpose(2, 3, 0, 1).reshape(kh * kw, O, C)
    d = report_temporary(product(g, w_taps))  # (kh*kw, N*Ho*Wo, C): kh*kw times the input, the backward's largest
    return d.reshape(kh, kw, N, Ho, Wo, C).transpose(2, 3, 4, 0, 1, 5)


class Conv2dFunction(Function):
    """``conv2d(x, weight, bias)`` as one node: im2col + matmul forward, matmul + col2im backward."""

    op = "conv2d"

    def forward(ctx, x, weight, bias, stride, padding, dilation):
        N, C, H, W = x.shape
        O, _, kh, kw = weight.shape
        Ho = conv_output_size(H, kh, stride[0], padding[0], dilation[0])
        Wo = conv_output_size(W, kw, stride[1], padding[1], dilation[1])
        padded = report_temporary(pad_input(x, padding, channels_last=not taps_first(C, Wo)))  # x itself if no padding
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
        cols, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        x_shape, padded_shape, kernel, stride, padding, dilation = ctx.geometry
        O, C, kh, kw = weight.shape
        dx = dw = db = None
        ### BEGIN SOLUTION 6.2 | with g = output_rows(grad), (N*Ho*Wo, O), as for Linear: dW2 = g.T @ cols, reshaped (O, kh, kw, C) and transposed back to (O, C, kh, kw); db = g summed over rows; dx = col2im(g @ w2, ...) with w2 = weight.transpose(0, 2, 3, 1).reshape(O, -1) (taps ordered like cols), and the padding cropped off
        # g: (N*Ho*Wo, O), made once here for window-by-window cols; the helpers make it if they need it
        g = output_rows(grad) if cols.flags.c_contiguous and (need_w or need_x) else None
        if need_w:
            dw2 = weight_gradient(grad, cols, g)  # g.T @ cols, (O, kh*kw*C)
            dw = dw2.reshape(O, kh, kw, C).transpose(0, 3, 1, 2).copy()
        if need_b:
            db = bias_gradient(grad)  # g summed over its rows
        if need_x:
            dcols = cols_gradient(grad, weight, g)  # g @ w2, stored tap by tap
            dpadded = col2im(dcols, padded_shape, kernel, stride, dilation)
            ph, pw = padding
            H, W = x_shape[2], x_shape[3]
            dx = dpadded[:, :, ph : ph + H, pw : pw + W]
        ### END SOLUTION
        if dx is not None:  # in the input's memory layout, like the input
            dx = in_memory_format(dx, ctx.channels_last)
        return dx, dw, db, None, None, None


def check_conv_input(x: Tensor, in_channels: int, who: str) -> None:
    """Raise a ShapeError that names the layer, the shapes and a fix when ``x`` is not (N, in_channels, H, W)."""
    shape = tuple(x.shape)
    if x.ndim == 4 and shape[1] == in_channels:
        return
    text = f"{who}: expected input (N, {in_channels}, H, W), got {shape}"
    if x.ndim == 3 and in_channels == 1:
        hint = " — add a channel dimension with x.unsqueeze(1)"
    elif x.ndim == 4 and shape[3] == in_channels:
        hint = " — the channels seem to be last (N, H, W, C); move them with x.permute(0, 3, 1, 2)"
    elif x.ndim == 4:
        hint = f" — the input has {shape[1]} channels but the layer was built for {in_channels}"
    elif x.ndim == 2:
        side = int(round((shape[1] / in_channels) ** 0.5)) if shape[1] % in_channels == 0 else 0
        if side * side * in_channels == shape[1]:
            hint = f" — these look like flattened images; reshape with x.view(-1, {in_channels}, {side}, {side})"
        else:
            hint = " — reshape it to (N, C, H, W) images first"
    else:
        hint = " — convolutions take a batch of images (N, C, H, W)"
    raise ShapeError(text + hint)


def _padding(padding, kernel, dilation, stride, op: str) -> tuple[int, int]:
    if isinstance(padding, str):
        if padding == "valid":
            return 0, 0
        if padding == "same":
            if stride != (1, 1):
                raise ValueError(f"{op}: padding='same' needs stride 1, got stride={stride}")
            total = tuple(d * (k - 1) for d, k in zip(dilation, kernel))
            if any(t % 2 for t in total):
                raise NotImplementedError(
                    f"{op}: padding='same' with an even (dilated) kernel {kernel} needs uneven padding, which "
                    f"minigrad does not implement; pad explicitly with F.pad and use padding=0"
                )
            return total[0] // 2, total[1] // 2
        raise ValueError(f"{op}: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    ph, pw = pair(padding, "padding", op)
    if ph < 0 or pw < 0:
        raise ValueError(f"{op}: padding must be >= 0, got {padding!r}")
    return ph, pw


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups: int = 1, *, _who: str = "conv2d") -> Tensor:
    """2-D convolution of ``input`` (N, C, H, W) with ``weight`` (O, C, kh, kw): (N, O, Ho, Wo).

    As ``torch.nn.functional.conv2d``: ``stride``, ``padding`` (an int, a pair,
    ``"valid"`` or ``"same"``) and ``dilation`` are ints or (height, width)
    pairs. An unbatched input (C, H, W) gives an unbatched output. ``groups``
    other than 1 is not implemented.
    """
    op = _who
    check_tensor(input, "input", op)
    check_tensor(weight, "weight", op)
    if groups != 1:
        raise NotImplementedError(f"{op}: groups={groups} is not implemented in minigrad; only groups=1")
    if weight.ndim != 4:
        raise ShapeError(f"{op}: weight must be (out_channels, in_channels, kh, kw), got shape {tuple(weight.shape)}")
    O, C, kh, kw = weight.shape
    if bias is not None:
        check_tensor(bias, "bias", op)
        if tuple(bias.shape) != (O,):
            raise ShapeError(f"{op}: bias must have shape ({O},) (one per output channel), got {tuple(bias.shape)}")
    check_float(input, "input", op)
    check_same_dtype(op, input=input, weight=weight, bias=bias)
    unbatched = input.ndim == 3 and input.shape[0] == C
    if unbatched:
        input = input.unsqueeze(0)
    check_conv_input(input, C, op)
    stride = pair(stride, "stride", op)
    dilation = pair(dilation, "dilation", op)
    if min(stride) < 1 or min(dilation) < 1:
        raise ValueError(f"{op}: stride and dilation must be >= 1, got stride={stride}, dilation={dilation}")
    padding = _padding(padding, (kh, kw), dilation, stride, op)
    H, W = input.shape[2], input.shape[3]
    Ho = conv_output_size(H, kh, stride[0], padding[0], dilation[0])
    Wo = conv_output_size(W, kw, stride[1], padding[1], dilation[1])
    if Ho < 1 or Wo < 1:
        span = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
        raise ShapeError(
            f"{op}: the input is {H}x{W} ({H + 2 * padding[0]}x{W + 2 * padding[1]} with padding {padding}) "
            f"but the kernel spans {span[0]}x{span[1]}; the input must be at least as large as the kernel. "
            f"Use a smaller kernel, more padding, or larger images"
        )
    out = Conv2dFunction.apply(input, weight, bias, stride, padding, dilation)
    return out.squeeze(0) if unbatched else out
