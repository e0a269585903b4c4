"""``torch.nn.modules.module``'s names: :class:`Module` and the global module hooks (see ``nn/module_hooks.py``)."""

from minigrad.nn.module import Module
from minigrad.nn.module_hooks import (
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_parameter_registration_hook,
)

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_parameter_registration_hook", "register_module_buffer_registration_hook"]
