"""PyTorch's import paths for the module hooks: ``minigrad.nn.modules.module.register_module_forward_hook``."""

from minigrad.nn.modules import module

__all__ = ["module"]
