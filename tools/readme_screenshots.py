"""The README's two pictures of the website, taken from the built site.

Run after `make book`: ``.venv/bin/python -m tools.readme_screenshots``. It serves
``_build/html`` on 127.0.0.1, opens two pages in headless Chromium (found by
tools/browser.py, offline) at 1280 x 800 and writes

* ``docs/img/site-explorer.png``: chapter 4 ("Masked softmax and batched
  attention") scrolled to its explorer, with the text and the table of contents
  beside it;
* ``docs/img/site-live-prompt.png``: chapter 10's live explorer with a prompt
  typed into it a key at a time.

Each is reduced to a 256-colour palette, which keeps it small enough for the
README (tests/test_readme.py allows 300 KiB a picture). The README's alt text
describes what these pages show; look at the pictures after retaking them.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from tools.browser import Offline, chromium
from tools.site import ROOT, require_site, serve

OUT = ROOT / "docs" / "img"
VIEWPORT = {"width": 1280, "height": 800}
PROMPT = "The attention weights of a query"


def _save_small(png: bytes, path: Path) -> int:
    """Write ``png`` to ``path`` with a 256-colour palette; return its size."""
    from io import BytesIO

    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.open(BytesIO(png)).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path.stat().st_size


def _scroll_to(page, selector: str, top: int) -> None:
    """Scroll so that the first ``selector`` starts ``top`` pixels below the window's top."""
    page.locator(selector).first.evaluate(
        "(el, top) => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - top)",
        top,
    )
    page.wait_for_timeout(300)


def _type(page, field: str, text: str) -> None:
    """Empty the text field ``field`` (a selector), then type ``text`` a key at a time."""
    page.locator(field).fill("")
    page.locator(field).press_sequentially(text, delay=20)
    page.wait_for_timeout(300)


def main() -> None:
    site = require_site()
    with serve(site) as base, chromium() as browser, Offline(browser, viewport=VIEWPORT) as tab:
        page = tab.page
        page.goto(f"{base}/book/masked-softmax.html", wait_until="networkidle")
        _scroll_to(page, ".attnbook-explorer", 160)
        size = _save_small(page.screenshot(), OUT / "site-explorer.png")
        print(f"docs/img/site-explorer.png: {size / 1024:.0f} KiB")

        page.goto(f"{base}/book/causal-language-model.html", wait_until="networkidle")
        _scroll_to(page, ".attnbook-live-lm", 40)
        _type(page, ".attnbook-live-lm textarea", PROMPT)
        size = _save_small(page.screenshot(), OUT / "site-live-prompt.png")
        print(f"docs/img/site-live-prompt.png: {size / 1024:.0f} KiB")
        problems = tab.blocked + tab.errors
        if problems:
            raise SystemExit(f"the pages asked another host or logged errors: {problems}")


if __name__ == "__main__":
    main()
