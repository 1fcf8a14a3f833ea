"""Run a notebook top to bottom in a fresh kernel: the one way the tools do it.

    execute(nb, timeout=600, static=False)   # the executed notebook (nb itself)
    with started(nb, timeout=900) as client:  # the kernel up, the cells not yet run
        ...

Every run uses the ``python3`` kernel, stores no timing metadata and no
widget state (neither is an output; both change from run to run), and works
in ``cwd``: a given folder, or by default a fresh empty one removed
afterwards, so that a notebook cannot lean on repository files.

``static`` sets the kernel's ``ATTNBOOK_STATIC``: True gives the explorers'
website form (``"1"``), False the live widgets (unset), None leaves this
process's environment as it is. Only the kernel's environment is set; this
process's ``os.environ`` is never changed. The kernel reads the IPython
profile of ``IPYTHONDIR`` as inherited (the Makefile sets it).

A failing cell raises nbclient's ``CellExecutionError`` (re-exported here),
unless the cell is tagged ``raises-exception``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

__all__ = ["KERNEL", "CellExecutionError", "execute", "kernel_env", "started"]

KERNEL = "python3"


def kernel_env(static: bool | None) -> dict[str, str]:
    """The kernel's environment: this process's, with ATTNBOOK_STATIC set or unset."""
    if static not in (True, False, None):
        raise TypeError(f"static must be True, False or None, got {static!r}")
    env = dict(os.environ)
    if static is True:
        env["ATTNBOOK_STATIC"] = "1"
    elif static is False:
        env.pop("ATTNBOOK_STATIC", None)
    return env


@contextmanager
def _folder(cwd: str | Path | None) -> Iterator[str]:
    if cwd is not None:
        if not Path(cwd).is_dir():
            raise ValueError(f"cwd must be an existing folder, got {str(cwd)!r}")
        yield str(cwd)
        return
    with tempfile.TemporaryDirectory() as folder:
        yield folder


def _client(nb: nbformat.NotebookNode, folder: str, timeout: float | None) -> NotebookClient:
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be positive seconds or None, got {timeout!r}")
    return NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": folder}},
    )


def execute(
    nb: nbformat.NotebookNode,
    *,
    timeout: float | None,
    cwd: str | Path | None = None,
    static: bool | None = None,
) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in place (see the module's docstring); ``nb``."""
    with _folder(cwd) as folder:
        _client(nb, folder, timeout).execute(env=kernel_env(static))
    return nb


@contextmanager
def started(
    nb: nbformat.NotebookNode,
    *,
    timeout: float | None,
    cwd: str | Path | None = None,
    static: bool | None = None,
) -> Iterator[NotebookClient]:
    """A client of ``nb`` whose kernel is started, for a caller that runs the
    cells itself (``client.execute_cell``), e.g. to time them; shut down on exit."""
    with _folder(cwd) as folder:
        client = _client(nb, folder, timeout)
        client.reset_execution_trackers()
        with client.setup_kernel(env=kernel_env(static)):
            yield client
