"""What ``cupyx.jit`` refuses to compile, refused before the simulator runs a kernel.

The simulator could run any Python, but a kernel that passes the simulator
must also transpile for a GPU. So before the first simulated launch (and once
per new set of argument types) the kernel's source is read and every
construct ``cupyx.jit`` refuses is refused here, with ``cupyx.jit``'s reason
in the simulator's words and the fix: lists, dicts, sets and
comprehensions, lambdas and nested ``def``, ``try``/``raise``, ``with``,
``import``, ``global``, ``yield``, ``return value`` from a kernel, ``del``,
``for`` over anything but ``range``, ``print`` and other Python calls,
recursion and kernels calling kernels, module-level arrays (``cupyx.jit``
would freeze them into the code as constants), shuffles called with keyword
arguments or a negative offset, a ``shared_memory`` size <= 0 - and
arithmetic that mixes ``threadIdx``'s unsigned 32-bit type with a signed
32-bit int (an int argument, a ``range`` over one, a variable set from an
int constant), which ``cupyx.jit`` refuses with "Cannot cast from 'int32'
to uint32". Comparisons may mix them (``cupyx.jit`` compares as 64-bit).

A ``raise NotImplementedError(...)`` is let through: it is how an
exercise's stub says what to write, and its message must reach the learner.

Invariant: a refusal here is a construct the cupyx.jit transpiler of the
``gpu-check`` extra refuses too (the hostile tests confirm each with
``minigrad.gpu.compile_check``); the type inference only refuses when it is
sure (an expression of unknown type is never refused).
"""

from __future__ import annotations

import ast
import builtins
import types

import numpy as np

from minigrad.gpu.errors import KernelSourceError
from minigrad.gpu.simulator import arrays, barriers, threads, warps

U32, S32, S64, CONST = "uint32", "int32", "int64", "const"  # the integer types the inference tracks
_REGISTERS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_UNSIGNED_CALLS = ("grid", "gridsize", "laneid")
_SHUFFLES = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync")
_ALLOWED_BUILTINS = {range, len, min, max, int, float, bool}
# The simulator's objects behind the kernel names (the dialect table re-exports these very objects).
_DIALECT = {name: getattr(module, name) for module, names in [
    (threads, (*_REGISTERS, *_UNSIGNED_CALLS)), (arrays, ("shared_memory", "atomic_add")),
    (barriers, ("syncthreads",)), (warps, _SHUFFLES)] for name in names}
_NOT_SUPPORTED = {
    ast.List: "a list", ast.Dict: "a dict", ast.Set: "a set", ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension", ast.GeneratorExp: "a generator",
    ast.JoinedStr: "an f-string", ast.Starred: "*-unpacking", ast.NamedExpr: "the := operator",
    ast.Yield: "yield", ast.YieldFrom: "yield from", ast.Await: "await",
}
_STATEMENTS = {
    ast.Try: ("try/except", "throw/catch are not allowed",
              "a GPU thread cannot catch errors: test the condition (e.g. `if i < n:`) instead"),
    ast.Raise: ("raise", "throw/catch are not allowed", "a GPU thread cannot raise: skip the work instead"),
    ast.With: ("with", "switching contexts are not allowed", "write the body without the with block"),
    ast.Import: ("import", "cannot import modules from the target functions", "import at the top of the file"),
    ast.ImportFrom: ("import", "cannot import modules from the target functions", "import at the top of the file"),
    ast.Global: ("global", "cannot use global/nonlocal in the target functions", "pass the array as an argument"),
    ast.Nonlocal: ("nonlocal", "cannot use global/nonlocal in the target functions", "pass it as an argument"),
    ast.Delete: ("del", "`del` is not supported", "leave the variable alone"),
    ast.Lambda: ("a lambda", "not implemented", "write a device function: @jit.rawkernel(device=True)"),
    ast.FunctionDef: ("a nested def", "nested functions are not supported",
                      "define it at module level with @jit.rawkernel(device=True)"),
    ast.ClassDef: ("a class", "class is not supported", "define classes outside kernels"),
}
if hasattr(ast, "TryStar"):
    _STATEMENTS[ast.TryStar] = _STATEMENTS[ast.Try]


def _refuse(kernel: str, node: ast.AST, what: str, reason: str, fix: str):
    raise KernelSourceError(
        f"kernel '{kernel}', line {getattr(node, 'lineno', '?')}: {what} - cupyx.jit refuses to compile it "
        f"({reason}), so the simulator refuses it too; {fix}"
    )


class _Checker(ast.NodeVisitor):
    """Walks one function (a kernel or a device function) and refuses what cupyx.jit refuses."""

    def __init__(self, kernel: str, func, is_kernel: bool, types_: dict, context, seen: set):
        self.kernel, self.func, self.is_kernel = kernel, func, is_kernel
        self.env = dict(zip(func.__code__.co_freevars, (_cell(c) for c in func.__closure__ or ())))
        self.locals = set(func.__code__.co_varnames)
        self.types = dict(types_)  # variable -> U32 / S32 / S64 / CONST (absent: unknown)
        self.context, self.seen = context, seen

    # ---------------------------------------------------------------- names
    def resolve(self, node):
        """The object an expression names outside the function (a global, a closure variable), or None."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return None
            if node.id in self.env:
                return self.env[node.id]
            if node.id in self.func.__globals__:
                return self.func.__globals__[node.id]
            return getattr(builtins, node.id, None)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if isinstance(base, types.ModuleType):
                return getattr(base, node.attr, None)
        return None

    def _is_dialect(self, node, names) -> str | None:
        """Which of the kernel names ``names`` the expression is (``jit.threadIdx``, ``threadIdx``...), or None."""
        obj = self.resolve(node)
        if obj is None:
            return None
        for name in names:
            if obj is _DIALECT.get(name, _DIALECT) or name == "warpsize" and getattr(node, "id", getattr(
                node, "attr", None)) == "warpsize" and obj == threads.warpsize:
                return name
        return None

    # ---------------------------------------------------------------- structure
    def generic_visit(self, node):
        kind = type(node)
        if kind in _NOT_SUPPORTED:
            fix = ("a kernel is not a generator: write results into an array" if kind in (ast.Yield, ast.YieldFrom)
                   else "use shared_memory or separate variables; index arrays one element at a time")
            _refuse(self.kernel, node, f"{_NOT_SUPPORTED[kind]} in a kernel", f"not supported: {kind.__name__}", fix)
        if kind in _STATEMENTS:
            what, reason, fix = _STATEMENTS[kind]
            _refuse(self.kernel, node, f"{what} in a kernel", reason, fix)
        super().generic_visit(node)

    def visit_Raise(self, node):
        exception = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if self.resolve(exception) is NotImplementedError:
            return  # an exercise's stub: let it run and show its message
        self.generic_visit(node)

    def visit_Return(self, node):
        if self.is_kernel and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None
        ):
            _refuse(self.kernel, node, "`return` with a value from a kernel",
                    "failed to infer the return type: void or a value",
                    "a kernel returns nothing: write the result into an output array (device functions may return)")
        self.generic_visit(node)

    def visit_Compare(self, node):
        if len(node.ops) > 1:
            _refuse(self.kernel, node, "a chained comparison", "comparison of 3 or more values is not implemented",
                    "write `a < b and b < c`")
        if isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
            _refuse(self.kernel, node, f"the `{type(node.ops[0]).__name__.lower()}` operator",
                    "only arithmetic comparisons are compiled", "compare numbers with ==, !=, <, <=, >, >=")
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult):
            _refuse(self.kernel, node, "the @ operator", "no matrix product on scalars", "multiply elements with *")
        self.generic_visit(node)
        self.type_of(node)

    def visit_For(self, node):
        if node.orelse:
            _refuse(self.kernel, node, "for ... else", "loop-else is not supported", "drop the else block")
        if not (isinstance(node.iter, ast.Call) and self.resolve(node.iter.func) is range):
            _refuse(self.kernel, node, "a for loop over something other than range(...)",
                    "for-loop is supported only for range iterator",
                    "loop over indices: `for j in range(n):` and read x[j]")
        if isinstance(node.target, ast.Name) and node.iter.args:
            stop = node.iter.args[0] if len(node.iter.args) == 1 else node.iter.args[1]
            self._assign(node.target.id, self.type_of(stop), node)
        self.generic_visit(node)

    def visit_While(self, node):
        if node.orelse:
            _refuse(self.kernel, node, "while ... else", "while-else is not supported", "drop the else block")
        self.generic_visit(node)

    def visit_Assign(self, node):
        if len(node.targets) != 1:
            _refuse(self.kernel, node, "a chained assignment `a = b = ...`", "not implemented",
                    "assign each variable on its own line")
        target = node.targets[0]
        value = self.type_of(node.value)
        if isinstance(target, ast.Name):
            self._assign(target.id, value, node)
        elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Call) and value == U32:
            for element in target.elts:  # i, j = jit.grid(2)
                if isinstance(element, ast.Name):
                    self._assign(element.id, U32, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self._mix(node, self.types.get(node.target.id), self.type_of(node.value), node.op)
        self.generic_visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and isinstance(self.resolve(node), np.ndarray):
            _refuse(self.kernel, node, f"the module-level array '{node.id}' used inside the kernel",
                    "cupyx.jit freezes a global array into the compiled code as constants: later changes are "
                    "not seen, writes are refused",
                    f"pass '{node.id}' to the kernel as an argument")

    def visit_Call(self, node):
        func = self.resolve(node.func)
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", "?")
        shuffle = self._is_dialect(node.func, _SHUFFLES)
        if shuffle:
            self._check_shuffle(node, shuffle)
        elif self._is_dialect(node.func, ("shared_memory",)):
            size = node.args[1] if len(node.args) > 1 else None
            if isinstance(size, ast.UnaryOp) and isinstance(size.op, ast.USub):
                _refuse(self.kernel, node, "jit.shared_memory with a negative size",
                        "the size of an array must be greater than zero",
                        "give the number of elements (> 0), or None for the launch's shared_mem bytes")
            if isinstance(size, ast.Constant) and isinstance(size.value, int) and size.value <= 0:
                _refuse(self.kernel, node, f"jit.shared_memory with size {size.value}",
                        "the size of an array must be greater than zero",
                        "give the number of elements (> 0), or None for the launch's shared_mem bytes")
        elif func is not None:
            self._check_callee(node, func, name)
        self.generic_visit(node)

    def _check_shuffle(self, node, shuffle):
        extra = [k.arg for k in node.keywords if k.arg != "width"]
        if extra or len(node.args) != 3:
            _refuse(self.kernel, node, f"jit.{shuffle} called with "
                    + (f"keyword argument {extra[0]!r}" if extra else f"{len(node.args)} positional arguments"),
                    f"{shuffle}(mask, var, val_id, *, width=32) takes three positional arguments and width=",
                    f"call it as jit.{shuffle}(mask, value, {'delta' if 'up' in shuffle or 'down' in shuffle else 'lane'}"
                    f", width=32)")
        val = node.args[2] if len(node.args) == 3 else None
        if shuffle in ("shfl_up_sync", "shfl_down_sync") and isinstance(val, ast.UnaryOp) and isinstance(
            val.op, ast.USub
        ):
            _refuse(self.kernel, node, f"jit.{shuffle} with a negative offset",
                    "the offset is an unsigned int: a negative number is out of bounds for uint32",
                    f"use {'shfl_down_sync' if 'up' in shuffle else 'shfl_up_sync'} with a positive offset")

    def _check_callee(self, node, func, name):
        if isinstance(func, self.context.kernel_type):
            _refuse(self.kernel, node, f"calling the kernel '{func.name}' from a kernel",
                    "calling a __global__ function from a __global__ function is not allowed (and recursion is "
                    "not supported)", "make the helper a device function: @jit.rawkernel(device=True)")
        if isinstance(func, self.context.device_function_type):
            if func.func is self.func:
                _refuse(self.kernel, node, f"the device function '{func.name}' calling itself",
                        "recursive function is not supported", "write the recursion as a loop")
            if func.func not in self.seen:
                self.seen.add(func.func)
                check_function(self.kernel, func.func, False, {}, self.context, self.seen)
            return
        if func in _ALLOWED_BUILTINS or isinstance(func, type) or any(func is f for f in _DIALECT.values()):
            return
        if isinstance(func, np.ufunc) and isinstance(node.func, ast.Attribute) and self.resolve(node.func.value) is np:
            _refuse(self.kernel, node, f"numpy.{func.__name__}(...) in a kernel",
                    "a NumPy function is not a CuPy ufunc: invalid function call",
                    f"use jit.{func.__name__} if it exists (jit.exp, jit.log, jit.sqrt, jit.isfinite)")
        constant_args = all(isinstance(a, ast.Constant) for a in node.args) and not node.keywords
        if callable(func) and not constant_args and (
            isinstance(func, (types.FunctionType, types.BuiltinFunctionType, types.MethodType))
        ):
            _refuse(self.kernel, node, f"a call of the Python function {name}(...)",
                    f"invalid function call '{name}'",
                    "kernels call only jit's functions, range/len/min/max, NumPy type casts and device "
                    "functions (@jit.rawkernel(device=True))")

    # ---------------------------------------------------------------- integer types
    def _assign(self, name, value, node):
        known = self.types.get(name)
        value = S32 if value in (CONST, "negative") else value  # a variable set from an int constant is an int32
        if known is None and name not in self.types:
            self.types[name] = value
        elif known == U32 and value == S32:
            _refuse(self.kernel, node, f"assigning a signed int32 to '{name}', which holds an unsigned value",
                    "cannot cast from 'int32' to uint32 with casting rule same_kind",
                    f"convert explicitly: {name} = numpy.uint32(...)")
        elif known != value:
            self.types[name] = None

    def type_of(self, node):
        """U32, S32, S64, CONST or None (unknown) for an expression; refuses mixed uint32/int32 arithmetic."""
        if isinstance(node, ast.Constant):
            return CONST if type(node.value) is int else None
        if isinstance(node, ast.Name):
            if node.id in self.types:
                return self.types[node.id]
            return S32 if self._is_dialect(node, ("warpsize",)) else None
        if isinstance(node, ast.Attribute):
            if node.attr in "xyz" and self._is_dialect(node.value, _REGISTERS):
                return U32
            return S32 if self._is_dialect(node, ("warpsize",)) else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            return self.types.get(("element", node.value.id))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.type_of(node.operand)
            return "negative" if inner == CONST else inner
        if isinstance(node, ast.Call):
            if self._is_dialect(node.func, _UNSIGNED_CALLS):
                return U32
            func = self.resolve(node.func)
            return {np.uint32: U32, np.int32: S32, np.int64: S64}.get(func)
        if isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Div, ast.MatMult)):
            return self._mix(node, self.type_of(node.left), self.type_of(node.right), node.op)
        return None

    def _mix(self, node, left, right, op):
        pair = {left, right}
        if pair == {U32, S32} or pair == {U32, "negative"}:
            signed = "a negative constant" if "negative" in pair else "a signed int32"
            _refuse(self.kernel, node, f"arithmetic ({type(op).__name__}) mixing an unsigned uint32 (threadIdx, "
                    f"blockIdx, blockDim, gridDim, grid(), laneid()) with {signed}",
                    "cannot cast from 'int32' to uint32 with casting rule same_kind" if "negative" not in pair
                    else "a negative Python integer is out of bounds for uint32",
                    "convert one side: numpy.uint32(n) (e.g. for a range loop over an int argument) or "
                    "numpy.int32(jit.threadIdx.x)")
        if pair <= {U32, CONST}:
            return U32 if U32 in pair else CONST
        if pair <= {S32, CONST}:
            return S32
        if S64 in pair and pair <= {S64, S32, U32, CONST}:
            return S64
        return None


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return None


def scalar_type(value):
    """The integer type cupyx.jit gives a launch argument (None: not an integer)."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, int):
        return S32 if -(2**31) <= value < 2**31 else S64
    return {np.dtype(np.uint32): U32, np.dtype(np.int32): S32, np.dtype(np.int64): S64}.get(
        getattr(value, "dtype", None)
    )


def check_function(kernel: str, func, is_kernel: bool, types_: dict, context, seen: set) -> None:
    """Refuse what cupyx.jit refuses in ``func``'s source (no source: nothing to check)."""
    definition = context.source_of(func)
    if definition is None:
        return
    checker = _Checker(kernel, func, is_kernel, types_, context, seen)
    for statement in definition.body:
        checker.visit(statement)


def check_kernel(kernel: str, func, parameters, args, context) -> None:
    """Refuse a kernel whose source or argument types cupyx.jit refuses, before it runs.

    ``context`` gives ``source_of(func)`` (the parsed ``def``, or None) and the
    classes ``kernel_type`` and ``device_function_type`` of the layer above.
    """
    types_: dict = {}
    for name, value in zip(parameters, args):
        if isinstance(value, np.ndarray):
            types_[("element", name)] = scalar_type(value.dtype.type(0))
        else:
            types_[name] = scalar_type(value)
    check_function(kernel, func, True, types_, context, {func})
