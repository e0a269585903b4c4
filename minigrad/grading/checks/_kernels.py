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

import numpy as np


def launch(submission, state, kernel_name: str, grid, block, args: list) -> dict:
    """(child) ``submission.<kernel_name>[grid, block](*args)``; the arrays after it and the launch's counters."""
    from minigrad.gpu import jit

    kernel = getattr(submission, kernel_name)
    kernel[tuple(grid) if isinstance(grid, list) else grid, tuple(block) if isinstance(block, list) else block](*args)
    stats = jit.last_launch_stats().as_dict()
    return {"arrays": [a for a in args if isinstance(a, np.ndarray)], "stats": stats}


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
