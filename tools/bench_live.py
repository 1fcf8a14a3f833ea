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
LIVE_PAGES = {
    "induction-heads": "induction live",
    "causal-language-model": "lm live",
    "cross-attention": "dates live",
    "vision-transformer": "digits live",
}
FIRST_BUDGET_MS = 100.0
FRAME_BUDGET_MS = 1000 / 60

# What the benchmark types: the longest input, a sequence of the chapter's task.
TYPED = default_text(40, 64)

TYPE_JS = """async ([rounds, values, hostSelector, fieldSelector]) => {
    const host = document.querySelector(hostSelector);
    const field = host.querySelector(fieldSelector);
    const out = host.querySelector('.attnbook-live-result');
    const times = [], compute = [], draw = [], cont = [];
    for (let r = 0; r < rounds; r++) {
        for (const value of values) {
            field.value = value;
            const start = performance.now();
            field.dispatchEvent(new Event('input'));
            host.getBoundingClientRect();
            for (const c of host.querySelectorAll('canvas, table')) c.getBoundingClientRect();
            times.push(performance.now() - start);
            compute.push(Number(out.dataset.computeMs));
            draw.push(Number(out.dataset.drawMs));
            await new Promise(requestAnimationFrame);
            if (out.dataset.continueMs) cont.push(Number(out.dataset.continueMs));
        }
    }
    return {times, compute, draw, cont, updates: Number(out.dataset.updates)};
}"""


DATES_TYPED = "Wednesday 23 September 1998, Wed 23 Sept"

# Chapter 10's explorer (lm): its field, what is typed, and its budget. The
# prompt is typed to the model's 128 characters one at a time (the page reuses
# the cache of the unchanged start: one position and the 40-character
# continuation a keystroke), then cut from the front one character at a time
# (every position changes: the whole prompt recomputed, the worst case).
LM_TEXT = (
    "The query and the keys and values. The lookup is a model of rows. "
    "Each query compares itself with every key, and the softmax tu"
)
LM_BUDGET_MS = 50.0
SETUPS = {
    "lm live": {
        "host": ".attnbook-live-lm",
        "field": "textarea",
        "values": [LM_TEXT[:i] for i in range(len(LM_TEXT) + 1)]
        + [LM_TEXT[i:] for i in range(1, len(LM_TEXT))],
        "budget_ms": LM_BUDGET_MS,
    },
    # Chapter 13's explorer (dates): its longest input, 40 characters, typed.
    "dates live": {
        "host": ".attnbook-live-dates",
        "field": "input[type=text]",
        "values": [DATES_TYPED[:i] for i in range(len(DATES_TYPED) + 1)],
        "budget_ms": FRAME_BUDGET_MS,
    },
}


def live_times(url: str, rounds: int = 3, setup: dict | None = None) -> dict:
    """Time to first result and keystroke redraws (ms) of the live explorer at ``url``
    (``setup``: one of :data:`SETUPS`; default chapter 11's explorer and :data:`TYPED`)."""
    setup = setup or {}
    host = setup.get("host", ".attnbook-live")
    field = setup.get("field", "input[type=text]")
    values = setup.get("values", [TYPED[:i] for i in range(len(TYPED) + 1)])
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
        page.wait_for_selector(f"{host} .attnbook-live-result[data-first-at]", state="attached")
        first = page.evaluate(
            """(host) => {
                const nav = performance.getEntriesByType('navigation')[0];
                const result = document.querySelector(host + ' .attnbook-live-result');
                return Number(result.dataset.firstAt) - nav.domInteractive;
            }""",
            host,
        )
        measured = page.evaluate(TYPE_JS, [rounds, values, host, field])
        browser.close()
    times = sorted(measured["times"])
    return {
        "first_ms": first,
        "median_ms": statistics.median(times),
        "worst_ms": times[-1],
        "keystrokes": len(times),
        "compute_ms": statistics.median(measured["compute"]),
        "draw_ms": statistics.median(measured["draw"]),
        "forward_worst_ms": max(measured["compute"]),
        # lm: the continuation, written in the task after each redraw
        "continue_ms": sorted(measured["cont"]) if measured["cont"] else None,
    }


def report(name: str, path: Path, base: str, root: Path) -> bool:
    setup = SETUPS.get(name)
    url = f"{base}/{path.relative_to(root).as_posix()}"
    result = MEASURES[name](url) if name in MEASURES else live_times(url, setup=setup)
    weight = page_weight(path)
    budget = setup["budget_ms"] if setup else FRAME_BUDGET_MS
    ok = (
        weight <= 1024 * 1024
        and result["first_ms"] <= FIRST_BUDGET_MS
        and result["worst_ms"] <= budget
    )
    print(
        f"{path.stem:<20} {name:<15} {weight / 1024:>6.0f} KiB   first result "
        f"{result['first_ms']:6.1f} ms   redraw median {result['median_ms']:5.2f} ms, "
        f"worst {result['worst_ms']:5.2f} ms over {result['keystrokes']} keystrokes "
        f"(median forward {result['compute_ms']:.2f} ms, drawing {result['draw_ms']:.2f} ms)"
    )
    if result.get("continue_ms"):
        cont = result["continue_ms"]
        print(
            f"{'':<36} forward worst {result['forward_worst_ms']:.2f} ms; continuation "
            f"after the redraw: median {statistics.median(cont):.2f} ms, worst {cont[-1]:.2f} ms"
        )
    return ok


# ---- chapter 15's explorer (digits): a stroke instead of a keystroke ----

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
        text = path.read_text(encoding="utf-8")
        which = next((name for name in SETUPS if SETUPS[name]["host"][1:] in text), "live")
        with serve(root) as base:
            if '"model":"tiny-vit"' in text:
                which = "digits live"
            ok &= report(which, path, base, root)
    print(
        f"budgets: page <= 1024 KiB, first result <= {FIRST_BUDGET_MS:g} ms, "
        f"worst redraw <= {FRAME_BUDGET_MS:.1f} ms (the lm explorer's: {LM_BUDGET_MS:g} ms)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
