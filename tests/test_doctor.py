"""``minigrad doctor``: each piece gets one line with its mark and fix; only a missing required piece exits 1.

Every test runs with an empty home and cache, and its own workspace folder
(``$MINIGRAD_WORKSPACE`` under tmp_path): never the learner's or the
repository's. Nothing may be downloaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from minigrad.course import doctor, lab
from minigrad.data import mnist
from minigrad.gpu.device import backend
from minigrad.grading import workspace
from minigrad.grading.manifest import chapters

FULL_MNIST = os.environ.get("MINIGRAD_DATA")
ROOT = Path(__file__).resolve().parents[1]


def _no_download(*args, **kwargs):
    raise AssertionError("minigrad doctor must not download anything")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("MINIGRAD_DATA", raising=False)
    monkeypatch.setenv(workspace.ENVIRONMENT_VARIABLE, str(tmp_path / "workspace"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(mnist, "download", _no_download)


def _one(checks, name):
    (check,) = [c for c in checks if c.name == name]
    return check


def _report(capsys, as_json=False) -> tuple[int, str]:
    status = doctor.main(as_json=as_json)
    return status, capsys.readouterr().out


@pytest.mark.skipif(not FULL_MNIST, reason="full MNIST not available (set MINIGRAD_DATA)")
def test_the_full_mnist_where_minigrad_data_points_verifies(monkeypatch):
    monkeypatch.setenv("MINIGRAD_DATA", FULL_MNIST)
    check = _one(doctor.check_data(), "mnist")
    assert check.status == "ok", check.text
    assert "$MINIGRAD_DATA" in check.text and "MD5" in check.text


def test_without_the_data_it_says_where_it_looked_and_the_fix_and_still_exits_0(tmp_path, capsys):
    status, out = _report(capsys)
    assert status == 0, out
    cache = tmp_path / "home" / ".cache" / "minigrad"
    line = next(line for line in out.splitlines() if line.startswith("missing") and "MNIST" in line)
    assert str(cache) in line and "the user cache" in line and "05, 06 and 09" in line and "MINIGRAD_DATA" in line
    fix = out.splitlines()[out.splitlines().index(line) + 1]
    assert "fix:" in fix and "MNIST(train=True)" in fix and "MNIST(train=False)" in fix
    assert "MNIST subset shipped with minigrad" in out


def test_a_corrupt_file_is_named_with_the_command_that_replaces_it(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train-images-idx3-ubyte.gz").write_bytes(b"not an archive")
    monkeypatch.setenv("MINIGRAD_DATA", str(data))
    check = _one(doctor.check_data(), "mnist")
    assert check.status == "warning" and "MD5" in check.text
    assert check.fix.startswith(f"rm {data / 'train-images-idx3-ubyte.gz'} && ")


def test_without_jupyterlab_it_names_the_lab_extra(monkeypatch, capsys):
    monkeypatch.setattr(lab, "lab_installed", lambda: False)
    (check,) = doctor.check_lab()
    assert check.status == "missing" and "`lab` extra" in check.text
    assert check.fix.endswith(f'install -e "{ROOT}[lab]"')  # a clone: the editable install
    monkeypatch.setattr(workspace, "course_clone", lambda: None)
    assert doctor.check_lab()[0].fix.endswith('install "minigrad[lab]"')
    status, out = _report(capsys)
    assert status == 0, out


def test_in_the_clone_itself_the_fix_is_the_readme_command(monkeypatch):
    monkeypatch.setattr(lab, "lab_installed", lambda: False)
    monkeypatch.chdir(ROOT)
    assert doctor.check_lab()[0].fix.endswith('install -e ".[lab]"')


def test_without_a_driver_it_says_no_nvidia_gpu_and_never_asks_cupy(monkeypatch):
    monkeypatch.setattr(backend, "nvidia_driver_found", lambda: False)
    monkeypatch.setattr(doctor, "probe_gpu", _no_download)
    checks = doctor.check_gpu()
    gpu = _one(checks, "gpu")
    assert "no NVIDIA GPU found" in gpu.text and "simulator needs none" in gpu.text
    assert not any(c.failed or c.status == "missing" for c in checks)


@pytest.mark.parametrize("probe, timeout, words", [
    ("import os; os.abort()", 60.0, "CuPy crashed"),
    ("import time; time.sleep(60)", 0.5, "did not answer"),
    ("print('{\"error\": \"cudaErrorInsufficientDriver\"}')", 60.0, "cudaErrorInsufficientDriver"),
])
def test_a_cupy_that_crashes_hangs_or_fails_costs_only_the_gpu_line(monkeypatch, probe, timeout, words):
    monkeypatch.setattr(backend, "nvidia_driver_found", lambda: True)
    monkeypatch.setattr(doctor, "_cupy_version", lambda: "14.0.0")
    monkeypatch.setattr(doctor, "PROBE", probe)
    monkeypatch.setattr(doctor, "PROBE_TIMEOUT_S", timeout)
    gpu = _one(doctor.check_gpu(), "gpu")
    assert gpu.status == "warning" and words in gpu.text and gpu.fix


def test_a_gpu_cupy_sees_is_named(monkeypatch):
    monkeypatch.setattr(backend, "nvidia_driver_found", lambda: True)
    monkeypatch.setattr(doctor, "_cupy_version", lambda: "14.0.0")
    monkeypatch.setattr(doctor, "PROBE", "print('{\"names\": [\"NVIDIA GeForce GTX 1050\"], \"driver\": 12040}')")
    gpu = _one(doctor.check_gpu(), "gpu")
    assert gpu.status == "ok" and "GTX 1050" in gpu.text and "CUDA 12.4" in gpu.text


def test_a_driver_without_cupy_names_the_gpu_extra(monkeypatch):
    monkeypatch.setattr(backend, "nvidia_driver_found", lambda: True)
    monkeypatch.setattr(doctor, "_cupy_version", lambda: None)
    (cupy,) = doctor.check_gpu()
    assert cupy.status == "missing" and not cupy.failed and cupy.fix.endswith('[gpu]"')


def test_no_workspace_yet_is_reported_with_the_command_that_makes_it(tmp_path, capsys):
    check = doctor.check_workspace()
    assert check.status == "missing" and not check.failed
    assert str(tmp_path / "workspace") in check.text and check.fix.endswith("minigrad exercises init")
    assert not (tmp_path / "workspace").exists()


def test_a_workspace_with_one_exercise_written_shows_each_chapters_progress(tmp_path):
    root = tmp_path / "workspace"
    workspace.sync(root)
    answers = root / "exercises" / "01_scalar_autograd.py"
    lines = answers.read_text().splitlines(keepends=True)
    answers.write_text("".join("        pass\n" if "Exercise 1.1: " in line else line for line in lines))
    check = doctor.check_workspace()
    assert check.status == "ok" and str(root) in check.text and " 1 of " in check.text
    assert check.details[0] == "01 Scalar autograd: 1 of 3 written"
    assert all(" 0 of " in line for line in check.details[1:])
    assert len(check.details) == len(chapters())


def test_a_required_piece_missing_exits_1_with_its_fix(monkeypatch, capsys):
    real = doctor._import

    def without_ml_dtypes(module):
        if module == "ml_dtypes":
            raise ImportError("No module named 'ml_dtypes'")
        return real(module)

    monkeypatch.setattr(doctor, "_import", without_ml_dtypes)
    status, out = _report(capsys)
    assert status == 1
    line = next(line for line in out.splitlines() if "ml_dtypes" in line)
    assert line.startswith("missing") and line.endswith("(required)")
    assert "install -e" in out.splitlines()[out.splitlines().index(line) + 1]
    assert "cannot run here yet" in out


def test_an_ml_dtypes_without_bfloat16_counts_as_missing(monkeypatch):
    real = doctor._import
    monkeypatch.setattr(doctor, "_import", lambda module: SimpleNamespace() if module == "ml_dtypes" else real(module))
    check = _one(doctor.check_packages(), "ml_dtypes")
    assert check.failed and "bfloat16" in check.text


def test_a_python_older_than_required_exits_1(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "PYTHON_REQUIRED", (99, 0))
    status, out = _report(capsys)
    assert status == 1 and "needs Python 99.0 or newer" in out


@pytest.mark.skipif(not (lab.bin_dir() / "minigrad").exists(), reason="this Python has no minigrad command")
def test_the_minigrad_command_on_the_path_is_this_pythons(monkeypatch):
    mine = str(lab.bin_dir() / "minigrad")
    monkeypatch.setattr(doctor.shutil, "which", lambda name: mine)
    assert doctor.check_command().status == "ok"
    monkeypatch.setattr(doctor.shutil, "which", lambda name: "/elsewhere/bin/minigrad")
    other = doctor.check_command()
    assert other.status == "warning" and "another Python's" in other.text and mine in other.text
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    absent = doctor.check_command()
    assert "not on the PATH" in absent.text
    if sys.prefix != sys.base_prefix:
        assert absent.fix == f"source {lab.bin_dir() / 'activate'}"


def test_the_blas_of_an_older_numpy_is_read_from_its_config():
    def show_config(**kwargs):
        raise TypeError("show_config() got an unexpected keyword argument 'mode'")

    old_numpy = SimpleNamespace(show_config=show_config,
                                __config__=SimpleNamespace(blas_mkl_info={"libraries": ["mkl_rt", "pthread"]}))
    assert doctor._blas(old_numpy).startswith("MKL")


def test_a_check_that_breaks_becomes_a_warning_line():
    def check_surprise():
        raise RuntimeError("boom")

    (line,) = doctor._guarded(check_surprise)
    assert line.status == "warning" and "boom" in line.text and not line.failed


def test_the_command_prints_json_and_imports_neither_torch_nor_cupy(tmp_path):
    script = (
        "import json, sys\n"
        "from minigrad.cli import main\n"
        "status = main(['doctor', '--json'])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'cupy', 'cupyx', 'jupyterlab'})\n"
        "print(json.dumps({'status': status, 'heavy': heavy}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MINIGRAD_DATA", "XDG_CACHE_HOME")}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), MINIGRAD_WORKSPACE=str(tmp_path / "workspace"),
               MPLCONFIGDIR=str(tmp_path / "matplotlib"))  # importing matplotlib makes its folder
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    *report, last = run.stdout.strip().splitlines()
    assert json.loads(last) == {"status": 0, "heavy": []}
    parsed = json.loads("\n".join(report))
    assert parsed["can_run"] is True
    names = {c["name"] for c in parsed["checks"]}
    assert {"python", "numpy", "ml_dtypes", "matplotlib", "ipywidgets", "jupyterlab", "cupy", "mnist", "workspace"} <= names
    assert all(c["status"] in doctor.MARKS for c in parsed["checks"])
    assert not (tmp_path / "workspace").exists() and not any((tmp_path / "home").iterdir())
