"""Where a launch runs: NumPy arrays on the simulator without CuPy; CuPy arrays through cupyx.jit on a GPU."""

import importlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sample_kernels as k

from minigrad.gpu import jit


def _run_without_cupy(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter in which importing cupy or cupyx fails."""
    blocker = "import sys\nsys.modules['cupy'] = None\nsys.modules['cupyx'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", blocker + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_minigrad_gpu_imports_and_simulates_without_cupy():
    result = _run_without_cupy(
        """
        import numpy as np
        from minigrad.gpu import jit

        @jit.rawkernel()
        def double(x, n):
            i = jit.grid(1)
            if i < n:
                x[i] = x[i] * 2

        x = np.arange(5.0)
        double[1, 8](x, 5)
        assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0], x
        assert not any(name.startswith("cupy") and sys.modules[name] for name in sys.modules)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_gpu_path_without_cupy_says_how_to_install_and_that_the_simulator_works():
    result = _run_without_cupy(
        """
        from minigrad.gpu.cupy_kernel import import_cupyx_jit
        try:
            import_cupyx_jit()
        except ImportError as error:
            print(error)
        """
    )
    assert 'pip install "minigrad[gpu]"' in result.stdout
    assert "launch the kernel with NumPy arrays to run it on minigrad's simulator" in result.stdout


def _import_or_skip(module: str):
    try:
        return importlib.import_module(module)
    except ImportError as error:
        pytest.skip(f"CuPy is not usable here: {error}")


def test_cupy_copy_of_a_kernel_points_at_cupyx_names_and_keeps_the_rest():
    cupyx_jit = _import_or_skip("cupyx.jit")
    from minigrad.gpu.cupy_kernel import cupy_function
    from minigrad.gpu.jit import shared_memory, syncthreads, threadIdx

    warps = 32  # equal to jit.warpsize, but not the same name: must stay a plain 32

    def kernel(x):
        s = shared_memory(np.float32, warps)
        s[threadIdx.x] = x[threadIdx.x]
        syncthreads()
        x[threadIdx.x] = s[warps - 1 - threadIdx.x] + k.BLOCK + jit.warpsize

    copy = cupy_function(kernel)
    assert copy.__code__ is kernel.__code__
    gpu_jit = copy.__globals__["jit"]  # cupyx.jit's names, plus CuPy's ufuncs for jit's math functions
    assert all(getattr(gpu_jit, name) is getattr(cupyx_jit, name) for name in jit.KERNEL_NAMES)
    assert gpu_jit.exp is importlib.import_module("cupy").exp
    assert copy.__globals__["np"] is np and copy.__globals__["k"] is k
    cells = dict(zip(copy.__code__.co_freevars, (c.cell_contents for c in copy.__closure__)))
    assert cells["shared_memory"] is cupyx_jit.shared_memory
    assert cells["syncthreads"] is cupyx_jit.syncthreads
    assert cells["threadIdx"] is cupyx_jit.threadIdx
    assert cells["warps"] == 32 and type(cells["warps"]) is int
    assert kernel.__globals__["jit"] is jit  # the original is untouched


@pytest.mark.gpu
def test_same_kernels_on_the_gpu_match_the_simulator(cupy):
    n = 1000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    on_host = np.zeros(n, np.float32)
    k.add[(n + 127) // 128, 128](x, y, on_host, n)
    on_device = cupy.zeros(n, cupy.float32)
    k.add[(n + 127) // 128, 128](cupy.asarray(x), cupy.asarray(y), on_device, n)
    np.testing.assert_array_equal(on_device.get(), on_host)
    assert jit.last_launch_stats() is None  # a GPU launch has no simulator counters

    total = cupy.zeros(1, cupy.float32)
    k.block_sum[(n + k.BLOCK - 1) // k.BLOCK, k.BLOCK](cupy.asarray(x), total, n)
    np.testing.assert_allclose(total.get()[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)

    a = np.random.default_rng(2).standard_normal((40, 24)).astype(np.float32)
    b = np.random.default_rng(3).standard_normal((24, 36)).astype(np.float32)
    c = cupy.zeros((40, 36), cupy.float32)
    k.tiled_matmul[(3, 3), (k.TILE, k.TILE)](cupy.asarray(a), cupy.asarray(b), c, 40, 24, 36)
    np.testing.assert_allclose(c.get(), a @ b, rtol=1e-5, atol=1e-4)
