"""``BatchNorm1d`` and ``BatchNorm2d``: normalise each channel with batch statistics (see ``functional.normalization``)."""

from __future__ import annotations

from minigrad.nn import functional as F
from minigrad.nn.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import ShapeError, Tensor, int64, no_grad, ones, tensor, zeros

__all__ = ["BatchNorm1d", "BatchNorm2d"]


class _BatchNorm(Module):
    """Shared by BatchNorm1d/2d, which differ only in the input shapes they accept."""

    _shapes = ""  # for error messages
    _ndims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None):
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features < 1:
            raise ValueError(f"{type(self).__name__}: num_features must be a positive int, got {num_features!r}")
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:  # start as the identity: scale 1, shift 0
            self.weight = Parameter(ones(num_features, dtype=dtype, device=device))
            self.bias = Parameter(zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def _check_input(self, x) -> None:
        who = f"{type(self).__name__}({self.num_features})"
        if not isinstance(x, Tensor):
            raise TypeError(f"{who}: the input must be a Tensor, got {type(x).__name__}")
        if x.ndim not in self._ndims:
            other = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d"}.get(x.ndim)
            hint = f" — use {other} for this shape" if other and other != type(self).__name__ else ""
            raise ShapeError(f"{who}: expected input {self._shapes}, got {tuple(x.shape)}{hint}")
        if x.shape[1] != self.num_features:
            raise ShapeError(
                f"{who}: expected {self.num_features} channels in dimension 1 of the input, got shape "
                f"{tuple(x.shape)}; build the layer with num_features={x.shape[1]} or check the layer before it"
            )

    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        factor = 0.0
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            # momentum=None: a plain average over all batches so far (PyTorch's "cumulative moving average")
            factor = self.momentum if self.momentum is not None else 1.0 / int(self.num_batches_tracked.item())
        use_batch_stats = self.training or self.running_mean is None
        update = self.training and self.track_running_stats
        return F.batch_norm(
            x,
            self.running_mean if (update or not self.training) else None,
            self.running_var if (update or not self.training) else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
            _who=f"{type(self).__name__}({self.num_features})",
        )

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) features or (N, C, L) sequences, per channel C."""

    _shapes = "(N, C) or (N, C, L)"
    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) images, per channel C (statistics over N, H and W)."""

    _shapes = "(N, C, H, W)"
    _ndims = (4,)
