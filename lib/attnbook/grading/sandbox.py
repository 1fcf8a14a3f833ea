"""Where a student's notebook runs while it is graded: bubblewrap, or nothing.

:func:`command` wraps the worker's command line (``python -m
attnbook.grading.worker NOTEBOOK``) in ``bwrap`` (bubblewrap, Debian's package
``bubblewrap``), so that the student's process

- sees its own scratch folder, read-write, as ``/submission`` (its working
  folder and home), an empty ``/tmp``, and read-only what Python needs to run:
  ``/usr``, the grader's Python and the environment attnbook is installed in,
  a few files of ``/etc`` (the dynamic linker's cache, the time zone);
- sees nothing else: no other submission, no autograder, no solutions, no home
  folder, no other process (a pid namespace of its own, where the worker is
  process 1, so not even bubblewrap's command line is in sight), and no network (a
  network namespace of its own, with no interface but loopback);
- runs with no capabilities, in a session of its own (it cannot type into the
  grader's terminal), and dies with the grader.

:func:`limits` are the limits on memory, file size and CPU time, set with
``setrlimit`` in the child before bubblewrap starts; the wall-clock limit is the
grader's (:mod:`.remote`).

What bubblewrap does not do here: it does not limit the number of processes or
threads, and the student's process can use all the CPU it is allowed by
:func:`limits` until the grader's time limit stops it.

Where bubblewrap cannot start (Docker's default seccomp profile often forbids
the user namespaces it needs, as in Gradescope's containers) and the grader
runs as root, the fallback is an unprivileged account: :func:`account` names
it (``nobody``), :func:`as_user` gives the arguments that make ``subprocess``
start the worker as it (no supplementary groups), and :func:`lock_away` makes
the grader's folders (the autograder's tests, the results) readable by root
alone. That fallback hides the grader's files and processes' memory from the
student's code, but not the network, nor any file the system leaves readable to
everyone.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

#: Limits on the student's process: memory (address space), bytes written to
#: one file, CPU seconds.
MEMORY = 8 * 2**30
FILE_SIZE = 64 * 2**20
CPU_SECONDS = 600
#: The account a worker runs as where bubblewrap cannot sandbox and the grader is root.
FALLBACK_USER = "nobody"
#: Where the scratch folder appears inside the sandbox.
INSIDE = "/submission"
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf")


def bwrap() -> str | None:
    """The bubblewrap executable on PATH, or None."""
    return shutil.which("bwrap")


def limits(memory: int = MEMORY, file_size: int = FILE_SIZE, cpu: int = CPU_SECONDS):
    """A ``preexec_fn`` that sets the child's limits (inherited by bwrap's child)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _attnbook_parent() -> str:
    """The folder this process imports attnbook from."""
    import attnbook

    return str(Path(attnbook.__file__).resolve().parent.parent)


def _python_paths() -> list[str]:
    """Folders the worker's Python needs: the interpreter's installation, the
    environment, and the folder attnbook is imported from (an editable install's
    lib/ is outside the environment)."""
    paths = [sys.base_prefix, sys.prefix, _attnbook_parent()]
    out: list[str] = []
    for path in sorted({os.path.realpath(p) for p in paths}, key=len):
        if not any(path == o or path.startswith(o + os.sep) for o in out):
            out.append(path)
    return out


def environment(home: str) -> dict[str, str]:
    """The student's process's whole environment: nothing of the grader's leaks in."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "MPLBACKEND": "agg",
        "MPLCONFIGDIR": f"{home}/.matplotlib" if home != "/" else "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }


def command(scratch: Path, argv: list[str], executable: str | None = None) -> list[str]:
    """``argv`` run by bubblewrap with ``scratch`` as its only writable folder
    (``/submission`` inside); ``executable`` is bwrap's path (default: on PATH)."""
    executable = executable or bwrap()
    if executable is None:
        raise FileNotFoundError("bwrap (bubblewrap) is not installed")
    out = [executable, "--unshare-all", "--as-pid-1", "--die-with-parent", "--new-session"]
    out += ["--cap-drop", "ALL"]
    out += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "lib", "lib64", "lib32", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            out += ["--ro-bind", str(path), str(path)]
    for name in _ETC:
        out += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    out += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    # /tmp first: an environment under /tmp (a test's) is bound on top of it.
    out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in _python_paths():
        out += ["--ro-bind", path, path]
    out += ["--bind", str(scratch), INSIDE, "--chdir", INSIDE]
    out += ["--clearenv"]
    for key, value in environment(INSIDE).items():
        out += ["--setenv", key, value]
    # The worker imports the attnbook the grader imported (an editable install's
    # finder may point at another checkout, which is not bound).
    out += ["--setenv", "PYTHONPATH", _attnbook_parent()]
    return [*out, "--", *argv]


def check(executable: str | None = None) -> str | None:
    """Why bubblewrap cannot sandbox here (not installed, or it fails to start), or None."""
    executable = executable or bwrap()
    if executable is None:
        return "bwrap (bubblewrap) is not installed: apt-get install bubblewrap"
    scratch = Path(os.environ.get("TMPDIR", "/tmp"))
    try:
        done = subprocess.run(
            command(scratch, [sys.executable, "-c", "pass"], executable),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bwrap could not start: {err}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bwrap could not start a sandbox here (exit {done.returncode}): {last}"
    return None


def account(name: str = FALLBACK_USER) -> tuple[int, int]:
    """The user and group ids of the account ``name``; KeyError if it does not exist,
    ValueError if it is root's."""
    import pwd

    entry = pwd.getpwnam(name)
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise ValueError(f"account {name!r} is root's: no isolation")
    return entry.pw_uid, entry.pw_gid


def as_user(name: str = FALLBACK_USER) -> dict:
    """``subprocess.Popen`` arguments that start the child as ``name``, with its
    group and no supplementary groups (the grader must be root)."""
    uid, gid = account(name)
    return {"user": uid, "group": gid, "extra_groups": []}


def give_to(path: Path, name: str = FALLBACK_USER) -> None:
    """Make ``path`` (a scratch folder and what it holds) the account's own."""
    uid, gid = account(name)
    for folder, _, files in os.walk(path):
        os.chown(folder, uid, gid)
        for file in files:
            os.chown(os.path.join(folder, file), uid, gid)


def lock_away(*paths: Path) -> list[Path]:
    """Make each existing path readable, writable and searchable by its owner alone
    (mode 0700 for a folder, 0600 for a file); the paths changed."""
    changed = []
    for path in map(Path, paths):
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o700)
        elif path.is_file() and not path.is_symlink():
            os.chmod(path, 0o600)
        else:
            continue
        changed.append(path)
    return changed
