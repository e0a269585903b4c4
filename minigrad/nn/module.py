"""``Module``: the base class of every layer and model, and the container ``Sequential``.

A module is an object with a ``forward`` method and some state. Assigning
attributes in ``__init__`` is all the bookkeeping you write::

    class Net(Module):
        def __init__(self):
            super().__init__()
            self.fc1 = Linear(784, 256)       # a Module: becomes a child
            self.fc2 = Linear(256, 10)
            self.scale = Parameter(ones(1))   # a Parameter: trained
            self.register_buffer("steps", zeros(1))  # a buffer: saved, not trained

        def forward(self, x):
            return self.fc2(relu(self.fc1(x))) * self.scale

``Module.__setattr__`` sorts what you assign into three dictionaries,
``_parameters``, ``_buffers`` and ``_modules``, so the module can walk its
tree: ``parameters()`` for the optimizer, ``state_dict()`` for checkpoints,
``train()``/``eval()`` for layers that behave differently when training,
``to()`` to move everything to a device. Names are dotted paths through the
tree (``"fc1.weight"``), exactly as in PyTorch, so checkpoints read like
PyTorch's.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Iterator

from minigrad.nn import module_hooks as _hooks
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor, as_tensor, device as as_device, no_grad
from minigrad.tensor.dtypes import as_dtype, is_floating_point
from minigrad.tensor.tensor import parse_to_args

__all__ = ["Module", "Sequential", "IncompatibleKeys"]

IncompatibleKeys = namedtuple("IncompatibleKeys", "missing_keys unexpected_keys")
IncompatibleKeys.__doc__ = "What ``load_state_dict`` returns: the keys it did not find and the keys it did not use."


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class for layers and models; see the module docstring. Subclasses call ``super().__init__()`` first."""

    training: bool
    _hooks = None  # this module's own hooks (module_hooks.ModuleHooks), once one is registered

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f"{type(self).__name__} has no forward(); define `def forward(self, x): ...` in the class"
        )

    def __call__(self, *args, **kwargs):
        if _hooks.active or self._hooks is not None:
            return _hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ hooks (see module_hooks.py)

    def _own_hooks(self) -> _hooks.ModuleHooks:
        if self._hooks is None:
            object.__setattr__(self, "_hooks", _hooks.ModuleHooks())
        return self._hooks

    def _register_hook(self, kind: str, hook, what: str, always_call: bool = False) -> _hooks.RemovableHandle:
        if not callable(hook):
            raise TypeError(f"{type(self).__name__}.{what}: expected a callable, got {hook!r}")
        own = self._own_hooks()
        registry = getattr(own, kind)

        def changed() -> None:
            own.always.discard(handle.id)
            if not own and self._hooks is own:
                object.__setattr__(self, "_hooks", None)  # back to the plain call

        handle = _hooks.RemovableHandle(registry, changed)
        registry[handle.id] = hook
        if always_call:
            own.always.add(handle.id)
        return handle

    def register_forward_pre_hook(self, hook) -> _hooks.RemovableHandle:
        """Run ``hook(module, args)`` before each ``forward``; a return value other than None replaces ``args``."""
        return self._register_hook("forward_pre", hook, "register_forward_pre_hook")

    def register_forward_hook(self, hook, *, always_call: bool = False) -> _hooks.RemovableHandle:
        """Run ``hook(module, args, output)`` after each ``forward``; a return value other than None replaces ``output``."""
        return self._register_hook("forward", hook, "register_forward_hook", always_call)

    def register_full_backward_hook(self, hook) -> _hooks.RemovableHandle:
        """Run ``hook(module, grad_input, grad_output)`` in backward; a return value other than None replaces ``grad_input``."""
        return self._register_hook("backward", hook, "register_full_backward_hook")

    # ------------------------------------------------------------------ registration

    def _check_initialised(self, name: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() has run: call super().__init__() "
                f"at the start of {type(self).__name__}.__init__"
            )

    def _forget(self, name: str) -> None:
        """Remove ``name`` from every store and from the instance's attributes (if it is anywhere)."""
        for store in (self.__dict__, self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        self._non_persistent.discard(name)

    def __setattr__(self, name: str, value) -> None:
        """``self.name = value``: sort the value into the store its kind belongs to.

        Invariants: a Parameter is kept in ``_parameters`` and a Module in
        ``_modules``, in the order they were first assigned; a name lives in
        one place only (``_parameters``, ``_buffers``, ``_modules`` or the
        instance's ``__dict__``), so assigning a new kind under an old name
        replaces what the name held. Any other value for an already
        registered name goes through ``_set_registered`` (None placeholder,
        a new buffer tensor, or a clear error); everything else is an
        ordinary attribute, stored with ``object.__setattr__`` as ``__init__``
        does (not ``super()``, which ``use_exercise`` cannot swap in).
        Parameters pass the parameter registration hooks first.
        """
        if _hooks.parameter_registration and isinstance(value, Parameter):
            value = _hooks.registered(_hooks.parameter_registration, self, name, value)
        ### BEGIN SOLUTION 5.1 | sort by kind (chapter 05, section 1): a Parameter or a Module goes into its own store under this name, after removing whatever the name held before (the two helpers above do that); other values for a registered name, or ordinary attributes, are handled as the docstring says
        if isinstance(value, Parameter):
            self._check_initialised(name)
            self._forget(name)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._check_initialised(name)
            self._forget(name)
            self._modules[name] = value
        elif self._is_registered(name):
            self._set_registered(name, value)
        else:
            object.__setattr__(self, name, value)
        ### END SOLUTION

    def _is_registered(self, name: str) -> bool:
        """Is ``name`` a parameter, buffer or child of this module (even one set to None)?"""
        d = self.__dict__
        return any(store in d and name in d[store] for store in ("_parameters", "_buffers", "_modules"))

    def _set_registered(self, name: str, value) -> None:
        """Assign a value that is not a Parameter or Module to a registered name: None, a buffer's tensor, or an error."""
        if name in self._parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter {name!r} of {type(self).__name__} "
                    f"(Parameter or None expected); wrap it: Parameter(value), or change it in place with "
                    f"`with no_grad(): self.{name}.copy_(value)`"
                )
            self._parameters[name] = None
        elif name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module {name!r} (Module or None expected)")
            self._modules[name] = None
        else:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} (Tensor or None expected)")
            if _hooks.buffer_registration:
                value = _hooks.registered(_hooks.buffer_registration, self, name, value)
            self._buffers[name] = value

    def __getattr__(self, name: str):
        # only called when normal lookup fails: look in the three dictionaries
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder, e.g. ``bias=False``) under ``name``."""
        self._check_name(name)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter or None, got {type(param).__name__}")
        if _hooks.parameter_registration:
            param = _hooks.registered(_hooks.parameter_registration, self, name, param)
        self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is part of the module's state but not trained (e.g. running statistics).

        Buffers are moved by ``to()`` and, when ``persistent``, saved in ``state_dict()``.
        """
        self._check_name(name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, got {type(tensor).__name__}")
        if _hooks.buffer_registration:
            tensor = _hooks.registered(_hooks.buffer_registration, self, name, tensor)
        self._forget(name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (what ``self.name = module`` does)."""
        self._check_name(name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module or None, got {type(module).__name__}")
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name: str) -> None:
        self._check_initialised(name)
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"a module attribute name must be a non-empty string without '.', got {name!r}")

    # ------------------------------------------------------------------ walking the tree

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for this module (name ``prefix``, ``""`` by default) and every module below it.

        Depth first, each module before its children, children in registration
        order; a child's name is ``prefix + "." + its attribute name``. A module
        reachable along two paths is listed once (the first path), unless
        ``remove_duplicate`` is False. ``memo`` holds the ids already listed.
        """
        ### BEGIN SOLUTION 5.1 | walk the tree (chapter 05, section 1): yield this module under its prefix, then recurse into each registered child (skip None) with the child's dotted name; the memo of ids keeps a shared module from being listed twice
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)
        ### END SOLUTION

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct children only."""
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        """``(dotted name, tensor)`` of the entries of ``store`` ("_parameters" or "_buffers") of every module.

        Modules in ``named_modules`` order (only this one unless ``recurse``),
        each module's entries in registration order; None placeholders are
        skipped, and a tensor held by two modules is listed once (the first
        time) unless ``remove_duplicate`` is False.
        """
        ### BEGIN SOLUTION 5.1 | list the members (chapter 05, section 1): for each module of the walk (or only this one), each non-None entry of its store under the module's dotted name joined to the entry's name; remember ids to list a shared tensor once
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value
        ### END SOLUTION

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``("fc1.weight", Parameter)`` pairs; a parameter shared by two layers is listed once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every trainable tensor of the module and its children (what an optimizer needs)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The module at dotted path ``target`` (``""`` is this module)."""
        module = self
        if target:
            for part in target.split("."):
                if part not in module._modules or module._modules[part] is None:
                    raise AttributeError(f"{type(module).__name__} has no submodule {part!r} (looking up {target!r})")
                module = module._modules[part]
        return module

    def apply(self, fn) -> Module:
        """Call ``fn(module)`` on every child (recursively) and then on this module; returns self.

        Typical use: custom initialisation, ``model.apply(init_weights)``.
        """
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and gradients

    def train(self, mode: bool = True) -> Module:
        """Put the module and its children in training mode (``mode=False``: evaluation mode); returns self.

        Dropout and BatchNorm behave differently in the two modes.
        """
        if not isinstance(mode, bool):
            raise ValueError(f"train: mode must be True or False, got {mode!r}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: ``train(False)``. Note it does not turn off gradients; use ``no_grad()`` for that."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (False) or unfreeze (True) every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (the default, frees the memory) or to zeros."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    # ------------------------------------------------------------------ state dict

    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Every parameter and persistent buffer by dotted name, e.g. ``{"fc1.weight": tensor, ...}``.

        Order: this module's parameters, then its persistent buffers (names
        not in ``_non_persistent``), then each child's entries under
        ``prefix + child name + "."``; None placeholders are left out. The
        tensors share memory with the module (save them with ``nn.save``):
        detached ones, or with ``keep_vars=True`` the Parameters themselves.
        Returns ``destination`` (a new OrderedDict if None) with the entries added.
        """
        ### BEGIN SOLUTION 5.1 | the checkpoint's table (chapter 05, section 1): add this module's entries under prefix + name (detached unless keep_vars), then let each child add its own with a longer prefix
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination, prefix + name + ".", keep_vars)
        return destination
        ### END SOLUTION

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into the parameters and buffers, in place.

        With ``strict=True`` (the default) the keys must match exactly; any
        missing or unexpected key raises an error listing them all. A shape
        mismatch always raises. Returns ``(missing_keys, unexpected_keys)``.
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict of tensors (from state_dict()), got {type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = []
        for key, target in own.items():
            if key in state_dict:
                value = state_dict[key]
                shape = tuple(getattr(value, "shape", ()))
                if shape != tuple(target.shape):
                    mismatched.append((key, shape, tuple(target.shape)))
        problems = []
        if strict and missing:
            problems.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        if strict and unexpected:
            problems.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
        for key, theirs, ours in mismatched:
            problems.append(
                f"size mismatch for {key}: copying a param with shape {theirs} from checkpoint, "
                f"the shape in current model is {ours}."
            )
        if problems:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(problems)
                + "\n" + _load_hint(missing, unexpected, mismatched, strict)
            )
        with no_grad():
            for key, target in own.items():
                if key in state_dict:
                    value = state_dict[key]
                    if not isinstance(value, Tensor):
                        value = as_tensor(value)
                    target.copy_(value)
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ devices and dtypes

    def _convert(self, fn) -> Module:
        """Replace every parameter's and buffer's data by ``fn(data)``, keeping the Parameter objects."""
        with no_grad():
            for m in self.modules():
                for p in m._parameters.values():
                    if p is None:
                        continue
                    new = fn(p.detach())
                    if new._data is not p._data:
                        p.data = new
                        if p.grad is not None:
                            p.grad = fn(p.grad)
                for name, b in m._buffers.items():
                    if b is not None:
                        new = fn(b)
                        if new is not b:
                            m._buffers[name] = new
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move/convert parameters and buffers in place: ``model.to("cuda")``, ``model.to(float64)``, ``model.to(x)``.

        Only floating point tensors change dtype (an int64 step counter stays
        int64). The Parameter objects stay the same, so an optimizer built
        before ``to()`` still holds the right tensors.
        """
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"to: unexpected keyword arguments {sorted(kwargs)}")
        device, dtype = parse_to_args(args, device, dtype)
        device = as_device(device) if device is not None else None
        dtype = as_dtype(dtype) if dtype is not None else None
        if dtype is not None and not is_floating_point(dtype):
            raise TypeError(f"Module.to: only floating point dtypes are allowed for a module, got {dtype}")

        def convert(t: Tensor) -> Tensor:
            out = t
            if dtype is not None and is_floating_point(t.dtype) and t.dtype != dtype:
                out = out.to(dtype)
            if device is not None and out.device is not device:
                out = out.to(device)
            return out

        return self._convert(convert)

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        return self.to("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))

    def float(self) -> Module:
        """Convert floating point parameters and buffers to float32."""
        return self.to(as_dtype("float32"))

    def double(self) -> Module:
        """Convert floating point parameters and buffers to float64 (for gradient checks)."""
        return self.to(as_dtype("float64"))

    def half(self) -> Module:
        return self.to(as_dtype("float16"))

    def bfloat16(self) -> Module:
        return self.to(as_dtype("bfloat16"))

    # ------------------------------------------------------------------ printing

    def extra_repr(self) -> str:
        """The text inside this module's parentheses (override it, as PyTorch's layers do)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        children = [f"({name}): {_addindent(repr(m), 2)}" for name, m in self._modules.items()]
        head = type(self).__name__ + "("
        if not children and len(lines) <= 1:
            return head + extra + ")"
        body = "\n  ".join(lines + children)
        return head + "\n  " + body + "\n)"


def _load_hint(missing, unexpected, mismatched, strict) -> str:
    """A suggestion for the most likely cause of a failed load_state_dict."""
    for prefix in ("module.", "model.", "_orig_mod."):
        if unexpected and all(k.startswith(prefix) for k in unexpected) and {k[len(prefix):] for k in unexpected} >= set(missing):
            return (
                f"Fix: the checkpoint's keys start with {prefix!r} (saved from a wrapper); strip it: "
                f"{{k.removeprefix({prefix!r}): v for k, v in state.items()}}"
            )
    if mismatched:
        return (
            "Fix: the checkpoint was saved from a model with different layer sizes; build the model with "
            "the same sizes as when it was saved (shape mismatches are errors even with strict=False)"
        )
    return (
        "Fix: the checkpoint comes from a different architecture (compare model.state_dict().keys() with the "
        "checkpoint's keys), or pass strict=False to load only the keys that match"
    )


class Sequential(Module):
    """Modules applied one after the other: ``Sequential(Linear(784, 256), ReLU(), Linear(256, 10))``.

    Children are named ``"0"``, ``"1"``, ... (or by an ``OrderedDict``'s keys).
    Supports ``len``, iteration, ``seq[i]`` and ``seq[1:]`` (a new Sequential), ``append``.
    """

    def __init__(self, *modules) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (dict, OrderedDict)):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                if not isinstance(m, Module):
                    raise TypeError(
                        f"Sequential: argument {i} is a {type(m).__name__}, not a Module"
                        + ("; use the layer class, e.g. ReLU(), not the function relu" if callable(m) else "")
                    )
                self.add_module(str(i), m)

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        items = list(self._modules.values())
        try:
            return items[index]
        except IndexError:
            raise IndexError(f"Sequential index {index} is out of range for {len(items)} modules") from None

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[index]
        self.add_module(key, module)

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self
