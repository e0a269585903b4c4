"""Per-launch traffic counters: what a kernel moved, the inputs of a roofline.

The simulator fills one :class:`LaunchStats` per launch. Every plain read of
one array element adds the element's size in bytes to a ``*_load_bytes``
counter, every plain write to a ``*_store_bytes`` counter; an
``atomic_add`` counts once in ``atomics`` (its read-modify-write is not
added to the byte counters). Counts are exact element accesses as the kernel
source performs them: the simulator has no cache, so a value read twice is
counted twice (a GPU's L1/L2 might serve the second read). These are the
*requested* bytes.

What the memory system moves is counted per warp instruction (see
``sectors.py``): ``global_*_sectors`` are the 32-byte sectors the warps'
loads and stores touched, so ``32 * sectors`` is the traffic of a GPU
without caches at the sector level, and :attr:`LaunchStats.sector_efficiency`
(requested bytes / sector bytes) says how much of it the kernel used: 100 %
for a coalesced access, 12.5 % when each thread of a warp reads a float32
from another row. For shared memory, ``shared_wavefronts`` counts the passes
the banks needed (one per conflict-free warp instruction) and
``shared_max_conflict`` the worst conflict degree of the launch (0 when it
made no shared-memory access).
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
    global_load_requests: int = 0
    global_load_sectors: int = 0
    global_store_requests: int = 0
    global_store_sectors: int = 0
    global_load_warp_bytes: int = 0
    global_store_warp_bytes: int = 0
    shared_requests: int = 0
    shared_wavefronts: int = 0
    shared_max_conflict: int = 0
    seconds: float = 0.0

    @property
    def global_bytes(self) -> int:
        """Global-memory traffic, loads plus stores, in bytes."""
        return self.global_load_bytes + self.global_store_bytes

    @property
    def global_sectors(self) -> int:
        """32-byte sectors touched by the warps' global loads and stores."""
        return self.global_load_sectors + self.global_store_sectors

    @property
    def sector_bytes(self) -> int:
        """Global traffic counted in whole sectors: what the memory system moves for these warp accesses."""
        return 32 * self.global_sectors

    @property
    def sector_efficiency(self) -> float:
        """Requested bytes / sector bytes of the global accesses: 1.0 when coalesced (1.0 if none).

        The requested bytes are counted per warp instruction, once per
        distinct address (``global_*_warp_bytes``): threads of a warp reading
        the same float are served by one transfer, so a broadcast is not
        counted as more than the sector holds. Without broadcasts they equal
        ``global_bytes``.
        """
        warp_bytes = self.global_load_warp_bytes + self.global_store_warp_bytes
        return warp_bytes / self.sector_bytes if self.global_sectors else 1.0

    @property
    def load_sector_efficiency(self) -> float:
        """:attr:`sector_efficiency` of the global loads alone."""
        sectors = self.global_load_sectors
        return self.global_load_warp_bytes / (32 * sectors) if sectors else 1.0

    @property
    def store_sector_efficiency(self) -> float:
        """:attr:`sector_efficiency` of the global stores alone."""
        sectors = self.global_store_sectors
        return self.global_store_warp_bytes / (32 * sectors) if sectors else 1.0

    @property
    def shared_bank_conflicts(self) -> int:
        """Extra passes the shared-memory banks needed: 0 when every warp instruction was conflict-free."""
        return self.shared_wavefronts - self.shared_requests

    @property
    def shared_bytes(self) -> int:
        """Shared-memory traffic, loads plus stores, in bytes."""
        return self.shared_load_bytes + self.shared_store_bytes

    def arithmetic_intensity(self, flops: float, traffic: str = "requested") -> float:
        """FLOPs per byte of global traffic, given the kernel's FLOP count (the simulator does not count FLOPs).

        ``traffic="requested"``: per requested byte, with no cache (every
        read counted, whole or not); ``"sectors"``: per byte of the 32-byte
        sectors the warps touched (still no cache: a GPU's L1/L2 can serve
        repeated sectors, so its DRAM traffic may be far lower).
        """
        if traffic not in ("requested", "sectors"):
            raise ValueError(f"arithmetic_intensity: traffic must be 'requested' or 'sectors', got {traffic!r}")
        moved = self.global_bytes if traffic == "requested" else self.sector_bytes
        if moved == 0:
            raise ValueError(f"kernel '{self.kernel}' moved no global bytes: arithmetic intensity is undefined")
        return flops / moved

    def summary(self) -> str:
        """The counters as a few readable lines (for notebooks and benchmark logs)."""
        return "\n".join(
            [
                f"kernel '{self.kernel}': grid {self.grid} x block {self.block} = {self.threads_launched:,} threads "
                f"in {self.blocks:,} blocks, simulated in {self.seconds:.2f} s",
                f"  global memory: {self.global_load_bytes:,} B loaded, {self.global_store_bytes:,} B stored; "
                f"{self.global_sectors:,} sectors ({self.sector_efficiency:.0%} of their bytes used)",
                f"  shared memory: {self.shared_load_bytes:,} B loaded, {self.shared_store_bytes:,} B stored"
                + (f"; worst bank conflict {self.shared_max_conflict}-way, {self.shared_bank_conflicts:,} extra passes"
                   if self.shared_requests else ""),
                f"  atomics: {self.atomics:,}   barriers passed (per block, summed): {self.barriers:,}"
                + (f"   warp shuffles: {self.shuffles:,}" if self.shuffles else ""),
            ]
        )

    def as_dict(self) -> dict:
        """The counters as a plain dict (for tables and JSON)."""
        return asdict(self)
