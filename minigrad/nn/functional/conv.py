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

The backward pass is the backward pass of a Linear layer (chapter 05) on
these matrices, with the output gradient laid out like ``out``, one row per
output pixel: it gives the gradients of ``W2``, of the bias and of ``cols``.
One step is new: ``cols`` is not the input, it was *copied* from it.

An input pixel was copied into several patches (once per filter tap that
covers it), so its gradient is the *sum* of the gradients of its copies:
**col2im** adds the gradient of every copy back into the input gradient, where
it was read from. It loops over the ``kh*kw`` taps only; each
step is one vectorised add over the whole batch.

The node saves ``cols`` (``kh*kw`` times the input's size: the price of one
big matrix product, a trade-off chapter 08 measures) and the weight.

This file is the clear version, the one to read. The library runs the same
computation with faster memory orders from :mod:`.conv_fast` (a speed path,
tested equal to this one) whenever the functions here are its own; a
learner's ``im2col``, ``col2im`` or backward, put in by ``use_exercise``,
always runs as written.
"""

from __future__ import annotations

from minigrad.nn.functional._utils import (
    as_strided, check_float, check_same_dtype, check_tensor, library_defines, pair,
)
from minigrad.nn.functional.conv_fast import FastConv2dFunction
from minigrad.tensor import Function, ShapeError, Tensor, array_module

__all__ = ["conv2d", "im2col", "col2im", "conv_output_size", "check_conv_input", "Conv2dFunction"]


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """How many positions a (dilated) kernel takes along one dimension: PyTorch's formula."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def pad_input(x, padding: tuple[int, int]):
    """``x`` (N, C, H, W) with ``padding`` rows and columns of zeros around each image (``x`` itself if none)."""
    ph, pw = padding
    if ph == 0 and pw == 0:
        return x
    N, C, H, W = x.shape
    padded = array_module(x).zeros((N, C, H + 2 * ph, W + 2 * pw), dtype=x.dtype)
    padded[:, :, ph : ph + H, pw : pw + W] = x
    return padded


def im2col(x, kernel_size: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int]):
    """The patches of an (already padded) ``x`` (N, C, H, W) as a matrix (N*Ho*Wo, kh*kw*C).

    Row ``(n, oh, ow)`` holds the values under the kernel at output pixel
    ``(oh, ow)`` of image ``n``, ordered (tap row i, tap column j, channel c):
    ``x[n, c, oh*sh + i*dh, ow*sw + j*dw]``. ``x`` may be any strided view.
    """
    N, C, H, W = x.shape
    kh, kw = kernel_size
    sh, sw = stride
    dh, dw = dilation
    Ho = conv_output_size(H, kh, sh, 0, dh)
    Wo = conv_output_size(W, kw, sw, 0, dw)
    sN, sC, sH, sW = x.strides  # bytes to step along each dimension of x
    ### BEGIN SOLUTION 6.1 | the six-dimensional shape of the windows view, and for each of its indices how many bytes one step of it moves in x (chapter 03's strides, in bytes)
    shape = (N, Ho, Wo, kh, kw, C)
    strides = (sN, sH * sh, sW * sw, sH * dh, sW * dw, sC)
    ### END SOLUTION
    windows = as_strided(x, shape, strides)  # a view: nothing is copied yet
    return windows.reshape(N * Ho * Wo, kh * kw * C)  # the only copy


def col2im(dcols, padded_shape, kernel_size, stride, dilation):
    """The adjoint of :func:`im2col`: add each entry of ``dcols`` back to the input element it was copied from.

    ``dcols`` is (N*Ho*Wo, kh*kw*C), ordered as :func:`im2col`'s matrix;
    returns the gradient of the padded input, (N, C, Hp, Wp). Where windows
    overlap an element was copied several times, so its gradients add up.
    """
    N, C, Hp, Wp = padded_shape
    kh, kw = kernel_size
    sh, sw = stride
    dh, dw = dilation
    Ho = conv_output_size(Hp, kh, sh, 0, dh)
    Wo = conv_output_size(Wp, kw, sw, 0, dw)
    patches = dcols.reshape(N, Ho, Wo, kh, kw, C)  # [n, oh, ow, i, j, c], as im2col laid them out
    dx = array_module(dcols).zeros((N, Hp, Wp, C), dtype=dcols.dtype)  # channels last, indexed like the patches
    ### BEGIN SOLUTION 6.2 | one vectorised step per kernel tap (i, j): which input rows and columns did that tap read, over all output pixels? Send its gradients back there, without losing what other taps sent
    for i in range(kh):
        for j in range(kw):
            rows_read = slice(i * dh, i * dh + sh * (Ho - 1) + 1, sh)
            cols_read = slice(j * dw, j * dw + sw * (Wo - 1) + 1, sw)
            dx[:, rows_read, cols_read, :] += patches[:, :, :, i, j, :]
    ### END SOLUTION
    return dx.transpose(0, 3, 1, 2)


class Conv2dFunction(Function):
    """``conv2d(x, weight, bias)`` as one node: im2col + matmul forward, matmul + col2im backward."""

    op = "conv2d"

    def forward(ctx, x, weight, bias, stride, padding, dilation):
        N, C, H, W = x.shape
        O, _, kh, kw = weight.shape
        Ho = conv_output_size(H, kh, stride[0], padding[0], dilation[0])
        Wo = conv_output_size(W, kw, stride[1], padding[1], dilation[1])
        padded = pad_input(x, padding)
        cols = im2col(padded, (kh, kw), stride, dilation)  # (N*Ho*Wo, kh*kw*C)
        w2 = weight.transpose(0, 2, 3, 1).reshape(O, kh * kw * C)  # one row per filter, taps ordered (i, j, c) like cols
        out = cols @ w2.T  # (N*Ho*Wo, O): one row per output pixel, one column per filter
        if bias is not None:
            out += bias
        ctx.save_for_backward(cols, weight)
        ctx.geometry = (x.shape, padded.shape, (kh, kw), stride, padding, dilation)
        return array_module(x).ascontiguousarray(out.reshape(N, Ho, Wo, O).transpose(0, 3, 1, 2))

    def backward(ctx, grad):
        """From ``grad`` (N, O, Ho, Wo): ``dx`` like the unpadded input, ``dw`` (O, C, kh, kw) and ``db`` (O,)."""
        cols, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        x_shape, padded_shape, kernel, stride, (ph, pw), dilation = ctx.geometry
        O, C, kh, kw = weight.shape
        H, W = x_shape[2], x_shape[3]
        ### BEGIN SOLUTION 6.2 | the output gradient as a matrix with one row per output pixel (the rows of cols), then the three gradients of a Linear layer's product (chapter 05); the input's goes through col2im, then loses the padding
        g = grad.transpose(0, 2, 3, 1).reshape(-1, O)  # (N*Ho*Wo, O)
        dw = (g.T @ cols).reshape(O, kh, kw, C).transpose(0, 3, 1, 2)
        db = g.sum(axis=0)
        dcols = g @ weight.transpose(0, 2, 3, 1).reshape(O, kh * kw * C)
        dx = col2im(dcols, padded_shape, kernel, stride, dilation)[:, :, ph : ph + H, pw : pw + W]
        ### END SOLUTION
        return (dx if need_x else None), (dw if need_w else None), (db if need_b else None), None, None, None


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
    clear = (im2col, col2im, Conv2dFunction.backward)
    function = FastConv2dFunction if library_defines("conv.py", *clear) else Conv2dFunction  # the same numbers, faster
    out = function.apply(input, weight, bias, stride, padding, dilation)
    return out.squeeze(0) if unbatched else out
