"""The fused kernels behind the core's ops on a device: where fusion saves memory traffic.

Registered through the core's extension points, never by patching the ops:
:func:`~minigrad.tensor.dispatch.register_op_impl` for ``relu``, ``linear``
and ``cross_entropy``, :func:`~minigrad.optim.register_update_kernel` for Adam.
Matmul needs nothing here: on CuPy arrays the core's ``@`` is ``cupy.matmul``,
i.e. cuBLAS.

- ``relu`` backward + the bias gradient of the ``linear`` node before it:
  one pass (``bias_relu_backward``) reads ``grad`` and ``out``, writes the
  ReLU's input gradient and sums its columns, which is exactly the bias
  gradient of a linear layer whose output the ReLU took. The ReLU node hands
  that sum to its linear node, whose backward then skips its own pass over
  the gradient - only if the gradient it receives is the very array the
  ReLU returned (the ReLU was its only consumer; a sum of several consumers'
  gradients is a new array). Without a linear node before it, the ReLU still
  saves the boolean mask the default path writes and reads back. The
  forward stays ``maximum`` (fusing bias + ReLU forward needs one node for
  both, which nn does not build).
- ``cross_entropy`` (:class:`CrossEntropyFunction`, the node without
  ``ignore_index`` or label smoothing; mean over the rows): the loss and each
  row's logsumexp in one kernel, the gradient in another; the
  ``(rows, classes)`` log-probabilities of the default path are never stored.
  The options' node keeps its own code.
- Adam / AdamW (no ``amsgrad``, no ``maximize``): one pass over param, grad,
  m and v instead of about a dozen.

Every other case (another dtype, an option the kernel lacks) takes the op's
own code, unchanged. A :class:`FusedKernels` says which arrays the kernels
take: :data:`CUDA_KERNELS` (float32, the ``minigrad.gpu.kernels``) for
``"cuda"``; the test suites register
:data:`~minigrad.testing.reference_kernels.REFERENCE_KERNELS` for the strict
test device, so this glue code runs under the tensor and nn suites without a
GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from minigrad.gpu import kernels
from minigrad.nn.functional.linear import LinearFunction
from minigrad.nn.functional.loss import CrossEntropyFunction
from minigrad.optim import functional as optim_functional
from minigrad.optim import register_update_kernel
from minigrad.tensor.dispatch import register_op_impl, unregister_op_impl
from minigrad.tensor.fast_float16 import product
from minigrad.tensor.ops.elementwise import Relu

__all__ = ["FusedKernels", "CUDA_KERNELS", "register_fused_ops", "unregister_fused_ops"]


@dataclass(frozen=True)
class FusedKernels:
    """The kernels one device type runs the fused ops with; arrays in and out are on that device.

    ``dtypes``: the floating dtypes they compute in (other dtypes take the
    default path). Signatures are those of :mod:`minigrad.gpu.kernels`.
    """

    dtypes: tuple
    bias_relu_backward: Callable
    softmax_cross_entropy: Callable
    softmax_cross_entropy_grad: Callable
    adam_step: Callable


CUDA_KERNELS = FusedKernels(
    dtypes=(np.dtype(np.float32),),
    bias_relu_backward=kernels.fused_bias_relu_backward,
    softmax_cross_entropy=kernels.softmax_cross_entropy,
    softmax_cross_entropy_grad=kernels.softmax_cross_entropy_grad,
    adam_step=kernels.fused_adam_step,
)


def _relu_impl(k: FusedKernels):
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        if out.ndim == 0 or out.size == 0 or out.dtype not in k.dtypes or grad.dtype != out.dtype:
            return Relu.backward(ctx, grad)
        cols = out.shape[-1]
        grad_x, grad_bias = k.bias_relu_backward(grad.reshape(-1, cols), out.reshape(-1, cols))
        grad_x = grad_x.reshape(out.shape)
        producer = ctx._parents[0]
        if type(producer) is LinearFunction:  # the ReLU's input is that node's output, of the same shape
            producer.bias_grad_from_relu = (grad_x, grad_bias)
        return grad_x

    return Relu.forward, backward


def _linear_backward(ctx, grad):
    handed = getattr(ctx, "bias_grad_from_relu", None)
    if handed is not None:
        ctx.bias_grad_from_relu = None
    need_x, need_w, need_b = ctx.needs_input_grad
    if handed is None or handed[0] is not grad or not need_b:
        return LinearFunction.backward(ctx, grad)
    x, weight = ctx.saved_tensors
    dx = product(grad, weight) if need_x else None
    dw = product(grad.reshape(-1, grad.shape[-1]).T, x.reshape(-1, x.shape[-1])) if need_w else None
    return dx, dw, handed[1]


def _cross_entropy_impl(k: FusedKernels):
    def forward(ctx, logits, target, reduction):
        fused = reduction == "mean" and logits.shape[0] > 0 and logits.dtype in k.dtypes
        ctx.fused = fused
        if not fused:
            return CrossEntropyFunction.forward(ctx, logits, target, reduction)
        loss, logsumexp = k.softmax_cross_entropy(logits, target)
        ctx.save_for_backward(logits, target, logsumexp)
        return loss.reshape(())

    def backward(ctx, grad):
        if not getattr(ctx, "fused", False):
            return CrossEntropyFunction.backward(ctx, grad)
        logits, target, logsumexp = ctx.saved_tensors
        return k.softmax_cross_entropy_grad(logits, target, logsumexp, grad), None, None

    return forward, backward


def _adam_impl(k: FusedKernels):
    def adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq=None, *, step, lr, beta1, beta2, eps,
             weight_decay=0.0, decoupled_weight_decay=False, amsgrad=False, maximize=False):
        arrays = (param, grad, exp_avg, exp_avg_sq)
        if (amsgrad or maximize or any(a.dtype not in k.dtypes for a in arrays)
                or not all(a.flags.c_contiguous for a in (param, exp_avg, exp_avg_sq))):
            return optim_functional.adam_update(
                param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step=step, lr=lr, beta1=beta1, beta2=beta2,
                eps=eps, weight_decay=weight_decay, decoupled_weight_decay=decoupled_weight_decay,
                amsgrad=amsgrad, maximize=maximize,
            )
        k.adam_step(param, grad, exp_avg, exp_avg_sq, step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                    weight_decay=weight_decay, decoupled_weight_decay=decoupled_weight_decay)
        return None

    return adam


def register_fused_ops(device_type: str, fused: FusedKernels) -> None:
    """Run relu's backward (with the bias gradient of linear), cross-entropy and Adam with ``fused``'s kernels."""
    register_op_impl(Relu, device_type, *_relu_impl(fused))
    register_op_impl(LinearFunction, device_type, LinearFunction.forward, _linear_backward)
    register_op_impl(CrossEntropyFunction, device_type, *_cross_entropy_impl(fused))
    register_update_kernel("adam", device_type, _adam_impl(fused))


def unregister_fused_ops(device_type: str) -> None:
    """Give ``device_type`` the ops' default code back."""
    unregister_op_impl(Relu, device_type)
    unregister_op_impl(LinearFunction, device_type)
    unregister_op_impl(CrossEntropyFunction, device_type)
    register_update_kernel("adam", device_type, None)
