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
:class:`DivergentWarpError` here. Lanes of one warp may meet in separate
groups, each with its own mask (two half-warps with ``0x0000FFFF`` and
``0xFFFF0000``): each group is checked on its own. Lanes of a ``width``-wide segment read only
inside their segment; a source lane past the segment's end (or before its
start, for ``shfl_up_sync``) gives the lane its own value, as in CUDA.
"""

from __future__ import annotations

import operator

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


def _as_int(value):
    """An integer argument of a shuffle as a Python int (``numpy.int32(16)`` is 16), or None."""
    try:
        return operator.index(value)
    except TypeError:
        return None


def exchange(calls: dict, elsewhere, threads: list, stats) -> dict:
    """The value each waiting thread receives, given ``calls``: linear thread -> (kind, mask, value, val_id, width, line).

    ``elsewhere(linear)`` says where a thread that is not at a shuffle is
    (for the error message).
    """
    by_group: dict[tuple, dict] = {}  # (warp, mask) -> lane -> call
    for linear, call in calls.items():
        mask = _as_int(call[1])
        if mask is None or not 0 <= mask <= FULL_MASK:
            raise KernelError(
                f"{where(CURRENT.kernel, CURRENT.block_idx, threads[linear])}: {call[0]} on line {call[5]}: the "
                f"mask is an unsigned 32-bit int (one bit per lane, e.g. 0xFFFFFFFF), got {_shown(call[1])}"
            )
        by_group.setdefault((linear // warpsize, mask), {})[linear % warpsize] = call
    received = {}
    for (warp, mask), lanes in by_group.items():
        received.update(_exchange_group(warp, mask, lanes, elsewhere, threads, stats, by_group))
    return received


def _shown(value) -> str:
    return repr(value.item()) if hasattr(value, "item") and not isinstance(value, (list, tuple)) else repr(value)


def _exchange_group(warp, mask, lanes, elsewhere, threads, stats, by_group) -> dict:
    """The values of the lanes of one warp that called a shuffle with one mask."""
    received = {}
    first = warp * warpsize
    present = min(warpsize, len(threads) - first)
    kind, _, _, _, width, line = next(iter(lanes.values()))
    prefix = f"{where(CURRENT.kernel, CURRENT.block_idx)}, warp {warp}"
    width_value = _as_int(width)
    if width_value not in (1, 2, 4, 8, 16, 32):
        raise KernelError(f"{prefix}: {kind} width must be a power of two up to 32, got {_shown(width)}")
    width = width_value
    for lane, (other_kind, _, _, _, _, other_line) in lanes.items():
        if (other_kind, other_line) != (kind, line):
            raise DivergentWarpError(
                f"{prefix}: lanes of one warp meet at different shuffles: lane {lane} "
                f"(thread {threads[first + lane]}) calls {other_kind} on line {other_line} with mask "
                f"{mask:#x}, others {kind} on line {line} with the same mask"
            )
    wanted = _lanes(mask)
    for other_warp, other_mask in by_group:
        clash = sorted(_lanes(other_mask) & wanted) if other_warp == warp and other_mask != mask else []
        if clash:
            lane = clash[0]
            raise DivergentWarpError(
                f"{prefix}: lanes of one warp meet at shuffles with overlapping masks: {kind} on line {line} "
                f"with mask {mask:#x}, and another with mask {other_mask:#x}; both name lane {lane}. Every "
                f"lane named in a mask must call the shuffle with that same mask."
            )
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
        offset = _as_int(val_id)
        if offset is None or kind in ("shfl_up_sync", "shfl_down_sync") and not 0 <= offset <= FULL_MASK:
            fix = ("use shfl_down_sync with a positive offset to read a higher lane" if kind == "shfl_up_sync"
                   else "use shfl_up_sync with a positive offset to read a lower lane")
            what = "an integer" if offset is None else f"an unsigned int (0 or more); {fix}"
            raise KernelError(
                f"{where(CURRENT.kernel, CURRENT.block_idx, threads[first + lane])}: {kind} on line {line}: its "
                f"third argument (the lane offset) must be {what}, got {_shown(val_id)}"
            )
        source = _source_lane(kind, lane, offset, width)
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
