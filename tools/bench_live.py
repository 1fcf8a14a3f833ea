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
LIVE_PAGES = {"induction-heads": "induction live"}
FIRST_BUDGET_MS = 100.0
FRAME_BUDGET_MS = 1000 / 60

# What the benchmark types: the longest input, a sequence of the chapter's task.
TYPED = default_text(40, 64)

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


def live_times(url: str, rounds: int = 3) -> dict:
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
        measured = page.evaluate(TYPE_JS, [rounds, TYPED])
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
    result = MEASURES.get(name, live_times)(f"{base}/{path.relative_to(root).as_posix()}")
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


# ---- chapter 15's explorer (digits): a stroke instead of a keystroke ----

LIVE_PAGES["vision-transformer"] = "digits live"

# A stroke over the whole grid, row by row in a snake, with the pen and then
# the eraser (128 cells, each one redraw: the forward pass, the 16 occlusion
# passes, five canvases and the bars), `rounds` times. Each time runs from
# the pointer event to the redrawn picture laid out, as TYPE_JS's.
STROKE_JS = """async ([rounds]) => {
    const host = document.querySelector('.attnbook-live-digits');
    const canvas = host.querySelector('canvas');
    const pen = host.querySelectorAll('select')[1];
    const out = host.querySelector('.attnbook-live-result');
    host.querySelector('button').click();
    const times = [], compute = [], draw = [];
    for (let r = 0; r < rounds; r++) {
        for (const value of ['1', '0']) {
            pen.value = value;
            let point = null;
            for (let k = 0; k < 64; k++) {
                const i = k >> 3, j = i % 2 ? 7 - (k & 7) : k & 7;
                const rect = canvas.getBoundingClientRect();
                point = {clientX: rect.left + (j + 0.5) * rect.width / 8,
                         clientY: rect.top + (i + 0.5) * rect.height / 8,
                         pointerId: 7, bubbles: true};
                const before = Number(out.dataset.updates);
                const start = performance.now();
                canvas.dispatchEvent(new PointerEvent(k ? 'pointermove' : 'pointerdown', point));
                host.getBoundingClientRect();
                for (const c of host.querySelectorAll('canvas')) c.getBoundingClientRect();
                const ms = performance.now() - start;
                if (Number(out.dataset.updates) !== before + 1) throw new Error('a stroke did not redraw');
                times.push(ms);
                compute.push(Number(out.dataset.computeMs));
                draw.push(Number(out.dataset.drawMs));
                await new Promise(requestAnimationFrame);
            }
            canvas.dispatchEvent(new PointerEvent('pointerup', point));
        }
    }
    return {times, compute, draw};
}"""


def digits_times(url: str, rounds: int = 3) -> dict:
    """Time to first result and stroke redraws (ms) of chapter 15's digit explorer at ``url``."""
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
        selector = ".attnbook-live-digits .attnbook-live-result[data-first-at]"
        page.wait_for_selector(selector, state="attached")
        first = page.evaluate(
            """(selector) => {
                const nav = performance.getEntriesByType('navigation')[0];
                return Number(document.querySelector(selector).dataset.firstAt) - nav.domInteractive;
            }""",
            selector,
        )
        page.locator(".attnbook-live-digits canvas").first.scroll_into_view_if_needed()
        measured = page.evaluate(STROKE_JS, [rounds])
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


# How each explorer is measured (live_times, typing, unless named here).
MEASURES = {"digits live": digits_times}


def main(paths: list[str]) -> int:
    ok = True
    for name in paths:
        path = Path(name).resolve()
        # A built page is served with its site (its stylesheets and scripts).
        root = SITE.resolve() if path.is_relative_to(SITE.resolve()) else path.parent
        with serve(root) as base:
            digits = '"model":"tiny-vit"' in path.read_text(encoding="utf-8")
            ok &= report("digits live" if digits else "live", path, base, root)
    print(
        f"budgets: page <= 1024 KiB, first result <= {FIRST_BUDGET_MS:g} ms, "
        f"worst redraw <= {FRAME_BUDGET_MS:.1f} ms"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
