#!/usr/bin/env bash
# minigrad's GPU device check, for a maintainer on a Linux machine with an NVIDIA GPU (CUDA 12 driver):
# a fresh venv with ".[gpu,test]", the `gpu`-marked tests, the GPU benchmarks (each library kernel vs
# CuPy/cuBLAS, MNIST MLP/CNN epochs vs PyTorch CUDA), then one summary table. Under 8 minutes, most of
# it the install; each step has a time limit.
#
#   bash benchmarks/gpu_device_check.sh [--torch] [--reuse-venv]
#
#   --torch       also install PyTorch into the venv as the MNIST anchor (a large download). Without
#                 it a CUDA-enabled PyTorch already installed for python3 is used if there is one (the
#                 venv then sees the system's site-packages), else the PyTorch column says "not installed".
#   --reuse-venv  skip the install when the venv exists (a second run after editing the code).
#
# Environment: MINIGRAD_CHECK_VENV (default .venv-gpu-check, made afresh each run), MINIGRAD_CHECK_LOGS
# (default a new temporary folder; every step's full output is kept there), NVIDIA_SMI (default
# nvidia-smi), PYTHON (default python3).
# Exit status: 0 everything passed; 1 a test failed or a kernel disagreed with CuPy; 3 no usable
# NVIDIA GPU (said why; nothing was installed if the driver sees no GPU); 4 the install failed.

set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
NVIDIA_SMI=${NVIDIA_SMI:-nvidia-smi}
VENV=${MINIGRAD_CHECK_VENV:-.venv-gpu-check}
LOGS=${MINIGRAD_CHECK_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/minigrad-gpu-check.XXXXXX")}
# Time limits per step, in seconds: 8 minutes in all, with a few seconds for making the venv.
INSTALL_LIMIT=200 CUPY_LIMIT=30 PYTEST_LIMIT=80 BENCHMARK_LIMIT=160
WITH_TORCH=0
REUSE_VENV=0
for arg in "$@"; do
    case "$arg" in
        --torch) WITH_TORCH=1 ;;
        --reuse-venv) REUSE_VENV=1 ;;
        -h | --help) sed -n '2,18p' "$0" | cut -c3-; exit 0 ;;
        *) echo "gpu_device_check: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
    esac
done
mkdir -p "$LOGS"

no_gpu() {
    echo "gpu_device_check: no usable NVIDIA GPU here: $1" >&2
    echo "  This check needs a Linux machine with an NVIDIA GPU and a driver for CUDA 12. Without one," >&2
    echo "  the kernels run on minigrad's simulator: python benchmarks/gpu_kernels.py (CPU, < 2 min)." >&2
    exit 3
}

seconds_since() { echo $(( $(date +%s) - $1 )); }

# 1. Is there a GPU? Asked of the driver before anything is installed.
if ! command -v "$NVIDIA_SMI" > /dev/null 2>&1; then
    no_gpu "'$NVIDIA_SMI' was not found (no NVIDIA driver installed, or not on the PATH)"
fi
if ! gpus=$("$NVIDIA_SMI" -L 2>&1) || ! grep -q "^GPU [0-9]" <<< "$gpus"; then
    no_gpu "'$NVIDIA_SMI -L' lists no GPU: $(head -n 3 <<< "$gpus" | tr '\n' ' ')"
fi
gpu_name=$(grep -m1 "^GPU [0-9]" <<< "$gpus" | sed -e 's/^GPU [0-9]*: //' -e 's/ (UUID.*//')
echo "== $gpu_name; logs in $LOGS"

# 2. A fresh venv with the gpu and test extras.
start=$(date +%s)
site_packages=()
if [ "$WITH_TORCH" = 0 ] && "$PYTHON" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2> /dev/null; then
    site_packages=(--system-site-packages)  # the PyTorch CUDA already here is the MNIST anchor
fi
extras=(-e ".[gpu,test]")
if ! ldconfig -p 2> /dev/null | grep -q "libnvrtc.so.12" && [ -z "${CUDA_PATH:-}" ] && [ ! -d /usr/local/cuda/lib64 ]; then
    extras+=("cupy-cuda12x[ctk]")  # no CUDA toolkit on the system: NVRTC, cuBLAS, ... as wheels
fi
[ "$WITH_TORCH" = 1 ] && extras+=(torch)
if [ "$REUSE_VENV" = 1 ] && [ -x "$VENV/bin/python" ]; then
    echo "== reusing $VENV (--reuse-venv): nothing installed"
    echo "reused $VENV" > "$LOGS/install.log"
    install_label="reused $VENV (--reuse-venv)"
else
    if [ -e "$VENV" ] && [ ! -f "$VENV/pyvenv.cfg" ]; then
        echo "gpu_device_check: $VENV exists and is not a venv; not replacing it (set MINIGRAD_CHECK_VENV)" >&2
        exit 4
    fi
    echo "== installing ${extras[*]} into $VENV"
    install_label="install ${extras[*]}"
    rm -rf "$VENV"
    { "$PYTHON" -m venv "${site_packages[@]}" "$VENV" && timeout "$INSTALL_LIMIT" "$VENV/bin/pip" install "${extras[@]}"; } \
        > "$LOGS/install.log" 2>&1
fi
if [ $? != 0 ]; then
    tail -n 20 "$LOGS/install.log" >&2
    echo "gpu_device_check: the install failed or ran past ${INSTALL_LIMIT} s (full log: $LOGS/install.log);" >&2
    echo "  wheels downloaded in full are in pip's cache, so running again goes further" >&2
    exit 4
fi
install_seconds=$(seconds_since "$start")

# 3. Does CuPy see the GPU (driver new enough for CUDA 12, libraries found)?
if ! reason=$(timeout "$CUPY_LIMIT" "$VENV/bin/python" - 2>&1 <<'EOF'
import sys
try:
    import cupy
    count = cupy.cuda.runtime.getDeviceCount()
    (cupy.arange(4, dtype=cupy.float32) @ cupy.ones(4, dtype=cupy.float32)).get()  # NVRTC and cuBLAS load
except Exception as error:
    sys.exit(f"CuPy cannot use the GPU: {type(error).__name__}: {error}")
sys.exit(0 if count else "CuPy sees 0 devices")
EOF
); then
    no_gpu "$reason"
fi

# 4. The gpu-marked tests, then the benchmarks.
export MPLBACKEND=Agg
start=$(date +%s)
timeout "$PYTEST_LIMIT" "$VENV/bin/python" -m pytest tests -m gpu -q -rs > "$LOGS/pytest.log" 2>&1
pytest_status=$?
if [ "$pytest_status" = 0 ] && ! grep -q "[0-9] passed" "$LOGS/pytest.log"; then
    pytest_status=5  # all skipped: on a GPU machine that means nothing was checked
fi
pytest_seconds=$(seconds_since "$start")
tail -n 15 "$LOGS/pytest.log"

start=$(date +%s)
PYTHONUNBUFFERED=1 timeout "$BENCHMARK_LIMIT" "$VENV/bin/python" benchmarks/gpu_kernels.py --target gpu \
    --json "$LOGS/gpu_kernels.json" 2>&1 | tee "$LOGS/gpu_kernels.log"
bench_status=${PIPESTATUS[0]}
bench_seconds=$(seconds_since "$start")

# 5. One summary table.
"$VENV/bin/python" benchmarks/gpu_check_summary.py --logs "$LOGS" --gpu "$gpu_name" \
    --install "$install_label" "$install_seconds" --pytest "$pytest_status" "$pytest_seconds" \
    --benchmarks "$bench_status" "$bench_seconds"

if [ "$pytest_status" != 0 ] || [ "$bench_status" != 0 ]; then
    exit 1
fi
