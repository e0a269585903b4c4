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


class Sandboxed:
    """A running sandboxed child; :meth:`finish` kills it and everything it started."""

    def __init__(self, proc: subprocess.Popen, token: str, log, log_path: Path, start: float):
        self.proc, self.token, self._log, self.log_path, self.start = proc, token, log, Path(log_path), start

    def finish(self) -> str:
        """Kill the child's process group and every process carrying its token; return the log."""
        _kill_everything(self.proc.pid, self.token)
        self.proc.wait()
        self._log.close()
        return self.log_path.read_text(errors="replace")


def start(
    command: list[str],
    *,
    timeout: float,
    memory_mb: int = 2048,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    log_path: str | Path,
    pass_fds: tuple[int, ...] = (),
) -> Sandboxed:
    """Start ``command`` under the limits (CPU time about ``timeout``); the caller enforces the wall clock."""
    token = uuid.uuid4().hex
    child_env = dict(os.environ if env is None else env)
    child_env[TOKEN_VARIABLE] = token
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        child_env.setdefault(var, "1")
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=child_env,
        cwd=cwd,
        start_new_session=True,
        pass_fds=pass_fds,
        preexec_fn=_limits(memory_mb * 2**20, int(timeout) + 2),
    )
    return Sandboxed(proc, token, log, Path(log_path), time.monotonic())


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
    box = start(command, timeout=timeout, memory_mb=memory_mb, env=env, cwd=cwd, log_path=log_path)
    timed_out = False
    try:
        box.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    output = box.finish()
    return SandboxResult(box.proc.returncode, timed_out, time.monotonic() - box.start, output)
