"""The graph's extension points under PyTorch's name (``torch.autograd.graph``): ``saved_tensors_hooks``."""

from minigrad.tensor.saved_tensors import saved_tensors_hooks

__all__ = ["saved_tensors_hooks"]
