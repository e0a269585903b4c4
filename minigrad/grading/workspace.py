"""The learner's workspace: the one folder where everything a learner changes lives.

Layout::

    <workspace>/
        exercises/NN_*.py      your answers: copies of the exercise stubs
        chapters/NN_*.ipynb    your copies of the chapters (a clone of the course has them)
        minigrad/…             read-only copies of the library's files the chapters link to
        .minigrad-workspace    the marker: what the course last wrote into each file (hashes)

Where it is: ``$MINIGRAD_WORKSPACE``; else the nearest folder at or above the
current one that holds the marker; else ``workspace/`` in a clone of the
course (beside ``chapters/``, ignored by git); else ``~/minigrad-course``.

The committed ``exercises/`` and ``chapters/`` stay pristine, so working in the
workspace never makes the project's own tests fail.

Invariants
- A file the learner changed is never overwritten by :func:`sync`: it only
  writes files that are missing or that still hold exactly what the course
  wrote last (their hash is on record). :func:`reset` is the one way to throw
  a change away; it writes only what it is asked and keeps the old text beside.
- The library files the chapters link to are read-only copies (JupyterLab
  opens them read-only), always equal to the library's: reading them can
  neither change the library nor leave JupyterLab's checkpoints inside it.
- Every write is atomic (a temporary file, then ``os.replace``): a crash leaves
  the old file or the new one, never half of one.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from minigrad.grading.carve import definitions, exercise_functions, workspace_stub_text
from minigrad.grading.manifest import PACKAGE_DIR, Part, part_of, parts

MARKER = ".minigrad-workspace"
ENVIRONMENT_VARIABLE = "MINIGRAD_WORKSPACE"
BACKUPS = ".minigrad-backups"


def course_clone() -> Path | None:
    """The clone of the course the library runs from (it has ``chapters/`` beside the package), or None."""
    root = PACKAGE_DIR.parent
    if (root / "chapters").is_dir() and (root / "pyproject.toml").is_file():
        return root
    return None


def default_location() -> Path:
    clone = course_clone()
    return clone / "workspace" if clone is not None else Path.home() / "minigrad-course"


def locate(start: Path | None = None) -> Path:
    """Where the workspace is (it may not exist yet): see the module docstring for the order."""
    named = os.environ.get(ENVIRONMENT_VARIABLE)
    if named:
        return Path(named).expanduser().resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder
    return default_location().resolve()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one step: readers see the old file or the new one.

    ``mode``: the new file's permissions (default: the old file's, else what the umask allows).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if mode is None:
            mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()
        os.chmod(temporary, mode)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _record(root: Path) -> dict[str, str]:
    """What the course last wrote, by path relative to ``root`` (an unreadable marker counts as empty)."""
    try:
        written = json.loads((root / MARKER).read_text())["written"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {k: v for k, v in written.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(written, dict) else {}


def _save_record(root: Path, written: dict[str, str]) -> None:
    text = json.dumps({"about": "minigrad workspace: what the course last wrote into each file", "written": written},
                      indent=1, sort_keys=True)
    write_atomically(root / MARKER, (text + "\n").encode())


@dataclass
class SyncReport:
    """What :func:`sync` did to each file (paths relative to the workspace)."""

    root: Path
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # untouched copies brought up to the course's new version
    kept: list[str] = field(default_factory=list)  # the learner's changes, left alone
    newer_upstream: list[str] = field(default_factory=list)  # kept, while the course's version changed since

    def lines(self) -> list[str]:
        out = []
        if self.created:
            out.append(f"made {len(self.created)} file(s) in your workspace {self.root}")
        if self.updated:
            out.append(f"brought {len(self.updated)} untouched file(s) up to date: {', '.join(self.updated)}")
        for name in self.newer_upstream:
            out.append(f"kept your {name}; the course's version has changed since "
                       f"(`minigrad exercises reset {name}` takes the new one, keeping yours as a backup)")
        return out


LIBRARY_LINK = re.compile(rb"\]\(\.\./(minigrad/[\w/]+\.py)\)")


def course_files() -> dict[str, bytes]:
    """Every file the course puts in a workspace, by relative path: exercise stubs, and chapters in a clone."""
    files = {f"exercises/{p.file}": workspace_stub_text(p).encode() for p in parts()}
    clone = course_clone()
    if clone is not None:
        for notebook in sorted((clone / "chapters").glob("[0-9][0-9]_*.ipynb")):
            files[f"chapters/{notebook.name}"] = notebook.read_bytes()
    return files


def library_files(course: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """The library's files the chapters link to (``../minigrad/...``), by relative path.

    ``course``: :func:`course_files`, when the caller has it already.
    """
    files = {}
    for name, data in (course_files() if course is None else course).items():
        if name.startswith("chapters/"):
            for linked in LIBRARY_LINK.findall(data):
                path = PACKAGE_DIR.parent / linked.decode()
                if path.is_file():
                    files[linked.decode()] = path.read_bytes()
    return files


def _copy_library(root: Path, course: dict[str, bytes]) -> None:
    """Read-only copies of the library files the chapters link to, under ``root/minigrad``."""
    folder = root / "minigrad"
    if folder.is_symlink():  # a workspace made by an earlier version linked the package itself
        folder.unlink()
    for relative, data in library_files(course).items():
        path = root / relative
        if path.is_file() and path.read_bytes() == data:
            continue
        write_atomically(path, data, mode=0o444)


def sync(root: Path | None = None) -> SyncReport:
    """Make or refresh the workspace at ``root`` (default: :func:`locate`); never overwrites a learner's change."""
    root = (root or locate()).resolve()
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"the workspace {root} is a file; set {ENVIRONMENT_VARIABLE} to a folder")
    root.mkdir(parents=True, exist_ok=True)
    written = _record(root)
    report = SyncReport(root)
    course = course_files()
    for relative, data in course.items():
        path = root / relative
        new = _digest(data)
        if not path.exists():
            write_atomically(path, data)
            report.created.append(relative)
        else:
            current = _digest(path.read_bytes())
            if current == new:
                pass
            elif current == written.get(relative):
                write_atomically(path, data)
                report.updated.append(relative)
            else:
                report.kept.append(relative)
                if relative in written and written[relative] != new:
                    report.newer_upstream.append(relative)
                continue  # the record keeps the version the learner started from
        written[relative] = new
    _copy_library(root, course)
    _save_record(root, written)
    return report


def ensure(root: Path | None = None) -> Path:
    """The workspace, made (and its missing files written) if it has no exercise files yet."""
    root = (root or locate()).resolve()
    if not (root / MARKER).is_file() or not all((root / "exercises" / p.file).is_file() for p in parts()):
        report = sync(root)
        for line in report.lines():
            print(line)
    return root


def learner_file(part: Part, root: Path | None = None) -> Path:
    """The learner's copy of ``part``'s exercise file, in the workspace (made if missing)."""
    return ensure(root) / "exercises" / part.file


def _backup(root: Path, path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = root / BACKUPS / f"{path.name}.{stamp}"
    n = 1
    while backup.exists():
        n += 1
        backup = root / BACKUPS / f"{path.name}.{stamp}-{n}"
    write_atomically(backup, path.read_bytes())
    return backup


def _definition_spans(text: str, filename: str) -> dict[str, tuple[int, int]]:
    """Qualified name -> (first, last) line index of each def, decorators included."""
    spans = {}
    for name, node in definitions(ast.parse(text, filename=filename)):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        spans[name] = (first, node.end_lineno - 1)
    return spans


@dataclass
class ResetResult:
    path: Path
    backup: Path | None
    functions: list[str]  # the defs put back to the stub; all of them when the whole file was reset
    also_reset: list[str]  # other exercises that share one of those defs


def reset(key: str, root: Path | None = None) -> ResetResult:
    """Put exercise ``key`` ("4.2") back to its stub, or a whole file ("04_backward.py" or "exercises/...").

    An exercise: only the defs that hold its solution regions are replaced, by
    the stub's; the rest of the learner's file is kept byte for byte. The old
    file is kept in ``.minigrad-backups/``.
    """
    name = Path(key).name
    whole_file = name.endswith(".py")
    if whole_file:
        matches = [p for p in parts() if p.file == name]
        if not matches:
            raise ValueError(f"reset {key}: no exercise file of that name; files: {', '.join(p.file for p in parts())}")
        part = matches[0]
    elif "." in key:
        part = part_of(key)
    else:
        raise ValueError(f"reset {key}: name one exercise (e.g. 4.2) or one exercise file (e.g. 04_backward.py)")
    root = ensure(root)
    path = root / "exercises" / part.file
    stub = workspace_stub_text(part)
    if not path.exists() or path.read_text(errors="replace") == stub:
        write_atomically(path, stub.encode())
        return ResetResult(path, None, [], [])
    mine = path.read_text(errors="replace")
    if whole_file:
        backup = _backup(root, path)
        write_atomically(path, stub.encode())
        return ResetResult(path, backup, ["(the whole file)"], [])
    functions = exercise_functions(part.source, key)
    try:
        my_spans = _definition_spans(mine, str(path))
    except SyntaxError as err:
        raise ValueError(
            f"reset {key}: your {path} does not parse (line {err.lineno}: {err.msg}), so its {', '.join(functions)} "
            f"cannot be found; fix that line, or reset the whole file with `minigrad exercises reset {part.file}`"
        ) from None
    missing = [f for f in functions if f not in my_spans]
    if missing:
        raise ValueError(
            f"reset {key}: your {path} has no {', '.join(missing)}; "
            f"reset the whole file with `minigrad exercises reset {part.file}`"
        )
    stub_lines, my_lines = stub.splitlines(keepends=True), mine.splitlines(keepends=True)
    stub_spans = _definition_spans(stub, part.file)
    for qualname in sorted(functions, key=lambda f: my_spans[f][0], reverse=True):  # bottom first: spans stay valid
        first, last = my_spans[qualname]
        s_first, s_last = stub_spans[qualname]
        my_lines[first : last + 1] = stub_lines[s_first : s_last + 1]
    others = sorted({e.id for e in part.exercises if e.id != key and set(exercise_functions(part.source, e.id)) & set(functions)})
    backup = _backup(root, path)
    write_atomically(path, "".join(my_lines).encode())
    return ResetResult(path, backup, functions, others)


def progress(root: Path | None = None) -> dict[str, str]:
    """For each exercise id: "not started" (its stub line is still there), "written", or "no file"."""
    root = (root or locate()).resolve()
    status = {}
    for part in parts():
        path = root / "exercises" / part.file
        text = path.read_text(errors="replace") if path.is_file() else None
        for e in part.exercises:
            if text is None:
                status[e.id] = "no file"
            elif f"NotImplementedError('Exercise {e.id}: " in text or f'NotImplementedError("Exercise {e.id}: ' in text:
                status[e.id] = "not started"
            else:
                status[e.id] = "written"
    return status
