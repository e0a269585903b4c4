"""Running a learner's kernel on the simulator (child side) and judging what came back (grader side), chapter 07.

In the child, :func:`launch` runs one kernel of the submission with
``kernel[grid, block](*args)`` on NumPy arrays the grader chose (so on the
simulator) and returns every array argument after the launch together with
the launch's traffic counters. A simulator error - an out-of-bounds access,
a shared-memory race, a divergent barrier - propagates as the learner's
error, message included, and costs the check. The output arrays the grader
sends start as NaN, so an element no thread wrote shows as NaN. Everything
here imports the library inside functions: the child imports this module
before the submission is loaded.
"""

from __future__ import annotations

import re
import types
from pathlib import Path

import numpy as np

from minigrad.grading.probing import LearnerError


def launch(submission, state, kernel_name: str, grid, block, args: list) -> dict:
    """(child) ``submission.<kernel_name>[grid, block](*args)``; the arrays after it and the launch's counters."""
    return _launched(getattr(submission, kernel_name), grid, block, args)


def _launched(kernel, grid, block, args: list) -> dict:
    from minigrad.gpu import jit

    kernel[tuple(grid) if isinstance(grid, list) else grid, tuple(block) if isinstance(block, list) else block](*args)
    stats = jit.last_launch_stats().as_dict()
    return {"arrays": [a for a in args if isinstance(a, np.ndarray)], "stats": stats}


def launch_scaled(submission, state, kernel_name: str, sizes: dict, grid, block, args: list) -> dict | None:
    """(child) :func:`launch` with the module's size constants scaled down: ``sizes`` maps a name to ``[real, small]``.

    Only the launch sees the small values: the kernel runs as a copy whose
    globals are a copy of the module's namespace with ``sizes`` applied (the
    module's other kernels and functions rebound to it), so the module
    itself, its host code and every other launch keep the real values, and
    the copy runs the learner's own code objects. None (nothing launched)
    where :func:`_scaled_namespace` refuses.
    """
    namespace = _scaled_namespace(submission, sizes)
    if namespace is None:
        return None
    from minigrad.gpu.kernel import RawKernel

    kernel = namespace.get(kernel_name)
    if type(kernel) is not RawKernel:
        return None
    return _launched(kernel, grid, block, args)


def call_scaled(submission, state, function_name: str, sizes: dict, args: list) -> dict | None:
    """(child) The module's ``function_name(*args)`` (a host function that launches) seeing ``sizes`` as in
    :func:`launch_scaled`; its result and the last launch's counters, or None where that refuses."""
    from minigrad.gpu import jit

    namespace = _scaled_namespace(submission, sizes)
    function = None if namespace is None else namespace.get(function_name)
    if type(function) is not types.FunctionType:
        return None
    out = function(*args)
    stats = jit.last_launch_stats()
    return {"out": np.asarray(out), "stats": None if stats is None else stats.as_dict()}


def _scaled_namespace(submission, sizes: dict) -> dict | None:
    """A copy of the module's namespace with ``sizes`` applied, its kernels, device and plain functions rebound to it.

    None unless every name in ``sizes`` holds an int in the module equal to
    its ``real`` value (any int where ``real`` is None): a module whose sizes
    differ from the exercise's has no scaled-down version of the same design.
    """
    from minigrad.gpu.dialect import DeviceFunction
    from minigrad.gpu.kernel import RawKernel

    module = vars(submission)
    for name, (real, _) in sizes.items():
        value = module.get(name)
        if type(value) is not int or (real is not None and value != real):
            return None
    namespace = dict(module)
    namespace.update({name: small for name, (_, small) in sizes.items()})
    for name, value in module.items():
        if type(value) in (RawKernel, DeviceFunction) and type(value.func) is types.FunctionType \
                and value.func.__globals__ is module:
            namespace[name] = type(value)(_rebound(value.func, namespace))
        elif type(value) is types.FunctionType and value.__globals__ is module:
            namespace[name] = _rebound(value, namespace)
    return namespace


def _rebound(func: types.FunctionType, namespace: dict) -> types.FunctionType:
    copy = types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__, func.__closure__)
    copy.__kwdefaults__ = func.__kwdefaults__
    return copy


def np_generator(rng) -> np.random.Generator:
    """A NumPy generator seeded from the check's ``random.Random`` (``--seed`` replays it)."""
    return np.random.default_rng(rng.randrange(2**32))


def nan_array(shape) -> np.ndarray:
    """A float32 output array whose elements are NaN until a thread writes them."""
    return np.full(shape, np.nan, dtype=np.float32)


def assert_close(actual, expected, what: str, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """``actual`` matches ``expected`` (float32 tolerances); name the first wrong index and say if it was never written."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    unwritten = np.isnan(actual) & ~np.isnan(expected)
    if unwritten.any():
        first = tuple(int(i) for i in np.argwhere(unwritten)[0])
        raise AssertionError(
            f"{what}: {int(unwritten.sum())} of {actual.size} elements were never written, the first at index {first}"
        )
    wrong = ~np.isclose(actual, expected, rtol=rtol, atol=atol)
    if wrong.any():
        first = tuple(int(i) for i in np.argwhere(wrong)[0])
        raise AssertionError(
            f"{what}: {int(wrong.sum())} of {actual.size} elements are wrong, the first at index {first}: "
            f"got {float(actual[first]):.6g}, expected {float(expected[first]):.6g}"
        )


def on_the_learners_line(learner, attempt):
    """``attempt(case)``, where a simulator error that names no ``FILE:LINE`` (a race, a divergent barrier: found
    after the thread's frame is gone) gets the learner's file at the first line its message names."""
    def located(case):
        try:
            attempt(case)
        except LearnerError as err:
            line = re.search(r"\bline (\d+)", err.message) if err.where is None else None
            if line is None:
                raise
            raise LearnerError(err.message, f"{Path(str(learner.path)).name}:{line.group(1)}", err.mro) from None

    return located


def blocks_of(grid, block) -> str:
    """A launch in words: ``a grid of 2 block(s) of 8 threads``, ``a grid of 3 x 2 block(s) of 4 x 2 = 8 threads``."""
    grid, block = (tuple(d) if isinstance(d, (list, tuple)) else (d,) for d in (grid, block))
    shape = " x ".join(str(d) for d in block)
    threads = int(np.prod(block))
    return (f"a grid of {' x '.join(str(d) for d in grid)} block(s) of "
            f"{shape if len(block) == 1 else f'{shape} = {threads}'} threads")


def scaled_note(sizes: dict) -> str:
    """What a scaled-down launch changed: ``(BLOCK = 8 for this run; the exercise's is 256)``."""
    small = ", ".join(f"{name} = {s}" for name, (_, s) in sizes.items())
    real = ", ".join(str(r) for r, _ in sizes.values())
    return f"({small} for this run; the exercise's {'is' if len(sizes) == 1 else 'are'} {real})"


def prepare_child() -> None:
    """(child, before the audit hook and the submission) Load CuPy's transpiler and NVRTC if they are installed.

    Loading them opens shared libraries with ``ctypes``, which the child's
    audit hook refuses once it is in place; without CuPy this does nothing and
    :func:`compile_for_gpu` reports that it could not check.
    """
    try:
        import cupyx.jit._compile  # noqa: F401
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception:  # not installed or not usable here: the compile check says so
        pass


def compile_for_gpu(submission, state, kernel_name: str, example_args: list) -> dict:
    """(child) Transpile the learner's kernel with ``cupyx.jit`` and compile it with NVRTC, as a GPU would need.

    Returns ``{"checked": False, "why": ...}`` where CuPy or NVRTC is not
    installed (the check then grades on the simulator alone), else
    ``{"checked": True, "error": None or the compiler's message}``.
    """
    from minigrad.gpu import compile_check

    kernel = getattr(submission, kernel_name)
    try:
        compile_check.cuda_source(kernel, *example_args)
    except ImportError as error:
        return {"checked": False, "why": str(error)}
    except Exception as error:  # cupyx.jit refuses the kernel: its typing rules, or Python it does not transpile
        return {"checked": True, "error": f"cupyx.jit cannot transpile it: {type(error).__name__}: {_first_lines(error)}"}
    try:
        compile_check.compile_ptx(kernel, *example_args)
    except (ImportError, OSError) as error:  # no NVRTC wheel (or it cannot load here): the transpile still checked
        return {"checked": True, "error": None, "why": f"NVRTC unavailable: {error}"}
    except Exception as error:
        return {"checked": True, "error": f"NVRTC cannot compile cupyx.jit's CUDA: {_first_lines(error)}"}
    return {"checked": True, "error": None}


def _first_lines(error: Exception, count: int = 6) -> str:
    return "\n".join(str(error).strip().splitlines()[:count])


def assert_compiles_for_gpu(answer: dict, what: str) -> None:
    """(grader) The kernel must build for a real GPU where the child could check it.

    Where it could not (no CuPy), the check rests on the small launch each
    ``test_the_kernel_builds_for_a_gpu`` makes first, so a stub never scores.
    """
    if answer.get("checked") and answer.get("error"):
        raise AssertionError(
            f"{what}: the kernel runs on the simulator but would not build for a GPU. {answer['error']}\n"
            f"threadIdx, blockIdx and blockDim are unsigned 32-bit on the GPU: keep index arithmetic unsigned "
            f"(numpy.uint32(...)) and use only the Python cupyx.jit transpiles"
        )


def assert_coalesced(stats: dict, what: str, at_least: float = 0.9) -> None:
    """(grader) At least ``at_least`` of the bytes of the 32-byte sectors the warps touched were requested."""
    sectors = stats["global_load_sectors"] + stats["global_store_sectors"]
    if not sectors:
        raise AssertionError(f"{what}: the launch touched no global memory")
    used = (stats["global_load_warp_bytes"] + stats["global_store_warp_bytes"]) / (32 * sectors)
    loads = stats["global_load_warp_bytes"] / (32 * stats["global_load_sectors"]) if stats["global_load_sectors"] else 1.0
    stores = stats["global_store_warp_bytes"] / (32 * stats["global_store_sectors"]) if stats["global_store_sectors"] else 1.0
    assert used >= at_least, (
        f"{what}: sector efficiency {used:.0%} (loads {loads:.0%}, stores {stores:.0%}): of the {sectors:,} 32-byte "
        f"sectors the warps touched, only that share was asked for; at least {at_least:.0%} is expected. The 32 "
        f"threads of a warp (consecutive threadIdx.x) should touch adjacent elements of the last axis"
    )


def assert_sectors_within(stats: dict, what: str, load_bytes: int, store_bytes: int, slack: float = 0.9) -> None:
    """(grader) The warps touched no more sectors than ``load_bytes``/``store_bytes`` read/written whole would need.

    For kernels whose threads skip some reads by design (a mask), where the
    share of requested bytes says less than the count of sectors: a coalesced
    kernel touches about ``bytes / 32`` sectors, an uncoalesced one several
    times as many.
    """
    for kind, moved in (("load", load_bytes), ("store", store_bytes)):
        sectors = stats[f"global_{kind}_sectors"]
        needed = -(-moved // 32)
        assert sectors * slack <= needed, (
            f"{what}: the warps' {kind}s touched {sectors:,} 32-byte sectors where {needed:,} hold every byte "
            f"the kernel {kind}s ({needed / sectors:.0%}, at least {slack:.0%} expected): the 32 threads of a warp "
            f"(consecutive threadIdx.x) should touch adjacent elements of the last axis"
        )
