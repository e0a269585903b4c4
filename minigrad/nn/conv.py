"""Convolution and pooling layers: ``Conv2d``, ``MaxPool2d``, ``AvgPool2d`` (the maths is in ``functional``)."""

from __future__ import annotations

from minigrad.nn import functional as F
from minigrad.nn import init
from minigrad.nn.functional._utils import pair
from minigrad.nn.functional.conv import check_conv_input
from minigrad.nn.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import ShapeError, Tensor, empty

__all__ = ["Conv2d", "MaxPool2d", "AvgPool2d"]


def _compact(value) -> str:
    """``(5, 5) -> "5"``, ``(3, 5) -> "(3, 5)"``: how a user would have written a size."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == value[1]:
        return str(value[0])
    return repr(value)


class Conv2d(Module):
    """2-D convolution over (N, C_in, H, W) images: (N, C_out, Ho, Wo), as ``torch.nn.Conv2d``.

    ``weight`` is (out_channels, in_channels, kh, kw), ``bias`` (out_channels,).
    Initialised like PyTorch (``kaiming_uniform_(a=sqrt(5))``: uniform in
    +-1/sqrt(in_channels*kh*kw), the bias too). ``groups`` other than 1 and
    padding modes other than ``"zeros"`` are not implemented. ``generator=``
    (a numpy Generator or an int seed) is a minigrad addition.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None, generator=None):
        super().__init__()
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Conv2d: {name} must be a positive int, got {value!r}")
        if groups != 1:
            raise NotImplementedError(f"Conv2d: groups={groups} is not implemented in minigrad; only groups=1")
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d: padding_mode={padding_mode!r} is not implemented; only 'zeros'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = pair(kernel_size, "kernel_size", "Conv2d")
        self.stride = pair(stride, "stride", "Conv2d")
        self.padding = padding if isinstance(padding, str) else pair(padding, "padding", "Conv2d")
        self.dilation = pair(dilation, "dilation", "Conv2d")
        self.groups = groups
        self.padding_mode = padding_mode
        kh, kw = self.kernel_size
        self.weight = Parameter(empty(out_channels, in_channels, kh, kw, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        init.default_layer_init_(self.weight, self.bias, generator)

    def describe(self) -> str:
        """The layer as one would write it, for error messages: ``Conv2d(1, 8, kernel_size=5)``."""
        text = f"Conv2d({self.in_channels}, {self.out_channels}, kernel_size={_compact(self.kernel_size)}"
        if self.stride != (1, 1):
            text += f", stride={_compact(self.stride)}"
        if self.padding != (0, 0):
            text += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={_compact(self.padding)}"
        if self.dilation != (1, 1):
            text += f", dilation={_compact(self.dilation)}"
        return text + ")"

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"{self.describe()}: the input must be a Tensor, got {type(x).__name__}")
        if not (x.ndim == 3 and x.shape[0] == self.in_channels):  # an unbatched (C, H, W) image is allowed
            check_conv_input(x, self.in_channels, self.describe())
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, _who=self.describe())

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.bias is None:
            text += ", bias=False"
        return text


def _pool_input_check(x, who: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: the input must be a Tensor, got {type(x).__name__}")
    if x.ndim not in (3, 4):
        raise ShapeError(
            f"{who}: expected input (N, C, H, W) or (C, H, W), got {tuple(x.shape)}"
            + (" — pool before flattening, or reshape to (N, C, H, W)" if x.ndim == 2 else "")
        )


class MaxPool2d(Module):
    """The maximum over each ``kernel_size`` window, moved by ``stride`` (default: ``kernel_size``).

    ``dilation``, ``return_indices`` and ``ceil_mode`` are not implemented.
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        if dilation not in (1, (1, 1)) or return_indices or ceil_mode:
            raise NotImplementedError("MaxPool2d: dilation, return_indices and ceil_mode are not implemented in minigrad")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        _pool_input_check(x, f"MaxPool2d(kernel_size={self.kernel_size})")
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """The mean over each ``kernel_size`` window, moved by ``stride`` (default: ``kernel_size``)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        if ceil_mode:
            raise NotImplementedError("AvgPool2d: ceil_mode is not implemented in minigrad")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        _pool_input_check(x, f"AvgPool2d(kernel_size={self.kernel_size})")
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
