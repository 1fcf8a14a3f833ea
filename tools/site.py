"""What the book's tests and tools share: paths, the table of contents, the built
site (its pages parsed, their weight), a local server."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
SITE = ROOT / "_build" / "html"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def toc_files() -> list[str]:
    """The root file, then every chapter in reading order (parts flattened)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    parts = toc.get("parts") or [{"chapters": toc.get("chapters", [])}]
    return [toc["root"], *(entry["file"] for part in parts for entry in part["chapters"])]


def toc_parts() -> list[str]:
    """The captions of the table of contents' parts, in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [part.get("caption", "") for part in toc.get("parts", [])]


def read_notebook(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def require_site() -> Path:
    """The built site; `make test` builds it first (`make book`)."""
    if not (SITE / "index.html").exists():
        raise AssertionError("no built site in _build/html: run `make book` first")
    return SITE


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the folder at ``prefix`` only and answers 404 everywhere else.

    GitHub Pages serves a project site under ``/<repository>/``; a page that
    reaches for the server's root (an absolute ``/_static/...``) then breaks.
    """

    def __init__(self, *args, prefix: str = "/", **kwargs):
        self.prefix = prefix
        super().__init__(*args, **kwargs)

    def _strip(self, path: str) -> str | None:
        """``path`` (a request path) with the prefix cut off, or None outside it."""
        path = urlsplit(path).path
        if path == self.prefix.rstrip("/"):  # "/repo": the server adds the slash
            return "/"
        if path.startswith(self.prefix):
            return "/" + path[len(self.prefix) :]
        return None

    def send_head(self):
        if self._strip(self.path) is None:
            self.send_error(404, f"outside {self.prefix}")
            return None
        return super().send_head()

    def translate_path(self, path):
        inside = self._strip(path)
        if inside is None:  # send_head has answered 404 already
            raise AssertionError(f"{path} is outside {self.prefix}")
        return super().translate_path(inside)

    def log_message(self, format, *args):
        pass


@contextmanager
def serve(directory: Path, prefix: str = "/") -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 (a free port) at ``prefix`` for a test.

    Yields the base URL without a trailing slash, e.g. ``http://127.0.0.1:PORT``
    or, with ``prefix="/repo/"``, ``http://127.0.0.1:PORT/repo``.
    """
    if not (prefix.startswith("/") and prefix.endswith("/")):
        raise ValueError(f"prefix must start and end with '/', got {prefix!r}")
    handler = functools.partial(_QuietHandler, directory=str(directory), prefix=prefix)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{prefix.rstrip('/')}"
    finally:
        server.shutdown()
        server.server_close()


class Page(HTMLParser):
    """Collects what the tests look at in one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.loads: list[str] = []  # URLs the browser fetches by itself
        self.links: list[str] = []  # <a href>
        self.ids: set[str] = set()
        self.images: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag in ("script", "img", "iframe", "source", "video", "audio") and attrs.get("src"):
            self.loads.append(attrs["src"])
        if tag == "link" and attrs.get("href") and attrs.get("rel") != "canonical":
            self.loads.append(attrs["href"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def page_weight(path: Path) -> int:
    """Bytes of the page's HTML (frames inline) plus the figures it shows."""
    images = [
        (path.parent / unquote(image["src"])).resolve()
        for image in parse(path).images
        if image.get("src") and not image["src"].startswith("data:")
    ]
    return path.stat().st_size + sum(image.stat().st_size for image in set(images))
