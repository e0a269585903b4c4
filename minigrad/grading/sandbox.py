"""Run untrusted code in a child process that cannot hang or outlive the grader.

The child gets its own session (so its whole process group can be killed),
CPU-time and address-space limits, a wall-clock timeout, and a unique token
in its environment. Afterwards the group is killed and, on Linux, any process
still carrying the token (one that left the group with setsid) is killed too.
Output goes to a file, never a pipe, so a leftover grandchild holding the
pipe open cannot block the grader.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

try:
    import resource
except ImportError:  # Windows: no rlimits, the timeout still applies
    resource = None

TOKEN_VARIABLE = "MINIGRAD_SANDBOX_TOKEN"


@dataclass(frozen=True)
class SandboxResult:
    returncode: int | None
    timed_out: bool
    seconds: float
    output: str


def _limits(memory_bytes: int, cpu_seconds: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply if resource is not None else None


def processes_with_token(token: str) -> list[int]:
    """PIDs whose environment carries ``token`` (Linux /proc; empty elsewhere)."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _kill_everything(pgid: int, token: str) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _ in range(50):  # a forking process may spawn new ones while we sweep
        pids = [pid for pid in processes_with_token(token) if pid != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)


def run(
    command: list[str],
    *,
    timeout: float,
    memory_mb: int = 2048,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    log_path: str | Path,
) -> SandboxResult:
    """Run ``command`` under the limits; always returns, after at most about ``timeout`` seconds."""
    token = uuid.uuid4().hex
    child_env = dict(os.environ if env is None else env)
    child_env[TOKEN_VARIABLE] = token
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        child_env.setdefault(var, "1")
    start = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_limits(memory_mb * 2**20, int(timeout) + 2),
        )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_everything(proc.pid, token)
            proc.wait()
    output = Path(log_path).read_text(errors="replace")
    return SandboxResult(proc.returncode, timed_out, time.monotonic() - start, output)
