"""The GPU benchmark and the device check script, as far as a machine without a GPU can run them.

``benchmarks/gpu_kernels.py`` on the simulator (every kernel matches its
reference: the same reference expressions are what the GPU run compares
against with CuPy), its GPU table and card lookup on made-up results, and
``benchmarks/gpu_device_check.sh`` failing cleanly - exit status 3 and the
reason, nothing installed - where there is no usable GPU.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_device_check.sh"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


gpu_kernels = _load("gpu_kernels")
gpu_check_summary = _load("gpu_check_summary")
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="the device check is a bash script")


def test_every_library_kernel_on_the_simulator_matches_its_reference():
    rows = gpu_kernels.simulator_rows(seed=0)
    assert [r["kernel"] for r in rows] == [case.name for case in gpu_kernels.CASES]
    for r in rows:
        assert r["ok"], r
        assert r["threads"] > 0 and r["threads_per_second"] > 0 and r["global_load_bytes"] > 0, r
    matmul = next(r for r in rows if "matmul" in r["kernel"])
    assert matmul["shared_bytes"] > 0 and matmul["barriers"] > 0
    transpose = next(r for r in rows if "transpose" in r["kernel"])
    assert transpose["sector_efficiency"] == 1.0 and transpose["bank_conflict"] == 1  # coalesced, conflict-free
    assert all(0 < r["sector_efficiency"] <= 1 and r["global_sectors"] > 0 for r in rows)


def test_the_simulator_table_prints_sectors_beside_the_traffic(capsys):
    rows = [r for r in gpu_kernels.simulator_rows(seed=0) if r["kernel"] == "transpose, padded tile"]
    gpu_kernels.print_simulator_table(rows)
    header, row = capsys.readouterr().out.splitlines()[1:3]
    assert header.index("global store") < header.index("sectors") < header.index("sector eff")
    assert "100.0%" in row and "1-way" in row


def test_wrong_kernel_output_is_reported_as_a_failed_check():
    case = next(c for c in gpu_kernels.CASES if c.name == "bias + ReLU forward")
    wrong = gpu_kernels.Case(**{**case.__dict__, "reference": lambda xp, x, b: xp.maximum(x - b, 0)})
    args = wrong.inputs(gpu_kernels.np, gpu_kernels.np.random.default_rng(0), wrong.size(False))
    assert not gpu_kernels._matches(args, wrong, gpu_kernels.np, gpu_kernels.np.asarray)


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_mnist_epoch_code_runs_on_a_device_that_refuses_host_conversion(kind):
    """The GPU epoch's code, on the strict test device: no hidden host NumPy call, accuracy above chance."""
    from minigrad.testing import strict_backend

    (x, y), (xt, yt) = gpu_kernels.mnist_arrays(subset=True)[0]
    data = ((x[:512], y[:512]), (xt[:200], yt[:200]))
    strict_backend.register()
    result = gpu_kernels.minigrad_epoch(kind, data, epochs=1, device=strict_backend.DEVICE_TYPE, sync=lambda: None)
    assert result["epoch_seconds"] > 0
    assert result["accuracy"] > 0.3  # chance is 0.1; 512 images, one epoch


@pytest.mark.skipif(gpu_kernels.gpu_unavailable() is None, reason="a GPU is present: the GPU run is checked by pytest -m gpu")
def test_asking_for_the_gpu_without_one_exits_2_with_the_reason(capsys):
    assert gpu_kernels.main(["--target", "gpu"]) == 2
    assert "no GPU to benchmark on" in capsys.readouterr().err


@pytest.mark.parametrize("name, bandwidth, source", [
    ("NVIDIA H100 PCIe", 2000.0, "spec sheet (H100 PCIe)"),
    ("NVIDIA H100 80GB HBM3", 3350.0, "spec sheet (H100)"),
    ("NVIDIA GeForce GTX 1650", 128.1, "spec sheet (GTX 1650)"),
])
def test_card_is_looked_up_by_the_name_cuda_reports(name, bandwidth, source):
    card = gpu_kernels.card_profile(name)
    assert (card.bandwidth_gbs, card.source) == (bandwidth, source)


def test_unknown_card_falls_back_to_the_bandwidth_the_device_reports():
    card = gpu_kernels.card_profile("Some Future GPU", {"memoryClockRate": 1_000_000, "memoryBusWidth": 256})
    assert card.bandwidth_gbs == pytest.approx(64.0)  # 2 x 1 GHz x 32 bytes
    assert card.fp32_tflops is None
    assert gpu_kernels.card_profile("Some Future GPU").bandwidth_gbs is None


def _made_up_gpu_results():
    kernels = [dict(kernel=case.name, size="8x8", seconds=2e-4, reference_seconds=1e-4, gbs=500.0,
                    reference_gbs=1000.0, peak_share=0.25, gflops=120.0, ok=True) for case in gpu_kernels.CASES]
    kernels[0]["ok"] = False
    mnist = [dict(kernel="MNIST MLP 784-256-128-10, batch 128 (MNIST)", size="60,000 img",
                  minigrad=dict(epoch_seconds=1.5, accuracy=0.97), torch=dict(epoch_seconds=0.5, accuracy=0.97)),
             dict(kernel="MNIST CNN conv16-conv32-linear, batch 64 (MNIST)", size="60,000 img",
                  minigrad=dict(error="DeviceError: no cuda"), torch=dict(error="not installed (torch)"))]
    return kernels, mnist


def test_gpu_table_prints_every_kernel_and_the_mnist_rows(capsys):
    kernels, mnist = _made_up_gpu_results()
    gpu_kernels.print_gpu_table(gpu_kernels.card_profile("NVIDIA H200"), kernels, mnist)
    out = capsys.readouterr().out
    assert "NVIDIA H200 (4,800 GB/s, 67 TFLOP/s FP32" in out
    assert all(case.name in out for case in gpu_kernels.CASES)
    assert "2.00x" in out and "25%" in out and "FAIL" in out
    assert "3.00x" in out and "97.0%" in out and "DeviceError: no cuda" in out


def test_device_check_summary_has_one_row_per_step_kernel_and_workload(tmp_path):
    kernels, mnist = _made_up_gpu_results()
    card = gpu_kernels.card_profile("NVIDIA H200").__dict__
    (tmp_path / "gpu_kernels.json").write_text(json.dumps(dict(target="gpu", card=card, kernels=kernels, mnist=mnist)))
    (tmp_path / "pytest.log").write_text("....s\n======= 4 passed, 1 skipped in 9.10s =======\n")
    table = gpu_check_summary.summary(tmp_path, "NVIDIA H200", ("install .[gpu,test]", "95"), ("0", "12"), ("1", "60"))
    lines = table.splitlines()
    assert lines[0] == "minigrad GPU device check: NVIDIA H200 (peak 4,800 GB/s: spec sheet (H200))"
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 2 + len(kernels) + len(mnist) + 1
    assert "| ok: 4 passed, 1 skipped in 9.10s | 12 |" in table
    assert "MISMATCH: 0.200 ms vs CuPy 0.100 ms (2.00x), 500 GB/s = 25% of peak" in table
    assert "minigrad 1.50 s/epoch (97.0% test accuracy); PyTorch 0.50 s/epoch" in table
    assert "PyTorch: not installed (torch)" in table
    assert "| FAILED (exit 1) | 60 |" in table


def test_device_check_summary_without_benchmark_results(tmp_path):
    table = gpu_check_summary.summary(tmp_path, "GPU", ("install", "1"), ("2", "3"), ("124", "150"))
    assert "FAILED (exit 2): no output" in table
    assert "FAILED (exit 124), no results" in table
    (tmp_path / "pytest.log").write_text("sss\n3 skipped, 10 deselected in 1.0s\n")
    table = gpu_check_summary.summary(tmp_path, "GPU", ("install", "1"), ("5", "3"), ("0", "150"))
    assert "FAILED, no gpu-marked test passed: 3 skipped, 10 deselected in 1.0s" in table


def _check(tmp_path, *args, nvidia_smi):
    env = dict(os.environ, NVIDIA_SMI=str(nvidia_smi), MINIGRAD_CHECK_LOGS=str(tmp_path / "logs"),
               MINIGRAD_CHECK_VENV=str(tmp_path / "venv"))
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120)


def _fake_nvidia_smi(tmp_path, output, status=0):
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\necho '{output}'\nexit {status}\n")
    fake.chmod(0o755)
    return fake


@needs_bash
def test_device_check_without_a_driver_exits_3_and_installs_nothing(tmp_path):
    run = _check(tmp_path, nvidia_smi=tmp_path / "no-such-nvidia-smi")
    assert run.returncode == 3, run.stdout + run.stderr
    assert "no usable NVIDIA GPU here" in run.stderr and "was not found" in run.stderr
    assert "python benchmarks/gpu_kernels.py" in run.stderr  # what to run instead
    assert not (tmp_path / "venv").exists()


@needs_bash
def test_device_check_when_the_driver_sees_no_gpu_exits_3_with_its_message(tmp_path):
    run = _check(tmp_path, nvidia_smi=_fake_nvidia_smi(tmp_path, "No devices were found", status=6))
    assert run.returncode == 3, run.stdout + run.stderr
    assert "lists no GPU: No devices were found" in run.stderr
    assert not (tmp_path / "venv").exists()


@needs_bash
@pytest.mark.skipif(gpu_kernels.gpu_unavailable() is None, reason="a GPU is present: the check would run in full")
@pytest.mark.skipif(not (Path(sys.prefix) / "bin" / "python").exists(), reason="needs a POSIX venv layout")
def test_device_check_exits_3_when_cupy_cannot_use_the_gpu_the_driver_lists(tmp_path):
    env = dict(os.environ, NVIDIA_SMI=str(_fake_nvidia_smi(tmp_path, "GPU 0: NVIDIA H200 (UUID: GPU-0)")),
               MINIGRAD_CHECK_LOGS=str(tmp_path / "logs"), MINIGRAD_CHECK_VENV=sys.prefix)
    run = subprocess.run(["bash", str(SCRIPT), "--reuse-venv"], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "== NVIDIA H200;" in run.stdout and "reusing" in run.stdout
    assert "CuPy cannot use the GPU" in run.stderr


@needs_bash
def test_device_check_rejects_an_unknown_argument(tmp_path):
    run = _check(tmp_path, "--gpu", nvidia_smi=tmp_path / "no-such-nvidia-smi")
    assert run.returncode == 2 and "unknown argument '--gpu'" in run.stderr


@needs_bash
def test_device_check_never_replaces_a_folder_that_is_not_a_venv(tmp_path):
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "keep.txt").write_text("mine")
    run = _check(tmp_path, nvidia_smi=_fake_nvidia_smi(tmp_path, "GPU 0: NVIDIA H200 (UUID: GPU-0)"))
    assert run.returncode == 4 and "is not a venv" in run.stderr, run.stdout + run.stderr
    assert (tmp_path / "venv" / "keep.txt").read_text() == "mine"
