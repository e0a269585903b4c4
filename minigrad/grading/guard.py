"""Defences inside the grading child: the submission *is* the graded library module, and an audit hook.

:func:`install_finder` puts a meta-path finder first on ``sys.meta_path`` so
that the library module a Part is carved from (``minigrad.tensor.grad_rules``
for chapter 04) is the submission file: ``from minigrad.tensor.grad_rules
import unbroadcast`` inside a submission gives the learner's own code, and the
library runs on it.

:func:`install_audit_hook` adds a ``sys.addaudithook`` hook that refuses, with
``PermissionError``:

- opening (``open``, ``io.open_code``, ``os.open``, an ``open(fd)`` of the
  answer channel) the reference sources of exercise-bearing modules, the
  graded module's bytecode cache, anything under the repository's
  ``solutions/`` and ``.git/``;
- importing ``minigrad.grading`` modules or ``_thread`` once sealed (the
  grading modules are also dropped from ``sys.modules``);
- ``subprocess``/``os.system``/``os.exec*``/``os.spawn*``/``os.posix_spawn``/
  ``os.fork``/``pty.spawn``, loading libraries with ``ctypes``;
- ``gc.get_objects``/``get_referrers``/``get_referents``;
- ``os.kill``/``os.killpg`` of any other process (the grader, for one);
- ``sys.settrace``/``sys.setprofile`` except by the harness (and
  ``threading.settrace``/``setprofile``, starting threads);
- changing the file system outside the child's working folder (a fresh
  temporary folder the grader deletes afterwards): opening a file for writing,
  removing, renaming, linking, ``mkdir``, ``chmod``/``chown``/``utime``,
  ``truncate``, ``shutil.rmtree``/``copy*``/``move``; paths relative to a
  ``dir_fd`` and changes through a file descriptor other than 0-2 are refused
  everywhere.

What an in-process hook cannot stop: code in the same interpreter can reach
the harness's objects by walking frames, write to any file descriptor with
``os.write`` (the answer channel included), open a folder and then a file
relative to it with ``os.open(..., dir_fd=...)`` (the ``open`` event does not
carry the ``dir_fd``), or corrupt memory through an extension. Run a batch of
untrusted submissions as an unprivileged user (or in a container) for a
boundary the operating system enforces. So the hook only raises the bar; the guarantee is elsewhere: the
grader's parent process computes every verdict from plain data it decodes
itself and checks against its own reference, so whatever the child sends can
only be an answer, and only correct answers score.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import linecache
import os
import sys
from pathlib import Path

_SPAWN_EVENTS = frozenset({
    "subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty",
    "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata", "ctypes.call_function",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "os.startfile", "webbrowser.open",
})

# event -> (positions of the paths it changes, positions of its dir_fd arguments)
_CHANGE_EVENTS = {
    "os.remove": ((0,), (1,)), "os.rmdir": ((0,), (1,)), "os.mkdir": ((0,), (2,)),
    "os.rename": ((0, 1), (2, 3)), "os.link": ((1,), (2, 3)), "os.symlink": ((1,), (2,)),
    "os.chmod": ((0,), (2,)), "os.chown": ((0,), (3,)), "os.utime": ((0,), (3,)),
    "os.truncate": ((0,), ()), "os.chflags": ((0,), ()), "os.lchflags": ((0,), ()),
    "os.setxattr": ((0,), ()), "os.removexattr": ((0,), ()),
    "shutil.rmtree": ((0,), (1,)), "shutil.copyfile": ((1,), ()), "shutil.copymode": ((1,), ()),
    "shutil.copystat": ((1,), ()), "shutil.copytree": ((1,), ()), "shutil.move": ((0, 1), ()),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_HARMLESS_TARGETS = frozenset({os.devnull})


class _SubmissionFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, name: str, path: str, source: bytes):
        self.name, self.path, self.source = name, path, source

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=self.path)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = self.path
        # inspect.getsource (the kernel simulator reads a kernel's source) finds the submission here,
        # without opening the file, which may sit where the guard refuses reads (solutions/)
        lines = self.source.decode("utf-8", "replace").splitlines(keepends=True)
        linecache.cache[self.path] = (len(self.source), None, lines, self.path)
        exec(compile(self.source, self.path, "exec"), module.__dict__)


def install_finder(module_name: str, path: str, source: bytes) -> None:
    """From now on, importing ``module_name`` runs the submission ``source`` (compiled as ``path``)."""
    sys.meta_path.insert(0, _SubmissionFinder(module_name, path, source))


class Guard:
    """The audit hook's switches: sealed or not, and what the harness itself may do right now."""

    def __init__(self, protected_files, protected_dirs, channel_fds, writable_dir=None):
        self._writable = None if writable_dir is None else os.path.realpath(writable_dir) + os.sep
        self._files = frozenset(os.path.realpath(p) for p in protected_files)
        self._dirs = tuple(os.path.realpath(d) + os.sep for d in protected_dirs)
        self._fds = frozenset(channel_fds)
        self._fd_paths = tuple(f"/proc/self/fd/{fd}" for fd in channel_fds) + tuple(f"/dev/fd/{fd}" for fd in channel_fds)
        self.sealed = False
        self._harness = 0

    @contextlib.contextmanager
    def harness(self):
        """Let the harness set its own profile function (refused to the submission)."""
        self._harness += 1
        try:
            yield
        finally:
            self._harness -= 1

    def _refuse(self, what: str):
        raise PermissionError(f"the grader does not allow submissions to {what}")

    def _check_open(self, path) -> None:
        if isinstance(path, int):
            if path in self._fds:
                self._refuse("open the grader's answer channel")
            return
        try:
            name = os.fsdecode(path)
        except TypeError:
            return
        if name.startswith(self._fd_paths) or name.startswith(("/proc/", "/dev/fd/")) and "/fd/" in name:
            real = name
        else:
            real = os.path.realpath(name)
        if real in self._files or real.startswith(self._dirs):
            self._refuse(f"read {name} (the reference solutions are out of reach while grading)")
        if real.startswith(self._fd_paths) or (real.startswith("/proc/") and "/fd/" in real):
            self._refuse("open the grader's file descriptors")

    def _check_change(self, event: str, path, dir_fd=None) -> None:
        """Refuse ``event`` changing ``path`` unless it lies in the working folder."""
        if isinstance(path, int):
            if path not in (0, 1, 2):
                self._refuse(f"use {event} on file descriptor {path} (only files in the working folder may change)")
            return
        try:
            name = os.fsdecode(path)
        except TypeError:
            self._refuse(f"use {event} on {path!r}")
        if dir_fd is not None and not os.path.isabs(name):
            self._refuse(f"use {event} relative to a dir_fd")
        real = os.path.realpath(name)
        if real in _HARMLESS_TARGETS or (self._writable is not None and (real + os.sep).startswith(self._writable)):
            return
        self._refuse(f"change {name} ({event}): only files in the working folder may be written")

    def _opens_for_writing(self, args) -> bool:
        mode, flags = (args[1], args[2]) if len(args) >= 3 else (None, 0)
        return (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and bool(flags & _WRITE_FLAGS))

    def __call__(self, event: str, args) -> None:
        if event == "open":
            self._check_open(args[0])
            if self.sealed and not isinstance(args[0], int) and self._opens_for_writing(args):
                self._check_change(event, args[0])
            return
        if not self.sealed:
            return
        if event in _CHANGE_EVENTS:
            paths, dir_fds = _CHANGE_EVENTS[event]
            dir_fd = next((args[i] for i in dir_fds if i < len(args) and args[i] is not None), None)
            for i in paths:
                if i < len(args):
                    self._check_change(event, args[i], dir_fd)
            return
        if event in _SPAWN_EVENTS:
            self._refuse(f"use {event}")
        elif event == "import":
            name = args[0]
            if name == "_thread" or name.startswith("minigrad.grading"):
                self._refuse(f"import {name}")
        elif event in ("os.kill", "os.killpg") and args[0] not in (os.getpid(), os.getpgid(0)):
            self._refuse(f"signal process {args[0]} (only your own process)")
        elif event in ("sys.settrace", "sys.setprofile") and not self._harness:
            self._refuse(f"call {event} (the grader measures how deep your functions recurse)")


def _refuse_threads(*args, **kwargs):
    raise PermissionError("the grader does not allow submissions to start threads or set thread hooks")


def seal(guard: Guard) -> None:
    """Refuse the rest from now on; forget the grading modules so they cannot be imported again."""
    import _thread
    import threading

    for name in [n for n in sys.modules if n.startswith("minigrad.grading")]:
        del sys.modules[name]
    threading.settrace = threading.setprofile = _refuse_threads
    for module in (threading, _thread):  # the name changed across Python versions
        for name in ("_start_new_thread", "start_new_thread", "start_new", "_start_joinable_thread", "start_joinable_thread"):
            if hasattr(module, name):
                setattr(module, name, _refuse_threads)
    guard.sealed = True


def protected_paths(sources: list[Path], graded_source: Path, repo_root: Path | None) -> tuple[list[Path], list[Path]]:
    """(files, folders) a submission may not open: reference sources, the graded module's bytecode, solutions/."""
    files = [graded_source]
    cache = graded_source.parent / "__pycache__"
    if cache.is_dir():
        files += [p for p in cache.iterdir() if p.name.startswith(graded_source.stem + ".")]
    for source in sources:
        # another Part's module may still be imported by the library: keep its source readable if no bytecode exists
        if source != graded_source and Path(importlib.util.cache_from_source(str(source))).exists():
            files.append(source)
    dirs = []
    if repo_root is not None:
        dirs += [repo_root / "solutions", repo_root / ".git"]
    return files, dirs
