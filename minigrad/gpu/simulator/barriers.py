"""Turning ``syncthreads()`` into ``yield``: how a Python thread can wait at a barrier.

A barrier means "stop here until every thread of the block is here too".
The simulator runs a block's threads one at a time, so each thread must be
able to *pause* at a barrier and be resumed later. Python generators do
exactly that: this module rewrites the kernel's source so every
``syncthreads()`` statement becomes ``yield (line, iterations)``, which makes
the kernel a generator function; ``iterations`` are the thread's iteration
numbers of the loops around the barrier (a counter the rewrite adds to each
such loop), so a thread in iteration 2 of a loop never meets one in
iteration 1 at "the same" barrier. Calling it gives one paused thread;
``next()`` runs that thread up to its next barrier or to its end
(``StopIteration``). The scheduler in ``scheduler.py`` does the
rest.

Warp shuffles (``shfl_down_sync`` and friends, see ``warps.py``) are
meeting points too: each call becomes a ``yield`` of the request, and the
scheduler sends the exchanged value back in as the call's result.

Loops get one more statement: the first statement of every ``while`` and
``for`` body becomes a call of the scheduler's step counter, so a thread
stuck in an infinite loop or a spin-wait ends with a clear error after the
step limit (``scheduler.py``) instead of running forever.

Because the rewrite is a source transformation, barriers inside loops and
``if`` blocks work as written. A barrier must be a statement of the kernel's
own body (``jit.syncthreads()`` or ``syncthreads()`` on its own line):
called any other way, :func:`syncthreads` itself raises an error that says
so. The rewritten function keeps the original file name and line numbers, so
tracebacks point at the learner's code.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

from minigrad.gpu.errors import KernelError

BARRIER_NAMES = ("syncthreads",)
SHUFFLE_NAMES = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync")
STEP_COUNTER = "_minigrad_step"  # the name the step counter has in the rewritten kernel (a closure variable)


def syncthreads() -> None:
    """Barrier: wait until every thread of the block has reached this statement.

    In a simulated kernel each ``syncthreads()`` statement is rewritten into a
    pause of the thread before it runs (see :func:`thread_program`), so this
    function only runs when it is called some other way.
    """
    raise KernelError(
        "jit.syncthreads() must be a statement of its own in the kernel's body (not inside an expression, "
        "a helper function, or outside a kernel launch), e.g. a line `jit.syncthreads()`"
    )


def _called_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    function = node.func
    return function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)


def _is_barrier_call(node: ast.AST) -> bool:
    return _called_name(node) in BARRIER_NAMES and not node.args and not node.keywords


class _BarriersToYields(ast.NodeTransformer):
    """Replace each ``syncthreads()`` statement by ``yield (line, iterations)`` and each warp shuffle call by
    ``(yield (name, mask, value, val_id, width, line))``; count loop iterations (every loop calls the step
    counter if ``count_steps``, a loop around a barrier also numbers its iterations); leave nested scopes alone."""

    def __init__(self, count_steps: bool):
        self.barriers = 0
        self.loops = 0
        self.count_steps = count_steps
        self.enclosing: list[str] = []  # the iteration counters of the loops around the node being visited

    def visit_Expr(self, node: ast.Expr):
        if _is_barrier_call(node.value):
            self.barriers += 1
            iterations = ast.Tuple([ast.Name(name, ast.Load()) for name in self.enclosing], ast.Load())
            request = ast.Tuple([ast.Constant(node.lineno), iterations], ast.Load())
            return ast.copy_location(ast.Expr(ast.Yield(request)), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        node = self.generic_visit(node)
        name = _called_name(node)
        if name not in SHUFFLE_NAMES or len(node.args) != 3 or any(k.arg != "width" for k in node.keywords):
            return node  # not a shuffle, or malformed: the real function runs and explains
        width = node.keywords[0].value if node.keywords else ast.Constant(32)
        self.barriers += 1
        request = ast.Tuple([ast.Constant(name), *node.args, width, ast.Constant(node.lineno)], ast.Load())
        return ast.copy_location(ast.Yield(request), node)

    def _count_steps(self, node):
        around_barrier = any(isinstance(n, ast.Expr) and _is_barrier_call(n.value) for n in ast.walk(node))
        counter = f"_minigrad_iteration_{node.lineno}_{node.col_offset}"
        if around_barrier:
            self.enclosing.append(counter)
        node = self.generic_visit(node)
        first = node.body[0]
        if around_barrier:
            self.enclosing.pop()
            step = ast.AugAssign(ast.Name(counter, ast.Store()), ast.Add(), ast.Constant(1))
            node.body.insert(0, ast.copy_location(step, first))
        if self.count_steps:
            node.body.insert(0, ast.copy_location(ast.Expr(ast.Call(ast.Name(STEP_COUNTER, ast.Load()), [], [])), first))
            self.loops += 1
        if around_barrier:
            start = ast.copy_location(ast.Assign([ast.Name(counter, ast.Store())], ast.Constant(0)), node)
            return [start, node]
        return node

    visit_While = visit_For = _count_steps

    def visit_FunctionDef(self, node):  # nested scopes cannot pause the kernel
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_FunctionDef


def parsed_source(func) -> ast.FunctionDef | None:
    """``func``'s ``def`` as an AST with the file's line numbers, or None when Python has no source for it."""
    try:
        return _kernel_source(func)[0]
    except KernelError:
        return None


def _kernel_source(func) -> tuple[ast.FunctionDef, str]:
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as exc:
        raise KernelError(
            f"kernel '{func.__name__}': the simulator needs the kernel's Python source and cannot find it "
            f"({exc}); define kernels with def in a file or a notebook cell"
        ) from None
    tree = ast.parse(source)
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef):
        raise KernelError(f"kernel '{func.__name__}': a kernel must be a plain def function")
    ast.increment_lineno(tree, func.__code__.co_firstlineno - 1)
    return definition, func.__code__.co_filename


def thread_program(func, count_step=None, pause: bool = True) -> tuple[types.FunctionType, int]:
    """The function the simulator runs per thread, and how many meeting points (barriers, shuffles) it has.

    Without them it is ``func`` itself (each thread is one call), or with
    loops and ``count_step`` a copy whose loops call ``count_step()`` once
    per iteration. With them it is a generator function equal to ``func``
    except that each ``syncthreads()`` yields its line number and each warp
    shuffle yields its request and receives its result. Globals and closure
    variables are shared with ``func``. ``pause=False`` (a device function,
    which cannot pause a kernel) rewrites the loops only.
    """
    names = func.__code__.co_names + func.__code__.co_freevars
    meets = pause and any(name in names for name in BARRIER_NAMES + SHUFFLE_NAMES)
    if not meets and (count_step is None or parsed_source(func) is None):
        return func, 0  # nothing to rewrite (or no source to rewrite)
    definition, filename = _kernel_source(func)
    rewriter = _BarriersToYields(count_steps=count_step is not None)
    if not pause:  # the barrier and shuffle functions themselves explain that they belong in the kernel
        rewriter.visit_Expr = rewriter.visit_Call = rewriter.generic_visit
    body = []
    for statement in definition.body:
        rewritten = rewriter.visit(statement)
        body.extend(rewritten if isinstance(rewritten, list) else [rewritten])
    definition.body = body
    if rewriter.barriers == 0 and rewriter.loops == 0:  # nothing this rewrite changes: run it as written
        return func, 0
    definition.decorator_list = []
    # Compile the def inside a wrapper that binds the closure variables, so
    # they stay free variables (not globals) in the rewritten function.
    free = list(func.__code__.co_freevars) + ([STEP_COUNTER] if rewriter.loops else [])
    wrapper = ast.FunctionDef(
        name="_minigrad_wrapper",
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(None)) for name in free]
        + [definition],
        decorator_list=[],
        returns=None,
    )
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        wrapper.type_params = []
    module = ast.Module(body=[wrapper], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    wrapper_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    kernel_code = next(
        c for c in wrapper_code.co_consts if isinstance(c, types.CodeType) and c.co_name == func.__name__
    )
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    cells[STEP_COUNTER] = types.CellType(count_step)
    closure = tuple(cells[name] for name in kernel_code.co_freevars)
    program = types.FunctionType(kernel_code, func.__globals__, func.__name__, func.__defaults__, closure or None)
    return program, rewriter.barriers
