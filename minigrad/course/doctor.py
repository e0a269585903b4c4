"""``minigrad doctor``: what the course needs on this machine, what is there, and the command that fixes the rest.

One line per piece, marked ``ok``, ``missing``, ``warning`` or ``info``; a
piece that is not ``ok`` names the one command that fixes it.

Invariants
- Nothing is downloaded, installed or written (importing matplotlib may make
  its own config folder, as any use of it does); the grader is not run.
- No check can crash the report: a check that fails in an unexpected way
  reports its error as a warning (CuPy is probed in a child process, so even
  a crashing install only costs its own line).
- Exit status 0 when the course can run (a ``required`` check is not
  ``missing``), else 1. Optional pieces (JupyterLab, CuPy and a GPU, PyTorch,
  the full MNIST, the workspace) are reported with their fix, never a failure.
- Fast (about 2 s): PyTorch and JupyterLab are looked up, not imported;
  CuPy is imported (in the child) only where an NVIDIA driver could answer.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from minigrad.course import lab
from minigrad.grading import workspace

MARKS = ("ok", "missing", "warning", "info")
PYTHON_REQUIRED = (3, 10)
CUPY_DISTRIBUTIONS = ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy")
PROBE_TIMEOUT_S = 30.0
WIDGETS_EXTENSION = Path("@jupyter-widgets") / "jupyterlab-manager"

# Run in a child process: a CuPy that hangs or crashes there costs only the GPU line.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from minigrad.gpu.device.backend import no_gpu_reason
try:
    import cupy
    runtime = cupy.cuda.runtime
    count = runtime.getDeviceCount()
    names = [runtime.getDeviceProperties(i)["name"] for i in range(count)]
    names = [n.decode(errors="replace") if isinstance(n, bytes) else str(n) for n in names]
    print(json.dumps({"names": names, "driver": runtime.driverGetVersion()}))
except Exception as err:
    print(json.dumps({"error": no_gpu_reason(err)}))
"""


@dataclass
class Check:
    """One line of the report: ``status`` is one of :data:`MARKS`; ``fix``, a command, is shown unless it is ok."""

    name: str
    status: str
    text: str
    fix: str | None = None
    required: bool = False
    details: list[str] = field(default_factory=list)  # further lines, shown indented under this one

    @property
    def failed(self) -> bool:
        return self.required and self.status == "missing"


def _shown(path: Path | str) -> str:
    """``path`` as the report writes it: absolute, except the current folder itself, which is ``.``."""
    return "." if Path(path) == Path.cwd() else str(path)


def _quoted(path: Path | str) -> str:
    return shlex.quote(_shown(path))


def _pip() -> str:
    pip = lab.bin_dir() / ("pip.exe" if os.name == "nt" else "pip")
    return _quoted(pip) if pip.exists() else f"{_quoted(sys.executable)} -m pip"


def install_command(extra: str | None = None) -> str:
    """The pip command that installs the course (with ``extra``) into this Python: editable in a clone."""
    clone = workspace.course_clone()
    suffix = f"[{extra}]" if extra else ""
    if clone is not None:
        return f'{_pip()} install -e "{_shown(clone)}{suffix}"'
    return f'{_pip()} install "minigrad{suffix}"'


def _version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (read from its metadata: nothing is imported), or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _found(module: str) -> bool:
    """Whether ``module`` could be imported (found, not imported; a parent package is imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _import(module: str):
    return importlib.import_module(module)


def _activate_command() -> str:
    folder = lab.bin_dir()
    if os.name == "nt":
        return _quoted(folder / "activate")
    return f"source {_quoted(folder / 'activate')}"


def _in_venv() -> bool:
    return sys.prefix != sys.base_prefix


# --- Python and the minigrad command -------------------------------------------------------------------


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    where = f"venv {sys.prefix}" if _in_venv() else "no virtual environment"
    text = f"Python {version} ({sys.executable}, {where})"
    if sys.version_info[:2] >= PYTHON_REQUIRED:
        return Check("python", "ok", text, required=True)
    need = ".".join(map(str, PYTHON_REQUIRED))
    return Check("python", "missing", f"{text}: the course needs Python {need} or newer", required=True,
                 fix=f"python{need} -m venv .venv  (any Python >= {need}; then install the course into .venv)")


def _installed_from() -> Path | None:
    """The folder an editable install of minigrad points at (pip's ``direct_url.json``), or None."""
    try:
        record = json.loads(importlib.metadata.distribution("minigrad").read_text("direct_url.json") or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    url = record.get("url", "")
    if not record.get("dir_info", {}).get("editable") or not url.startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(url).path))


def check_minigrad() -> Check:
    """Which minigrad this is, and whether the installed ``minigrad`` command runs the same source."""
    version = _version("minigrad")
    clone = workspace.course_clone()
    where = f"the clone {clone}" if clone is not None else str(workspace.PACKAGE_DIR)
    if version is None:
        return Check("minigrad", "warning", f"minigrad from {where}: not installed in this Python (imported from the "
                     f"current folder or PYTHONPATH)", fix=install_command())
    text = f"minigrad {version} from {where}"
    installed = _installed_from()
    if installed is not None and clone is not None and installed.resolve() != clone.resolve():
        return Check("minigrad", "warning", f"{text}; this Python's install is {installed} (the current folder or "
                     f"PYTHONPATH chose this one)", fix=install_command())
    return Check("minigrad", "ok", text)


def check_command() -> Check:
    """Whether ``minigrad`` on the PATH is this Python's (another venv's would grade with other packages)."""
    mine = lab.bin_dir() / ("minigrad.exe" if os.name == "nt" else "minigrad")
    on_path = shutil.which("minigrad")
    if not mine.exists():
        return Check("command", "warning", f"this Python has no `minigrad` command in {lab.bin_dir()}",
                     fix=install_command())
    if on_path is not None and Path(on_path).resolve().parent == lab.bin_dir().resolve():
        return Check("command", "ok", f"`minigrad` on the PATH is this Python's ({on_path})")
    found = f"on the PATH is {on_path}, another Python's" if on_path else "is not on the PATH"
    text = f"`minigrad` {found}: activate this Python's environment, or run {mine}"
    if _in_venv():
        return Check("command", "warning", text, fix=_activate_command())
    return Check("command", "warning", text, fix=f'export PATH={shlex.quote(str(lab.bin_dir()))}:"$PATH"')


# --- the required packages -----------------------------------------------------------------------------


def _blas(np) -> str:
    """NumPy's BLAS in words, e.g. ``OpenBLAS 0.3.27 (scipy-openblas), 16 threads``; empty if NumPy does not say."""
    try:
        config = np.show_config(mode="dicts")
    except TypeError:  # NumPy < 1.26: no mode=, the build info is in numpy.__config__'s *_info dicts
        config = None
    if config is not None:
        blas = config.get("Build Dependencies", {}).get("blas", {})
        name, version = blas.get("name", ""), blas.get("version", "")
    else:
        name, version = "", ""
        for key in ("blas_mkl_info", "openblas_info", "accelerate_info", "blis_info", "blas_opt_info"):
            info = getattr(np.__config__, key, None)
            if info:
                name = ",".join(info.get("libraries", [])) or key.removesuffix("_info")
                break
    lowered = name.lower()
    family = next((label for word, label in (("mkl", "MKL"), ("openblas", "OpenBLAS"), ("accelerate", "Accelerate"),
                                             ("veclib", "Accelerate"), ("blis", "BLIS")) if word in lowered), name)
    if not family:
        return ""
    words = f"{family} {version}".strip() + (f" ({name})" if name and name.lower() != family.lower() else "")
    threads = _blas_threads()
    return words + (f", {threads}" if threads else "")


def _blas_threads() -> str:
    """How many threads the BLAS uses, where that is cheap to know (threadpoolctl, or the variables that set it)."""
    if _found("threadpoolctl"):
        import threadpoolctl

        counts = {i.get("num_threads") for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"}
        if len(counts) == 1 and None not in counts:
            return f"{counts.pop()} threads"
    for variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(variable):
            return f"{variable}={os.environ[variable]}"
    return ""


def _required(name: str, module: str, describe=None) -> Check:
    """A package the course cannot run without: importable, with its version (and what ``describe`` adds)."""
    try:
        imported = _import(module)
        extra = describe(imported) if describe else ""
    except Exception as err:  # ImportError, or a broken install raising anything on import
        return Check(name, "missing", f"{name}: cannot be imported ({type(err).__name__}: {err}); the course needs it",
                     fix=install_command(), required=True)
    version = getattr(imported, "__version__", None) or _version(name) or "(version unknown)"
    return Check(name, "ok", f"{name} {version}" + (f", {extra}" if extra else ""), required=True)


def _numpy_words(np) -> str:
    try:
        blas = _blas(np)
    except Exception as err:  # the build report is a convenience: NumPy works without it
        blas = f"unknown ({type(err).__name__}: {err})"
    return f"BLAS: {blas or 'not reported by this NumPy'}"


def _ml_dtypes_words(ml_dtypes) -> str:
    if not hasattr(ml_dtypes, "bfloat16"):
        raise ImportError("this ml_dtypes has no bfloat16")
    return "bfloat16"


def check_packages() -> list[Check]:
    """The packages the course cannot run without (each one ``required``)."""
    return [
        _required("numpy", "numpy", _numpy_words),
        _required("ml_dtypes", "ml_dtypes", _ml_dtypes_words),
        _required("matplotlib", "matplotlib"),
        _required("ipywidgets", "ipywidgets"),
    ]


# --- JupyterLab ----------------------------------------------------------------------------------------


def _labextension_folders() -> list[Path]:
    try:
        from jupyter_core.paths import jupyter_path

        return [Path(p) for p in jupyter_path("labextensions")]
    except Exception:  # jupyter_core comes with ipykernel; without it, look where pip puts them
        return [Path(sys.prefix) / "share" / "jupyter" / "labextensions"]


def check_lab() -> list[Check]:
    """JupyterLab (the ``lab`` extra, ``minigrad lab``) and the widget extension the stepper widget needs."""
    if not lab.lab_installed():
        return [Check("jupyterlab", "missing", "JupyterLab: not installed (the `lab` extra, for `minigrad lab` and "
                      "the course command)", fix=install_command("lab"))]
    checks = [Check("jupyterlab", "ok", f"JupyterLab {_version('jupyterlab') or '(version unknown)'}")]
    widgets = _version("jupyterlab_widgets")
    folders = _labextension_folders()
    if widgets is None:
        checks.append(Check("widgets-extension", "warning", "JupyterLab's widget extension (jupyterlab_widgets) is "
                            "not installed: the widgets (the backprop stepper, the explorers) cannot display",
                            fix=f"{_pip()} install jupyterlab_widgets"))
    elif not any((folder / WIDGETS_EXTENSION / "package.json").is_file() for folder in folders):
        checks.append(Check("widgets-extension", "warning", f"jupyterlab_widgets {widgets} is installed but its "
                            f"labextension is in none of {', '.join(map(str, folders))}",
                            fix=f"{_pip()} install --force-reinstall jupyterlab_widgets"))
    else:
        checks.append(Check("widgets-extension", "ok", f"widget extension: jupyterlab_widgets {widgets}"))
    return checks


# --- CuPy, a GPU, the compile check, PyTorch -----------------------------------------------------------


def _cupy_version() -> str | None:
    """CuPy's version if it is installed (from its metadata; CuPy is not imported)."""
    if not _found("cupy"):
        return None
    return next(filter(None, map(_version, CUPY_DISTRIBUTIONS)), "(version unknown)")


def probe_gpu() -> dict:
    """Ask CuPy, in a child process, for its devices: ``{"names", "driver"}``, or ``{"error"}`` saying why not."""
    try:
        run = subprocess.run([sys.executable, "-c", PROBE, str(workspace.PACKAGE_DIR.parent)],
                             capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"CuPy did not answer within {PROBE_TIMEOUT_S:.0f} s"}
    except OSError as err:
        return {"error": f"could not start {sys.executable}: {err}"}
    try:
        return json.loads(run.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"CuPy crashed when asked for its devices (exit status {run.returncode}: {last})"}


def check_gpu() -> list[Check]:
    """CuPy and a GPU: optional, never a failure (chapter 07's kernels run on the simulator)."""
    from minigrad.gpu.device.backend import nvidia_driver_found

    simulator = "the kernel simulator needs none (chapter 07 runs on the CPU)"
    cupy = _cupy_version()
    driver = nvidia_driver_found() or sys.platform == "win32"  # Windows: no cheap driver test, ask CuPy
    cupy_check = Check("cupy", "ok", f"CuPy {cupy}") if cupy else Check(
        "cupy", "info", "CuPy: not installed (only a real NVIDIA GPU needs it)")
    if not driver:
        return [cupy_check, Check("gpu", "info", f"GPU: no NVIDIA GPU found (no NVIDIA driver); {simulator}")]
    if cupy is None:
        cupy_check.status, cupy_check.fix = "missing", install_command("gpu")
        cupy_check.text = "CuPy: not installed; this machine has an NVIDIA driver, so `.to(\"cuda\")` could use its GPU"
        return [cupy_check]
    answer = probe_gpu()
    if "error" in answer:
        return [cupy_check, Check("gpu", "warning", f"GPU: CuPy sees none ({answer['error']}); {simulator}",
                                  fix="nvidia-smi  (the driver must support CUDA 12 for cupy-cuda12x)")]
    names = answer.get("names", [])
    if not names:
        return [cupy_check, Check("gpu", "warning", f"GPU: the driver reports no device; {simulator}", fix="nvidia-smi")]
    driver_version = answer.get("driver", 0)
    cuda = f"driver for CUDA {driver_version // 1000}.{driver_version % 1000 // 10}" if driver_version else "driver"
    return [cupy_check, Check("gpu", "ok", f"GPU: {', '.join(names)} ({cuda}); `.to(\"cuda\")` runs there")]


def check_compile() -> Check:
    """The ``gpu-check`` extra: CuPy's transpiler with NVRTC and the CUDA headers as wheels (information only)."""
    parts = {"CuPy": _cupy_version(), "NVRTC": _version("nvidia-cuda-nvrtc-cu12"),
             "CUDA runtime headers": _version("nvidia-cuda-runtime-cu12")}
    if all(parts.values()):
        have = ", ".join(f"{k} {v}" for k, v in parts.items())
        return Check("compile-check", "ok", f"NVRTC compile check (`gpu-check` extra): {have}")
    missing = ", ".join(k for k, v in parts.items() if not v)
    available = sys.platform == "linux" and os.uname().machine in ("x86_64", "aarch64")
    where = "" if available else " (its wheels exist for Linux on x86-64 and ARM64 only)"
    return Check("compile-check", "info", f"NVRTC compile check (`gpu-check` extra): not installed (no {missing}); "
                 f"kernels are checked on the simulator alone{where}", fix=install_command("gpu-check") if available else None)


def check_torch() -> Check:
    version = _version("torch")
    if version:
        return Check("torch", "info", f"PyTorch {version} (optional cross-check in the tests and benchmarks)")
    return Check("torch", "info", "PyTorch: not installed (optional: the tests and benchmarks compare with it when present)")


# --- the data ------------------------------------------------------------------------------------------


def check_data() -> list[Check]:
    """The full MNIST (verified by :func:`minigrad.data.mnist.locate`, never downloaded) and the shipped subset."""
    from minigrad.data import mnist
    from minigrad.data.cache import data_root

    root = data_root()
    origin = "$MINIGRAD_DATA" if os.environ.get("MINIGRAD_DATA") else "the user cache"
    download = (f"{_quoted(sys.executable)} -c \"from minigrad.data import MNIST; MNIST(train=True); "
                f"MNIST(train=False)\"")
    missing, corrupt = [], []
    for stem in mnist.FILES:
        try:
            mnist.locate([stem], root, allow_download=False)
        except mnist.MNISTNotFound:
            missing.append(stem)
        except ValueError:  # there, but not the canonical file (its MD5 differs, or the archive is damaged)
            corrupt.append(mnist._find(stem, root))
    checks = []
    if corrupt:
        names = " ".join(_quoted(p) for p in corrupt)
        checks.append(Check("mnist", "warning", f"MNIST: {len(corrupt)} file(s) fail the MD5 check (corrupt or truncated): "
                            f"{', '.join(map(str, corrupt))}; chapters 05, 06 and 09 cannot use them",
                            fix=f"rm {names} && {download}"))
    elif missing:
        checks.append(Check("mnist", "missing", f"MNIST: {len(missing)} of 4 files not in {root} ({origin}; or its "
                            f"mnist/, MNIST/raw/); chapters 05, 06 and 09 train on it; or set MINIGRAD_DATA to their folder",
                            fix=download))
    else:
        checks.append(Check("mnist", "ok", f"MNIST in {root} ({origin}): the 4 files match their MD5"))
    subset = [mnist.SUBSET_DIR / f"{stem}.gz" for stem in mnist.FILES]
    if all(p.is_file() for p in subset):
        sizes = mnist.SUBSET_SIZES
        checks.append(Check("mnist-subset", "ok", f"MNIST subset shipped with minigrad ({sizes['train']:,} + "
                            f"{sizes['test']:,} images, MNIST(subset=True)): present"))
    else:
        checks.append(Check("mnist-subset", "warning", f"shipped MNIST subset: files missing in {str(mnist.SUBSET_DIR)} "
                            f"(a damaged install)", fix=f"{install_command()} --force-reinstall --no-deps"))
    return checks


# --- the learner's workspace ---------------------------------------------------------------------------


def _minigrad_command() -> str:
    return "minigrad" if check_command().status == "ok" else _quoted(lab.bin_dir() / "minigrad")


def check_workspace() -> Check:
    """Where the learner's workspace is, whether it is made, and how many exercises each chapter has written."""
    from minigrad.grading.manifest import chapters

    root = workspace.locate()
    if os.environ.get(workspace.ENVIRONMENT_VARIABLE):
        why = f"${workspace.ENVIRONMENT_VARIABLE}"
    elif root == workspace.default_location().resolve():
        why = "the clone's" if workspace.course_clone() is not None else "the default"
    else:
        why = "found at or above the current folder"
    if not (root / workspace.MARKER).is_file():
        return Check("workspace", "missing", f"your workspace {root} ({why}): not made yet (or `minigrad lab` makes it)",
                     fix=f"{_minigrad_command()} exercises init")
    status = workspace.progress(root)
    details = []
    for number, chapter in chapters().items():
        ids = [e.id for e in chapter.exercises]
        written = sum(status[i] == "written" for i in ids)
        line = f"{number} {chapter.title}: {written} of {len(ids)} written"
        absent = sum(status[i] == "no file" for i in ids)
        if absent:
            line += f" ({absent} without their file: `{_minigrad_command()} exercises init` puts it back)"
        details.append(line)
    total = sum(s == "written" for s in status.values())
    return Check("workspace", "ok", f"your workspace {root} ({why}): {total} of {len(status)} exercises written "
                 f"(`minigrad grade NN` grades them)", details=details)


# --- the report ----------------------------------------------------------------------------------------

CHECKS = (
    check_python, check_minigrad, check_command, check_packages, check_lab,
    check_gpu, check_compile, check_torch, check_data, check_workspace,
)


def _guarded(check) -> list[Check]:
    try:
        result = check()
    except Exception as err:  # a doctor that crashes helps no one: the surprise becomes its line
        name = check.__name__.removeprefix("check_")
        return [Check(name, "warning", f"{name}: the check itself failed ({type(err).__name__}: {err})")]
    return result if isinstance(result, list) else [result]


def run_checks() -> list[Check]:
    """Every check's lines, in the order of :data:`CHECKS`."""
    import minigrad.data.mnist  # noqa: F401  (imported here, so that the thread below imports nothing)

    # The MD5 of the full MNIST (about 55 MB unpacked) is the slowest check; zlib and hashlib release
    # the GIL, so it runs beside the others.
    with ThreadPoolExecutor(max_workers=1) as pool:
        data = pool.submit(_guarded, check_data)
        return [c for check in CHECKS for c in (data.result() if check is check_data else _guarded(check))]


def can_run(checks: list[Check]) -> bool:
    return not any(c.failed for c in checks)


def format_report(checks: list[Check]) -> str:
    width = max(map(len, MARKS))
    lines = []
    for c in checks:
        lines.append(f"{c.status:<{width}}  {c.text}" + ("  (required)" if c.failed else ""))
        lines += [f"{'':<{width}}    {d}" for d in c.details]
        if c.fix and c.status != "ok":
            lines.append(f"{'':<{width}}    fix: {c.fix}")
    if can_run(checks):
        pending = sum(c.status in ("missing", "warning") for c in checks)
        lines.append("\nThe course can run here." + (f" {pending} optional piece(s) above have a fix." if pending else ""))
    else:
        lines.append("\nThe course cannot run here yet: fix the lines marked (required), then run `minigrad doctor` again.")
    return "\n".join(lines)


def main(as_json: bool = False) -> int:
    """Print the report (``as_json``: as one JSON object); 0 when the course can run, else 1."""
    checks = run_checks()
    if as_json:
        print(json.dumps({"can_run": can_run(checks), "checks": [dict(asdict(c), failed=c.failed) for c in checks]},
                         indent=1))
    else:
        print(format_report(checks))
    return 0 if can_run(checks) else 1
