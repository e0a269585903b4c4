"""``ModuleList`` and ``ModuleDict``: containers whose modules the parent sees, as in PyTorch.

A plain Python list or dict of layers hides their parameters from
``Module.__setattr__`` (it registers only a Parameter or a Module); these two
containers are Modules that register each element under its index or key.
They add no idea beyond chapter 05's registration, so they live outside the
reading path.
"""

from __future__ import annotations

from typing import Iterator

from minigrad.nn.module import Module

__all__ = ["ModuleList", "ModuleDict"]


class ModuleList(Module):
    """A list of modules whose parameters the parent module sees (a plain Python list would hide them).

    It has no ``forward``: iterate over it in your own ``forward``.
    """

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _key(self, index: int) -> str:
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"ModuleList index {index} is out of range for {n} modules")
        return str(index % n)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[self._key(index)]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(self._key(index), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> ModuleList:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList.append: expected a Module, got {type(module).__name__}")
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """A dict of modules whose parameters the parent module sees."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            for name, m in dict(modules).items():
                self[name] = m

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()
