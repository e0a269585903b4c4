"""The grading child's audit hook, event by event, on this Python: each refusal really happens.

The script below sets the hook up as the grading child does, seals it, then
tries every action the hook must refuse (and a few it must allow), in a
fresh interpreter, and reports what happened.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from minigrad.grading.recursion import recursion_cycle, require_iterative

SCRIPT = textwrap.dedent(
    """
    import ctypes, gc, io, json, os, subprocess, sys, threading
    from minigrad.grading import guard

    protected, folder, unrelated = sys.argv[1], sys.argv[2], sys.argv[3]
    read_fd, write_fd = os.pipe()
    g = guard.Guard([protected], [folder], (read_fd, write_fd))
    sys.addaudithook(g)
    guard.seal(g)
    results = {}

    def attempt(name, action):
        try:
            action()
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
        except BaseException as err:
            results[name] = f"{type(err).__name__}: {err}"

    def fork():
        if os.fork() == 0:
            os._exit(0)

    attempt("open", lambda: open(protected).close())
    attempt("open for writing", lambda: open(protected, "a").close())
    attempt("io.open_code", lambda: io.open_code(protected).close())
    attempt("os.open", lambda: os.close(os.open(protected, os.O_RDONLY)))
    attempt("open through a symlink", lambda: open(os.path.join(folder, "..", "link")).close())
    attempt("open under solutions/", lambda: open(os.path.join(folder, "01.py")).close())
    attempt("open the channel fd", lambda: open(write_fd, "wb", closefd=False))
    attempt("open /proc/self/fd", lambda: open(f"/proc/self/fd/{write_fd}", "wb"))
    attempt("open /dev/fd", lambda: open(f"/dev/fd/{write_fd}", "wb"))
    attempt("import minigrad.grading", lambda: __import__("minigrad.grading.checks.ch01"))
    attempt("import _thread again", lambda: (sys.modules.pop("_thread"), __import__("_thread")))
    attempt("subprocess", lambda: subprocess.run(["true"]))
    attempt("os.system", lambda: os.system("true"))
    attempt("os.execv", lambda: os.execv("/bin/true", ["true"]))
    attempt("os.spawnv", lambda: os.spawnv(os.P_WAIT, "/bin/true", ["true"]))
    attempt("os.posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
    attempt("os.fork", fork)
    attempt("ctypes", lambda: ctypes.CDLL(None))
    attempt("gc.get_objects", gc.get_objects)
    attempt("gc.get_referrers", lambda: gc.get_referrers(g))
    attempt("gc.get_referents", lambda: gc.get_referents(g))
    attempt("os.kill the parent", lambda: os.kill(os.getppid(), 0))
    attempt("sys.settrace", lambda: sys.settrace(None))
    attempt("sys.setprofile", lambda: sys.setprofile(None))
    attempt("threading.settrace", lambda: threading.settrace(print))
    attempt("threading.setprofile", lambda: threading.setprofile(print))
    attempt("start a thread", lambda: threading.Thread(target=print).start())

    def harness_profile():
        with g.harness():
            sys.setprofile(None)

    attempt("the harness's own profile", harness_profile)
    attempt("open an unrelated file", lambda: open(unrelated).close())
    attempt("import an unrelated module", lambda: __import__("colorsys"))
    print(json.dumps(results))
    """
)

REFUSED = [
    "open", "open for writing", "io.open_code", "os.open", "open through a symlink", "open under solutions/",
    "open the channel fd", "open /proc/self/fd", "open /dev/fd", "import minigrad.grading", "import _thread again",
    "subprocess", "os.system", "os.execv", "os.spawnv", "os.posix_spawn", "os.fork", "ctypes",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "os.kill the parent", "sys.settrace", "sys.setprofile",
    "threading.settrace", "threading.setprofile", "start a thread",
]
ALLOWED = ["the harness's own profile", "open an unrelated file", "import an unrelated module"]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("guard")
    protected = tmp / "engine.py"
    protected.write_text("SECRET = 1\n")
    folder = tmp / "solutions"
    folder.mkdir()
    (folder / "01.py").write_text("SECRET = 1\n")
    os.symlink(protected, tmp / "link")
    unrelated = tmp / "notes.txt"
    unrelated.write_text("hello\n")
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(protected), str(folder), str(unrelated)],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the refusals are checked on Linux")
@pytest.mark.parametrize("action", REFUSED)
def test_the_hook_refuses(outcomes, action):
    assert outcomes[action] == "refused", outcomes[action]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the refusals are checked on Linux")
@pytest.mark.parametrize("action", ALLOWED)
def test_the_hook_allows(outcomes, action):
    assert outcomes[action] == "allowed", outcomes[action]


def test_recursion_is_found_by_reading_the_source():
    direct = "def topological_order(root):\n    def visit(n):\n        visit(n)\n    visit(root)\n"
    assert recursion_cycle(direct, "topological_order") == ["visit", "visit"]
    mutual = "def a(x):\n    return b(x)\ndef b(x):\n    return a(x)\ndef topological_order(r):\n    return a(r)\n"
    assert recursion_cycle(mutual, "topological_order") == ["a", "b", "a"]
    method = "class G:\n    def walk(self, n):\n        self.walk(n)\ndef topological_order(r):\n    return G().walk(r)\n"
    assert recursion_cycle(method, "topological_order") is None  # G().walk is not followed ...
    method_entry = "class G:\n    def topological_order(self, n):\n        self.topological_order(n)\n"
    assert recursion_cycle(method_entry, "topological_order") == ["topological_order", "topological_order"]
    iterative = "def topological_order(root):\n    stack = [root]\n    while stack:\n        stack.pop()\n"
    assert recursion_cycle(iterative, "topological_order") is None
    with pytest.raises(AssertionError, match="must be iterative"):
        require_iterative(direct, "topological_order")


def test_a_submission_in_a_protected_folder_shows_its_source_to_inspect(tmp_path):
    """The kernel simulator reads a kernel's source with inspect; the grader hands it over, no file read needed."""
    folder = tmp_path / "solutions"
    folder.mkdir()
    path = folder / "submission.py"
    path.write_text("def kernel(x):\n    return x + 1\n")
    script = textwrap.dedent(
        """
        import importlib, inspect, os, sys
        from minigrad.grading import guard

        path, folder = sys.argv[1], sys.argv[2]
        with open(path, "rb") as f:
            source = f.read()
        guard.install_finder("graded_submission", path, source)
        g = guard.Guard([], [folder], (os.pipe()))
        sys.addaudithook(g)
        guard.seal(g)
        try:
            open(path).close()
            print("opened")
        except PermissionError:
            print("refused")
        module = importlib.import_module("graded_submission")
        print(inspect.getsource(module.kernel).splitlines()[1].strip())
        """
    )
    run = subprocess.run([sys.executable, "-c", script, str(path), str(folder)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == ["refused", "return x + 1"]
