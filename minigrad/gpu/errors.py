"""The errors a kernel launch can raise, each naming where on the GPU it happened.

Every simulator error is a :class:`KernelError` whose message starts with the
kernel's name, the block and the thread (CUDA's ``blockIdx``/``threadIdx``
coordinates, ``(x, y, z)``), then says what went wrong and how to fix it.
"""

from __future__ import annotations


class KernelError(RuntimeError):
    """A kernel did something a GPU would get wrong (or a launch was malformed)."""


class KernelLaunchError(KernelError, TypeError):
    """The launch itself is wrong: grid/block sizes or the arguments passed."""


class KernelSourceError(KernelLaunchError):
    """The kernel's source uses Python that ``cupyx.jit`` refuses to compile (refused before it runs)."""


class OutOfBoundsError(KernelError, IndexError):
    """A thread read or wrote outside a global or shared array."""


class DivergentBarrierError(KernelError):
    """Some threads of a block reached a ``syncthreads()`` that others did not."""


class DivergentWarpError(KernelError):
    """A warp shuffle that not every lane named in its mask calls (or calls the same way)."""


class SharedMemoryRaceError(KernelError):
    """Two threads of a block touched one shared address between two barriers, one writing."""


class UninitializedReadError(KernelError):
    """A thread read a shared-memory element that no thread of its block has written yet."""


class StepLimitError(KernelError):
    """A thread ran more loop iterations than the simulator's step limit: an infinite loop or a spin-wait."""


def where(kernel: str, block: tuple[int, int, int], thread: tuple[int, int, int] | None = None) -> str:
    """``kernel 'name', block (x, y, z), thread (x, y, z)`` - the prefix of every simulator message."""
    place = f"kernel '{kernel}', block {block}"
    return place if thread is None else f"{place}, thread {thread}"
