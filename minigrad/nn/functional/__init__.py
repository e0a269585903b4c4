"""``minigrad.nn.functional`` (``import minigrad.nn.functional as F``): the layers as plain functions.

The modules of :mod:`minigrad.nn` hold parameters and call these. Each heavy
op is one custom :class:`~minigrad.tensor.Function` with a hand-written,
vectorised backward pass:

================================  ===========================================
``conv2d``                        im2col + one matmul; backward matmul + col2im (:mod:`.conv`)
``max_pool2d``, ``avg_pool2d``    a loop over the kernel's taps, not the pixels (:mod:`.pooling`)
``batch_norm``                    closed-form backward (:mod:`.normalization`)
``cross_entropy``                 fused, stable log-softmax + NLL (:mod:`.loss`)
``dropout``                       keeps only a boolean mask (:mod:`.dropout`)
================================  ===========================================

``linear``, the activations, ``softmax``/``log_softmax``, ``mse_loss``,
``one_hot``, ``pad`` and ``flatten`` are built from the tensor core's ops.
Names and signatures follow ``torch.nn.functional``.
"""

from minigrad.nn.functional.activation import gelu, leaky_relu, log_softmax, relu, sigmoid, softmax, tanh
from minigrad.nn.functional.conv import conv2d
from minigrad.nn.functional.dropout import dropout
from minigrad.nn.functional.linear import linear
from minigrad.nn.functional.loss import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss
from minigrad.nn.functional.normalization import batch_norm
from minigrad.nn.functional.pooling import avg_pool2d, max_pool2d
from minigrad.tensor import flatten, one_hot, pad

__all__ = [
    "linear", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm", "dropout",
    "relu", "leaky_relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax",
    "cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits",
    "one_hot", "pad", "flatten",
]
