"""The ``"cuda"`` device of the tensor core: CuPy arrays behind ``x.to("cuda")``.

``backend.py`` registers CuPy as the ``"cuda"`` backend on first use (or says
whether CuPy or a GPU is missing); ``backend_ops.py`` plugs the fused kernels
of :mod:`minigrad.gpu.kernels` into the core's ops and the optimizers, per
device. Kernels themselves need none of this: a launch with CuPy arrays runs
on the GPU whether or not ``"cuda"`` is registered.
"""
