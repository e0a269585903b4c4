"""What the allocators themselves say, to show beside the tracker's exact count.

- CPU: :mod:`tracemalloc` sees every allocation Python and NumPy make
  (NumPy reports its buffers to it). Its peak is higher than the tracker's:
  it also counts Python objects and the short-lived arrays inside an op
  (``a * b + c`` makes ``a * b`` first) that never become a tensor.
- GPU: CuPy's memory pool, ``used_bytes()``: the bytes of the pool's blocks
  in use, each rounded up to 512 bytes. It is sampled when a GPU buffer is
  reported, so the peak it gives is the largest use seen at those moments.

Both figures count only what was allocated after the tracker started (each
is measured against its value at the start).
"""

from __future__ import annotations

import sys
import tracemalloc

__all__ = ["TracemallocProbe", "CupyPoolProbe"]


class TracemallocProbe:
    """Starts tracemalloc (if it is not running) and gives the peak traced bytes above the starting point."""

    def __init__(self) -> None:
        self.started_here = not tracemalloc.is_tracing()
        if self.started_here:
            tracemalloc.start()
        else:
            tracemalloc.reset_peak()
        self.baseline = tracemalloc.get_traced_memory()[0]
        self.peak: int | None = None

    def current_peak(self) -> int:
        return max(0, tracemalloc.get_traced_memory()[1] - self.baseline)

    def stop(self) -> None:
        self.peak = self.current_peak()
        if self.started_here:
            tracemalloc.stop()


class CupyPoolProbe:
    """Samples CuPy's default pool's ``used_bytes()``; None when CuPy is not imported or has no GPU."""

    def __init__(self) -> None:
        self.pool = None
        cupy = sys.modules.get("cupy")
        if cupy is None:
            return
        try:
            if cupy.cuda.runtime.getDeviceCount() < 1:
                return
            self.pool = cupy.get_default_memory_pool()
            self.baseline = self.pool.used_bytes()
        except Exception:  # CuPy installed without a driver or device
            self.pool = None
        self.peak = 0

    @property
    def active(self) -> bool:
        return self.pool is not None

    def sample(self) -> None:
        used = self.pool.used_bytes() - self.baseline
        if used > self.peak:
            self.peak = used
