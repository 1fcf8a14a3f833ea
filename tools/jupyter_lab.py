"""A throwaway JupyterLab for browser tests: the book's explorers in a real front end.

:func:`lab_server` starts JupyterLab from the running Python (the project's
``.venv``) on 127.0.0.1, on a free port, with no token and no browser, over a
temporary folder that holds *copies* of the notebooks (nothing is ever saved
back into ``book/``), with its own config, data and runtime folders (no user
settings, no news or update checks). It stops the server afterwards.

:class:`LabNotebook` opens one notebook in headless Chromium, runs every cell
and finds the explorers by what they are in the DOM: a widget output that shows
an image and has at least one control (an ipywidgets slider handle, a
``<select>``, toggle buttons).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat

from .site import BOOK, NOTEBOOKS

WIDGET_ERRORS = ("Error displaying widget", "model not found")


def explorer_notebooks() -> list[Path]:
    """The chapters that show explorers: a code cell calls ``something_explorer(``."""
    found = []
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        if any(c.cell_type == "code" and "_explorer(" in c.source for c in notebook.cells):
            found.append(path)
    return found


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def through_last_explorer(path: Path) -> nbformat.NotebookNode:
    """The chapter at ``path`` up to the last code cell that makes an explorer
    (calls ``something_explorer(``) or whose stored outputs show a widget (a
    concept question's ``ask(...)`` cell shows one too, but is not an explorer;
    the questions before the last explorer run with it).

    What follows it (exercises, solutions, hidden checks) shows no explorer;
    strict nbval runs it on every CPU path and in the Colab-like environment,
    so the JupyterLab test need not wait for it.
    """
    notebook = nbformat.read(path, as_version=4)
    shows = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        and not cell.source.startswith("ask(")  # a concept question, not an explorer
        and (
            "_explorer(" in cell.source
            or any(WIDGET_VIEW in output.get("data", {}) for output in cell.outputs)
        )
    ]
    if not shows:
        raise ValueError(f"{path.name} makes and shows no explorer")
    notebook.cells = notebook.cells[: shows[-1] + 1]
    return notebook


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def lab_server(
    notebooks: list[Path],
    extra: dict[str, nbformat.NotebookNode] | None = None,
    disabled_extensions: tuple[str, ...] = (),
    render_all: bool = False,
):
    """Yield (base URL, folder) of a JupyterLab serving copies of ``notebooks``.

    ``extra`` maps file names to notebooks written into the folder as well.
    ``disabled_extensions`` names lab extensions this server leaves off (its own
    page config, e.g. ``("jupyterlab-myst",)`` to see a notebook as a JupyterLab
    without that extension shows it). ``render_all`` keeps every cell rendered
    (no windowing), so that a test can read the whole notebook from the page.
    """
    with tempfile.TemporaryDirectory(prefix="attnbook-lab-") as tmp:
        tmp = Path(tmp)
        root = tmp / "notebooks"
        root.mkdir()
        for path in notebooks:
            shutil.copy(path, root / path.name)
        for name, notebook in (extra or {}).items():
            nbformat.write(notebook, root / name)
        profile = tmp / "ipython" / "profile_default"
        profile.mkdir(parents=True)
        shutil.copy(BOOK / "_ext" / "ipython_kernel_config.py", profile)
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(tmp / "config"),
            "JUPYTER_DATA_DIR": str(tmp / "data"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            "IPYTHONDIR": str(tmp / "ipython"),
            "JUPYTER_PLATFORM_DIRS": "1",
        }
        env.pop("ATTNBOOK_STATIC", None)  # live widgets, not the website's fragments
        labconfig = tmp / "config" / "labconfig"
        labconfig.mkdir(parents=True)
        (labconfig / "page_config.json").write_text(
            json.dumps({"disabledExtensions": dict.fromkeys(disabled_extensions, True)})
        )
        settings = tmp / "settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True)
        if render_all:
            (settings / "tracker.jupyterlab-settings").write_text(
                json.dumps({"windowingMode": "none"})
            )
        port = free_port()
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            "--LabServerApp.workspaces_dir=" + str(tmp / "workspaces"),
            "--LabServerApp.user_settings_dir=" + str(tmp / "settings"),
        ]
        log = (tmp / "server.log").open("w")
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/api/status", timeout=2) as reply:
                        json.load(reply)
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise AssertionError(
                            "JupyterLab did not start:\n" + (tmp / "server.log").read_text()
                        ) from None
                    time.sleep(0.5)
            yield base, root
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log.close()


# The explorers of an open notebook: each widget output that shows an image and
# has a control. Marks them with data-attnbook-explorer="i" for the locators.
FIND_EXPLORERS_JS = """() => {
    const found = [];
    for (const area of document.querySelectorAll('.jp-OutputArea-output')) {
        const widget = area.querySelector('.jupyter-widgets');
        if (!widget || !area.querySelector('img')) continue;
        const controls = area.querySelectorAll(
            '.noUi-handle, select, .widget-toggle-buttons button, input[type=range]');
        if (!controls.length) continue;
        area.setAttribute('data-attnbook-explorer', String(found.length));
        found.push({controls: controls.length});
    }
    return found;
}"""

# Start watching ``area``: window.__attnbookWatch resolves when a picture inside
# it changes (new <img> or new src) and has loaded and decoded, with the
# milliseconds since the last keydown on the page and, as ``src``, the length
# and a 32-bit FNV-1a hash of the whole src (data URLs of PNGs share their
# first hundred characters, so a prefix cannot tell pictures apart).
WATCH_JS = """area => { window.__attnbookWatch = new Promise((resolve, reject) => {
    const digest = text => { let h = 0x811c9dc5;
        for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
        return text.length + ':' + (h >>> 0).toString(16); };
    const before = new Map([...area.querySelectorAll('img')].map(img => [img, img.src]));
    const start = window.__attnbookKeydown;
    const done = img => (img.complete ? Promise.resolve() : new Promise(ok =>
        img.addEventListener('load', ok, {once: true}))).then(() => img.decode ? img.decode() : null)
        .then(() => { observer.disconnect(); resolve({ms: performance.now() - window.__attnbookKeydown,
                                                      src: digest(img.src)}); });
    const check = () => {
        for (const img of area.querySelectorAll('img')) {
            if (!before.has(img) || before.get(img) !== img.src) { done(img); return true; }
        }
        return false;
    };
    const observer = new MutationObserver(() => check());
    observer.observe(area, {subtree: true, childList: true, attributes: true,
                            attributeFilter: ['src']});
    setTimeout(() => { observer.disconnect(); reject(new Error('picture did not change')); }, 15000);
}); }"""

KEYDOWN_JS = """() => { window.__attnbookKeydown = 0;
    document.addEventListener('keydown', () => { window.__attnbookKeydown = performance.now(); },
                              {capture: true}); }"""


class LabNotebook:
    """One notebook open in JupyterLab, in an :class:`~tests._offline.Offline` page."""

    def __init__(self, offline, base: str, name: str):
        self.offline = offline
        self.page = offline.page
        # ?reset: a fresh workspace, with only this notebook open.
        self.page.goto(f"{base}/lab/tree/{name}?reset", wait_until="load")
        self.page.wait_for_function("window.jupyterapp && window.jupyterapp.shell", timeout=120_000)
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        self.page.wait_for_function(
            """() => { const w = window.jupyterapp.shell.currentWidget;
                       return w && w.sessionContext && w.sessionContext.session
                              && w.sessionContext.session.kernel
                              && w.sessionContext.session.kernel.status === 'idle'; }""",
            timeout=120_000,
        )
        self.page.evaluate(KEYDOWN_JS)

    def run_all(self, timeout_s: float = 300) -> None:
        """Run every cell and wait until each code cell has finished."""
        self.page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.page.wait_for_function(
            """() => { const w = window.jupyterapp.shell.currentWidget;
                const cells = w.content.widgets.filter(c => c.model.type === 'code');
                return cells.length && cells.every(c => c.model.executionCount !== null)
                    && w.sessionContext.session.kernel.status === 'idle'; }""",
            timeout=timeout_s * 1000,
            polling=500,
        )
        # Let the widget views of the last outputs render.
        self.page.wait_for_timeout(1000)

    def widget_errors(self) -> list[str]:
        text = self.page.locator(".jp-Notebook:visible").inner_text()
        return [error for error in WIDGET_ERRORS if error in text]

    def cell_errors(self) -> list[str]:
        """Errors and stderr in cells that are not tagged ``raises-exception``."""
        return self.page.evaluate(
            """() => { const found = [];
                for (const cell of window.jupyterapp.shell.currentWidget.content.widgets) {
                    if (cell.model.type !== 'code') continue;
                    const tags = cell.model.getMetadata('tags') || [];
                    if (tags.includes('raises-exception')) continue;
                    for (const out of cell.model.outputs.toJSON()) {
                        if (out.output_type === 'error') found.push(out.ename + ': ' + out.evalue);
                        if (out.output_type === 'stream' && out.name === 'stderr')
                            found.push(String(out.text).slice(0, 300));
                    }
                }
                return found; }"""
        )

    def explorers(self) -> list:
        found = self.page.evaluate(FIND_EXPLORERS_JS)
        return [self.page.locator(f"[data-attnbook-explorer='{i}']") for i in range(len(found))]

    def controls(self, explorer) -> list:
        found = explorer.locator(".noUi-handle, select, .widget-toggle-buttons, input[type=range]")
        return [found.nth(i) for i in range(found.count())]

    def captions(self, explorer) -> list[str]:
        """The texts of the explorer's visible captions (``.attnbook-caption``):
        the description under the picture, one Stack child shown at a time."""
        return explorer.evaluate(
            """area => [...area.querySelectorAll('.attnbook-caption')]
                .filter(el => el.getClientRects().length > 0)
                .map(el => el.textContent)"""
        )

    def wait_caption_change(self, explorer, before: str, timeout_ms: float = 5000) -> str:
        """Wait until the one visible caption differs from ``before``; return it."""
        explorer.evaluate(
            """(area, [before, timeout]) => new Promise((resolve, reject) => {
                const shown = () => [...area.querySelectorAll('.attnbook-caption')]
                    .filter(el => el.getClientRects().length > 0);
                const start = performance.now();
                const poll = () => {
                    const now = shown();
                    if (now.length === 1 && now[0].textContent !== before) return resolve();
                    if (performance.now() - start > timeout) return reject(new Error(
                        'the caption did not change: ' + now.map(el => el.textContent)));
                    requestAnimationFrame(poll);
                };
                poll();
            })""",
            [before, timeout_ms],
        )
        (text,) = self.captions(explorer)
        return text

    def step(self, explorer, control) -> dict:
        """Move ``control`` one stop (a key press; a menu, its next option chosen)
        and return the new picture's latency."""
        control.scroll_into_view_if_needed()
        control.focus()
        kind = control.evaluate(
            """el => el.classList.contains('noUi-handle') ? 'slider'
                   : el.tagName === 'SELECT' ? 'select'
                   : el.classList.contains('widget-toggle-buttons') ? 'toggles' : 'range'"""
        )
        if kind == "slider":
            at_end = control.evaluate(
                "el => el.getAttribute('aria-valuenow') === el.getAttribute('aria-valuemax')"
            )
            key = "Home" if at_end else "ArrowRight"
        elif kind == "select":
            # A closed <select> in JupyterLab's notebook ignores arrow keys and
            # type-ahead in headless Chromium (the notebook's own key handling
            # takes them), so the menu is chosen as a pointer user would: the
            # next option is selected and the events a choice fires are sent,
            # as Playwright's select_option does, but inside the page, so the
            # clock starts at the choice and not at Playwright's own checks.
            explorer.evaluate(WATCH_JS)
            control.evaluate(
                """el => { window.__attnbookKeydown = performance.now();
                    el.selectedIndex = (el.selectedIndex + 1) % el.options.length;
                    el.dispatchEvent(new Event('input', {bubbles: true}));
                    el.dispatchEvent(new Event('change', {bubbles: true})); }"""
            )
            return self.page.evaluate("window.__attnbookWatch")
        elif kind == "range":
            at_end = control.evaluate("el => Number(el.value) >= Number(el.max)")
            key = "Home" if at_end else "ArrowRight"
        else:
            buttons = control.locator("button")
            pressed = [
                i
                for i in range(buttons.count())
                if "mod-active" in buttons.nth(i).get_attribute("class")
            ]
            target = buttons.nth(((pressed[0] if pressed else -1) + 1) % buttons.count())
            target.focus()
            control = target
            key = "Enter"
        explorer.evaluate(WATCH_JS)
        control.press(key)
        return self.page.evaluate("window.__attnbookWatch")
