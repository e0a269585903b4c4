"""Per-launch traffic counters: what a kernel moved, the inputs of a roofline.

The simulator fills one :class:`LaunchStats` per launch. Every plain read of
one array element adds the element's size in bytes to a ``*_load_bytes``
counter, every plain write to a ``*_store_bytes`` counter; an
``atomic_add`` counts once in ``atomics`` (its read-modify-write is not
added to the byte counters). Counts are exact element accesses as the kernel
source performs them: the simulator has no cache, so a value read twice is
counted twice (a GPU's L1/L2 might serve the second read).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class LaunchStats:
    """What one kernel launch did.

    ``barriers`` counts block-wide barriers completed: a block of any size
    passing one ``syncthreads()`` adds 1, so a loop with a barrier per step
    adds one per step and per block. ``shuffles`` counts warp-shuffle calls,
    one per participating thread.
    """

    kernel: str = ""
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    blocks: int = 0
    threads_launched: int = 0
    global_load_bytes: int = 0
    global_store_bytes: int = 0
    shared_load_bytes: int = 0
    shared_store_bytes: int = 0
    atomics: int = 0
    barriers: int = 0
    shuffles: int = 0
    seconds: float = 0.0

    @property
    def global_bytes(self) -> int:
        """Global-memory traffic, loads plus stores, in bytes."""
        return self.global_load_bytes + self.global_store_bytes

    @property
    def shared_bytes(self) -> int:
        """Shared-memory traffic, loads plus stores, in bytes."""
        return self.shared_load_bytes + self.shared_store_bytes

    def arithmetic_intensity(self, flops: float) -> float:
        """FLOPs per byte of global traffic, given the kernel's FLOP count (the simulator does not count FLOPs)."""
        if self.global_bytes == 0:
            raise ValueError(f"kernel '{self.kernel}' moved no global bytes: arithmetic intensity is undefined")
        return flops / self.global_bytes

    def summary(self) -> str:
        """The counters as a few readable lines (for notebooks and benchmark logs)."""
        return "\n".join(
            [
                f"kernel '{self.kernel}': grid {self.grid} x block {self.block} = {self.threads_launched:,} threads "
                f"in {self.blocks:,} blocks, simulated in {self.seconds:.2f} s",
                f"  global memory: {self.global_load_bytes:,} B loaded, {self.global_store_bytes:,} B stored",
                f"  shared memory: {self.shared_load_bytes:,} B loaded, {self.shared_store_bytes:,} B stored",
                f"  atomics: {self.atomics:,}   barriers passed (per block, summed): {self.barriers:,}"
                + (f"   warp shuffles: {self.shuffles:,}" if self.shuffles else ""),
            ]
        )

    def as_dict(self) -> dict:
        """The counters as a plain dict (for tables and JSON)."""
        return asdict(self)
