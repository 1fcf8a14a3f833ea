"""The grader's side: a student's notebook in a process of its own, its functions as proxies.

:class:`Submission` starts the worker (:mod:`.worker`) on a copy of the
notebook, in the sandbox (:mod:`.sandbox`) or, when asked, without one, and
waits until its cells have run. :meth:`Submission.function` gives a *proxy*: a
callable that the checkers call like the student's function. Each call sends
the arguments as data (:mod:`.wire`), and the result comes back as data, so
nothing the student wrote runs in the grader's process:

- an exception the function raised is raised again here, as the builtin
  exception of the same name (a RuntimeError of that name otherwise);
- an argument the function edited in place is edited here the same way, so the
  checkers' "modified its input in place" still sees it;
- a result that depends on an argument sent as requiring gradients is tied to
  it by an autograd function whose backward asks the worker for the gradient,
  so the checkers' gradient probes work unchanged.

A call that does not come back (the question's time limit, a crash, a student's
``os._exit``) leaves the worker stopped; the next call starts a fresh one,
which runs the notebook's cells again. A worker that cannot start, or a
submission past its own time limit, raises :class:`GradingError`: an error of
the grading, which the grader reports as such, never as a zero.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from . import sandbox, wire

#: Seconds for the notebook's cells to run before the worker counts as not starting.
START_TIMEOUT = 60.0
# After this many calls of one function that ended the worker, it is not run again
# (each would start a new worker and run the notebook's cells again).
_DEATHS = 2


class GradingError(BaseException):
    """The grading itself failed (the worker cannot start, the submission ran past
    its time limit): a BaseException, so that no checker's ``except Exception``
    turns it into a failing case."""


class _Gone(Exception):
    """The worker stopped answering in the middle of a call."""


class _RemoteGrad(torch.autograd.Function):
    """A remote result tied to the local tensors it was computed from."""

    @staticmethod
    def forward(ctx, backward, value, *inputs):
        ctx.remote_backward = backward
        ctx.shapes = [(t.shape, t.dtype) for t in inputs]
        return value.clone()

    @staticmethod
    def backward(ctx, grad):
        grads = ctx.remote_backward(grad)
        out = []
        for (shape, dtype), g in zip(ctx.shapes, list(grads) + [None] * len(ctx.shapes)):
            ok = isinstance(g, torch.Tensor) and g.shape == shape
            out.append(g.to(dtype) if ok else None)
        return (None, None, *out)


class Submission:
    """A notebook running in a worker process; its functions, as proxies.

    ``sandboxed`` False runs the worker without bubblewrap (only when the
    teacher asked for it, or as ``user``). ``user`` (the grader being root) runs
    the worker as that unprivileged account, its scratch folder its own
    (:func:`.sandbox.as_user`). ``deadline`` is the ``time.monotonic()`` past which
    any request raises :class:`GradingError`.
    """

    def __init__(
        self,
        notebook: Path,
        *,
        sandboxed: bool = True,
        deadline: float | None = None,
        start_timeout: float | None = None,
        memory: int = sandbox.MEMORY,
        user: str | None = None,
    ):
        self.notebook = Path(notebook)
        self.sandboxed = sandboxed
        self.user = user
        self.deadline = deadline if deadline is not None else time.monotonic() + 3600
        self.start_timeout = START_TIMEOUT if start_timeout is None else start_timeout
        self.deaths: dict[str, int] = {}  # function -> calls that ended its process
        self.memory = memory
        self.cell_errors: list[str] = []
        self.starts = 0
        self._process: subprocess.Popen | None = None
        self._scratch: str | None = None
        self._log = None
        self._calls = 0
        self._described: dict[str, dict] = {}

    # ------------------------------------------------------------ the process

    def _command(self, scratch: Path) -> list[str]:
        argv = [sys.executable, "-m", "attnbook.grading.worker", "notebook.ipynb"]
        if self.sandboxed:
            return sandbox.command(scratch, argv)
        return argv

    def start(self) -> None:
        """Start a worker on a fresh copy of the notebook and wait for its cells."""
        self.stop()
        self.starts += 1
        self._scratch = tempfile.mkdtemp(prefix="attnbook-submission-")
        scratch = Path(self._scratch)
        shutil.copyfile(self.notebook, scratch / "notebook.ipynb")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop)
        env = sandbox.environment(str(scratch)) if not self.sandboxed else None
        if env is not None:
            import attnbook  # an editable install's lib/ may be needed on the path

            env["PYTHONPATH"] = str(Path(attnbook.__file__).resolve().parent.parent)
        account = {}
        if self.user is not None:
            account = sandbox.as_user(self.user)
            sandbox.give_to(scratch, self.user)
        try:
            self._process = self._popen(scratch, env, account)
        except OSError as err:  # e.g. an interpreter the worker's account cannot reach
            self.stop()
            raise GradingError(f"the notebook's process could not start: {err}") from None
        limit = min(self.deadline, time.monotonic() + self.start_timeout)
        try:
            ready = self._receive(limit)
        except _Gone as err:
            self.stop()
            raise GradingError(f"the notebook could not be run: {err}") from None
        self.cell_errors = [str(e) for e in ready.get("cell_errors", [])]

    def _popen(self, scratch: Path, env: dict | None, account: dict) -> subprocess.Popen:
        return subprocess.Popen(
            self._command(scratch),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=scratch,
            env=env if env is not None else {"PATH": "/usr/bin:/bin"},
            start_new_session=True,
            preexec_fn=sandbox.limits(memory=self.memory),
            **account,
        )

    def stop(self) -> None:
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
            for stream in (self._process.stdin, self._process.stdout):
                stream.close()
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    close = stop

    def __enter__(self) -> Submission:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _why_gone(self) -> str:
        process = self._process
        code = None
        if process is not None:  # its output ended: give it a moment to exit
            try:
                code = process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        if code is None:
            return "it stopped answering"
        if code < 0:
            name = signal.Signals(-code).name
            extra = " (out of memory or CPU time?)" if name in ("SIGKILL", "SIGXCPU") else ""
            return f"its process was killed by {name}{extra}"
        tail = ""
        if self._log is not None:
            self._log.seek(0)
            lines = [x for x in self._log.read()[-2000:].decode(errors="replace").splitlines() if x]
            tail = f": {lines[-1][:200]}" if lines else ""
        return f"its process exited with status {code}{tail}"

    def _receive(self, limit: float) -> dict:
        """One frame from the worker, waiting until ``limit`` (a monotonic time)."""
        import selectors

        process = self._process
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while not selector.select(timeout=max(0.0, min(limit - time.monotonic(), 1.0))):
                if time.monotonic() >= limit:
                    if time.monotonic() >= self.deadline:
                        raise GradingError("the submission ran past its time limit")
                    raise _Gone(f"no answer within {self.start_timeout:g} s")
                if process.poll() is not None:
                    break
        try:
            return wire.receive(process.stdout)
        except (EOFError, wire.WireError, OSError) as err:
            reason = self._why_gone() if isinstance(err, EOFError) else str(err)
            raise _Gone(reason) from None

    def request(self, message: dict) -> dict:
        """Send one request and wait for its answer; a worker that does not answer
        is stopped (the next request starts a new one)."""
        if time.monotonic() >= self.deadline:
            raise GradingError("the submission ran past its time limit")
        if self._process is None:
            self.start()
            self._described.clear()
        self._calls += 1
        message = {**message, "id": self._calls}
        try:
            wire.send(self._process.stdin, message)
            while True:
                answer = self._receive(self.deadline)
                if answer.get("id") == self._calls:
                    return answer
        except BrokenPipeError:
            reason = self._why_gone()
            self.stop()
            raise _Gone(reason) from None
        except BaseException:  # a time limit, a crash: the worker's state is unknown
            self.stop()
            raise

    # ------------------------------------------------------------ the functions

    def describe(self, names: list[str]) -> dict[str, dict]:
        wanted = [n for n in names if n not in self._described]
        if wanted:
            answer = self.request({"op": "describe", "names": wanted})
            if "failed" in answer or not isinstance(answer.get("value"), dict):
                raise GradingError(f"the worker could not list the functions: {answer}")
            self._described.update(answer["value"])
        return {n: self._described.get(n, {"defined": False}) for n in names}

    def values(self, name: str, keys: list[str]) -> tuple[dict[str, Any], str]:
        """The entries ``keys`` of the notebook's dict ``name``, decoded as data (an entry
        the dict lacks is absent), and, when there is no such dict, why."""
        try:
            answer = self.request({"op": "values", "name": name, "keys": list(keys)})
        except _Gone as err:
            raise GradingError(f"the notebook's process stopped: {err}") from None
        found = answer.get("value")
        if "failed" in answer or not isinstance(found, dict):
            kind = answer.get("kind") if isinstance(answer.get("kind"), str) else "missing"
            return {}, f"{name} is not a dict (it is {kind!r})"
        out = {}
        for key in keys:
            if key in found:
                try:
                    out[key] = wire.decode(found[key])
                except wire.WireError as err:
                    out[key] = wire.Opaque("unreadable", str(err))
        return out, ""

    def function(self, name: str) -> Any:
        """A proxy for the notebook's function ``name``, or None when it defines none."""
        try:
            info = self.describe([name])[name]
        except _Gone as err:
            raise GradingError(f"the notebook's process stopped: {err}") from None
        if not info.get("defined"):
            return None
        return _Proxy(self, name, info)


def _copy_back(local: Any, after: Any) -> None:
    """Make the tensors among ``local`` what the worker's copies became."""
    if isinstance(local, torch.Tensor) and isinstance(after, torch.Tensor):
        if local.shape == after.shape and local.dtype == after.dtype:
            same = (
                torch.equal(local.detach(), after)
                if not local.is_floating_point()
                else (
                    torch.equal(torch.isnan(local.detach()), torch.isnan(after))
                    and torch.equal(local.detach().nan_to_num(0), after.nan_to_num(0))
                )
            )
            if not same:
                with torch.no_grad():
                    local.copy_(after)
        else:
            local.data = after
    elif isinstance(local, (list, tuple)) and isinstance(after, (list, tuple)):
        for a, b in zip(local, after):
            _copy_back(a, b)


class _Proxy:
    """A student's function, called in the worker."""

    def __init__(self, submission: Submission, name: str, info: dict):
        self._submission = submission
        self.__name__ = self.__qualname__ = name
        self.__module__ = "__main__"
        parameters = [
            inspect.Parameter(str(p), inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for p in info.get("parameters", [])
            if str(p).isidentifier()
        ]
        try:
            self.__signature__ = inspect.Signature(parameters)
        except ValueError:  # e.g. a name twice: no signature then
            self.__signature__ = inspect.Signature()
        self.__attnbook_source__ = info.get("source")
        self.starts = submission.starts

    def __repr__(self) -> str:
        return f"<function {self.__name__} (in the student's process)>"

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError("the graded function is called with positional arguments only")
        submission = self._submission
        if submission.deaths.get(self.__name__, 0) >= _DEATHS:
            raise RuntimeError(f"not run again: {self.__name__} ended its process {_DEATHS} times")
        grad = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
        message = {
            "op": "call",
            "name": self.__name__,
            "args": wire.encode(list(args)),
            "grad": grad,
        }
        try:
            answer = submission.request(message)
        except _Gone as err:
            submission.deaths[self.__name__] = submission.deaths.get(self.__name__, 0) + 1
            raise RuntimeError(f"the process running {self.__name__} died: {err}") from None
        call = answer.get("id")
        if "failed" in answer:
            raise RuntimeError(f"{self.__name__}'s answer could not be read: {answer['failed']}")
        try:
            after = wire.decode(answer.get("args", []))
            _copy_back(list(args), after)
            if "error" in answer:
                error = wire.decode(answer["error"])
                if isinstance(error, BaseException):
                    raise error
                raise RuntimeError(str(error))
            value = wire.decode(answer.get("value"))
        except wire.WireError as err:
            raise RuntimeError(f"{self.__name__}'s answer could not be read: {err}") from None
        if answer.get("graph") and isinstance(value, torch.Tensor) and grad:
            starts = submission.starts

            def backward(upstream: torch.Tensor):
                if submission.starts != starts:
                    raise RuntimeError("the process that computed this result has stopped")
                reply = submission.request(
                    {"op": "backward", "call": call, "grad": wire.encode(upstream)}
                )
                if "error" in reply:
                    raise wire.decode(reply["error"])
                if "failed" in reply:
                    raise RuntimeError(reply["failed"])
                return wire.decode(reply.get("value"))

            value = _RemoteGrad.apply(backward, value, *[args[i] for i in grad])
        return value
