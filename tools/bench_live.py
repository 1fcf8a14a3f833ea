"""The live explorers in headless Chromium: time to first result and redraw per keystroke.

Part of `make bench` (tools/bench.py calls :func:`live_times` for each page of
:data:`LIVE_PAGES`); ``python -m tools.bench_live FILE.html`` measures one page
(a built chapter, or a page holding only the fragment).

* first result: from the page becoming interactive (``domInteractive`` of the
  navigation timing) to the explorer's first drawn result (its
  ``data-first-at``). Budget: 100 ms.
* redraw: a 40-token sequence (:data:`TYPED`) typed one character at a time
  (113 key strokes, three rounds): for each, the time from the ``input`` event to the
  redrawn picture and table laid out (the forward pass, the canvases, the
  table, forced layout; the paint that follows is not included). Budget: one
  animation frame, 16.7 ms, at the worst keystroke.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from attnbook.widgets.live.induction import default_text

from .browser import launch
from .site import SITE, page_weight, serve

# Built pages with a live explorer, and its name in the report.
LIVE_PAGES = {"induction-heads": "induction live", "cross-attention": "dates live"}
FIRST_BUDGET_MS = 100.0
FRAME_BUDGET_MS = 1000 / 60

# What the benchmark types: the longest input, a sequence of the chapter's task.
TYPED = default_text(40, 64)
# Chapter 13's explorer (dates): its longest input, 40 characters.
DATES_TYPED = "Wednesday 23 September 1998, Wed 23 Sept"
TYPED_BY_NAME = {"dates live": DATES_TYPED}

TYPE_JS = """async ([rounds, text]) => {
    const host = document.querySelector('.attnbook-live');
    const field = host.querySelector('input[type=text]');
    const out = host.querySelector('.attnbook-live-result');
    const times = [], compute = [], draw = [];
    for (let r = 0; r < rounds; r++) {
        for (let i = 0; i <= text.length; i++) {
            field.value = text.slice(0, i);
            const start = performance.now();
            field.dispatchEvent(new Event('input'));
            host.getBoundingClientRect();
            for (const c of host.querySelectorAll('canvas, table')) c.getBoundingClientRect();
            times.push(performance.now() - start);
            compute.push(Number(out.dataset.computeMs));
            draw.push(Number(out.dataset.drawMs));
            await new Promise(requestAnimationFrame);
        }
    }
    return {times, compute, draw, updates: Number(out.dataset.updates)};
}"""


def live_times(url: str, rounds: int = 3, typed: str = TYPED) -> dict:
    """Time to first result and keystroke redraws (ms) of the live explorer at ``url``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith((url.rsplit("/", 1)[0], "data:"))
                else route.abort()
            ),
        )
        page.goto(url, wait_until="load")
        page.wait_for_selector(".attnbook-live-result[data-first-at]", state="attached")
        first = page.evaluate(
            """() => {
                const nav = performance.getEntriesByType('navigation')[0];
                const at = Number(document.querySelector('.attnbook-live-result').dataset.firstAt);
                return at - nav.domInteractive;
            }"""
        )
        measured = page.evaluate(TYPE_JS, [rounds, typed])
        browser.close()
    times = sorted(measured["times"])
    return {
        "first_ms": first,
        "median_ms": statistics.median(times),
        "worst_ms": times[-1],
        "keystrokes": len(times),
        "compute_ms": statistics.median(measured["compute"]),
        "draw_ms": statistics.median(measured["draw"]),
    }


def report(name: str, path: Path, base: str, root: Path) -> bool:
    url = f"{base}/{path.relative_to(root).as_posix()}"
    result = live_times(url, typed=TYPED_BY_NAME.get(name, TYPED))
    weight = page_weight(path)
    ok = (
        weight <= 1024 * 1024
        and result["first_ms"] <= FIRST_BUDGET_MS
        and result["worst_ms"] <= FRAME_BUDGET_MS
    )
    print(
        f"{path.stem:<20} {name:<15} {weight / 1024:>6.0f} KiB   first result "
        f"{result['first_ms']:6.1f} ms   redraw median {result['median_ms']:5.2f} ms, "
        f"worst {result['worst_ms']:5.2f} ms over {result['keystrokes']} keystrokes "
        f"(median forward {result['compute_ms']:.2f} ms, drawing {result['draw_ms']:.2f} ms)"
    )
    return ok


def main(paths: list[str]) -> int:
    ok = True
    for name in paths:
        path = Path(name).resolve()
        # A built page is served with its site (its stylesheets and scripts).
        root = SITE.resolve() if path.is_relative_to(SITE.resolve()) else path.parent
        with serve(root) as base:
            ok &= report("live", path, base, root)
    print(
        f"budgets: page <= 1024 KiB, first result <= {FIRST_BUDGET_MS:g} ms, "
        f"worst redraw <= {FRAME_BUDGET_MS:.1f} ms"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
