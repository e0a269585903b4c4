"""Warp shuffles: the 32 threads of a warp swapping register values without shared memory.

A block's threads are grouped into warps of 32 by linear index (lane =
linear index % 32). ``shfl_down_sync(mask, value, delta)`` returns the
``value`` that lane ``lane + delta`` passed to the same call, which makes a
warp-level reduction five steps with no shared memory and no barrier::

    offset = 16
    while offset > 0:
        total += jit.shfl_down_sync(0xFFFFFFFF, total, offset)
        offset //= 2

A shuffle is a meeting point, like a barrier but for one warp: the
simulator rewrites each call into a ``yield`` (see ``barriers.py``), and once
every thread of the block has stopped somewhere, :func:`exchange` hands each
waiting warp its values. Every lane named in ``mask`` must be waiting at the
same call with the same mask - otherwise the result is undefined on a GPU and
:class:`DivergentWarpError` here. Lanes of a ``width``-wide segment read only
inside their segment; a source lane past the segment's end (or before its
start, for ``shfl_up_sync``) gives the lane its own value, as in CUDA.
"""

from __future__ import annotations

from minigrad.gpu.errors import DivergentWarpError, KernelError, where
from minigrad.gpu.simulator.threads import CURRENT, warpsize

SHUFFLES = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync")
FULL_MASK = 0xFFFFFFFF


def _source_lane(kind: str, lane: int, val_id: int, width: int):
    """The lane whose value ``lane`` receives, or None for its own value."""
    start = lane - lane % width
    if kind == "shfl_down_sync":
        source = lane + val_id
        return source if source < start + width else None
    if kind == "shfl_up_sync":
        source = lane - val_id
        return source if source >= start else None
    if kind == "shfl_xor_sync":
        source = lane ^ val_id
        return source if source < start + width else None
    return start + val_id % width  # shfl_sync: read lane val_id of the segment


def _lanes(mask: int) -> set[int]:
    return {lane for lane in range(warpsize) if mask >> lane & 1}


def exchange(calls: dict, elsewhere, threads: list, stats) -> dict:
    """The value each waiting thread receives, given ``calls``: linear thread -> (kind, mask, value, val_id, width, line).

    ``elsewhere(linear)`` says where a thread that is not at a shuffle is
    (for the error message).
    """
    by_warp: dict[int, dict] = {}
    for linear, call in calls.items():
        by_warp.setdefault(linear // warpsize, {})[linear % warpsize] = call
    received = {}
    for warp, lanes in by_warp.items():
        first = warp * warpsize
        present = min(warpsize, len(threads) - first)
        kind, mask, _, _, width, line = next(iter(lanes.values()))
        prefix = f"{where(CURRENT.kernel, CURRENT.block_idx)}, warp {warp}"
        if not isinstance(width, int) or width not in (1, 2, 4, 8, 16, 32):
            raise KernelError(f"{prefix}: {kind} width must be a power of two up to 32, got {width!r}")
        for lane, (other_kind, other_mask, _, _, _, other_line) in lanes.items():
            if (other_kind, other_mask, other_line) != (kind, mask, line):
                raise DivergentWarpError(
                    f"{prefix}: lanes of one warp meet at different shuffles: lane {lane} "
                    f"(thread {threads[first + lane]}) calls {other_kind} on line {other_line} with mask "
                    f"{other_mask:#x}, others {kind} on line {line} with mask {mask:#x}"
                )
        wanted = _lanes(mask)
        missing_threads = sorted(lane for lane in wanted if lane >= present)
        if missing_threads:
            raise DivergentWarpError(
                f"{prefix}: {kind} on line {line} names lanes up to {max(missing_threads)} in mask {mask:#x}, "
                f"but this warp has only {present} threads (a block of {len(threads)}); use a mask with one bit "
                f"per thread that exists, e.g. {(1 << present) - 1:#x}"
            )
        absent = sorted(wanted - lanes.keys())
        if absent:
            shown = "; ".join(
                f"lane {lane} (thread {threads[first + lane]}) {elsewhere(first + lane)}" for lane in absent[:3]
            )
            more = f" and {len(absent) - 3} more lanes" if len(absent) > 3 else ""
            raise DivergentWarpError(
                f"{prefix}: {kind} on line {line} with mask {mask:#x} waits for lanes that never call it: "
                f"{shown}{more}. Every lane named in the mask must make the same call (on a GPU the result is "
                f"undefined): call it outside the if-block, or give a mask of only the lanes that take it."
            )
        outsiders = sorted(lanes.keys() - wanted)
        if outsiders:
            raise DivergentWarpError(
                f"{prefix}: lane {outsiders[0]} (thread {threads[first + outsiders[0]]}) calls {kind} on line "
                f"{line} with mask {mask:#x}, which does not include it; a lane's own bit must be in the mask"
            )
        for lane, (_, _, value, val_id, _, _) in lanes.items():
            source = _source_lane(kind, lane, int(val_id), width)
            if source is None:
                received[first + lane] = value
            elif source in lanes:
                received[first + lane] = lanes[source][2]
            else:
                raise DivergentWarpError(
                    f"{prefix}: lane {lane} (thread {threads[first + lane]}) reads lane {source} through {kind} on "
                    f"line {line}, but lane {source} is not in mask {mask:#x}, so its value is undefined"
                )
        stats.shuffles += len(lanes)
    return received


def _shuffle_outside_a_kernel(name):
    def shuffle(mask, var, val_id, *, width=32):
        raise KernelError(
            f"jit.{name}(...) only works called directly in a kernel's code (not in a device function, a "
            f"comprehension or a lambda, and not outside a launch)"
        )

    shuffle.__name__ = name
    shuffle.__doc__ = f"Warp shuffle ``{name}(mask, value, val_id, width=32)``; see minigrad/gpu/simulator/warps.py."
    return shuffle


shfl_sync = _shuffle_outside_a_kernel("shfl_sync")
shfl_up_sync = _shuffle_outside_a_kernel("shfl_up_sync")
shfl_down_sync = _shuffle_outside_a_kernel("shfl_down_sync")
shfl_xor_sync = _shuffle_outside_a_kernel("shfl_xor_sync")
