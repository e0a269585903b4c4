"""The kernel simulator: every thread of a launch run on the CPU, with real barriers and checked memory.

A kernel launched with NumPy arrays runs here, once ``refusals.py`` has
refused what cupyx.jit would not compile. ``threads.py`` says which thread is
running, ``barriers.py`` makes a thread able to pause at a barrier,
``scheduler.py`` runs the blocks and their threads barrier to barrier within
``limits.py``'s limits, ``arrays.py`` checks and counts every access to global
and shared arrays (``poison.py`` stands for unwritten shared memory,
``races.py`` watches it for races), ``warps.py`` exchanges the values of warp
shuffles, ``sectors.py`` rebuilds each warp's accesses into 32-byte sectors
and bank conflicts, and ``counters.py`` holds what a launch moved. The reading
order of :mod:`minigrad.gpu` lists them with their sizes.
"""
