"""The live explorers in headless Chromium: time to first result and redraw per keystroke or stroke.

Part of `make bench` (tools/bench.py calls :func:`report` for each explorer of
:data:`EXPLORERS`); ``python -m tools.bench_live FILE.html`` measures one page
(a built chapter, or a page holding only the fragment).

* first result: from the page becoming interactive (``domInteractive`` of the
  navigation timing) to the explorer's first drawn result (its
  ``data-first-at``). Budget: 100 ms.
* redraw: the explorer driven as its entry in :data:`EXPLORERS` says (text
  typed one character at a time, or a pen stroke over the digit grid), three
  rounds: for each input event, the time from the event to the redrawn picture
  laid out (the forward pass, the canvases, the table, forced layout; the
  paint that follows is not included). Budget: one animation frame, 16.7 ms,
  at the worst event (the lm explorer's: 50 ms).

Where the page's result element says how its parts took (``data-compute-ms``,
``data-draw-ms``; the lm's ``data-continue-ms``, written in the task after the
redraw; the digits' ``data-occlusion-ms``, if the page sets it), the report
gives their medians and worst too.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from attnbook.widgets.live.induction import default_text

from .browser import launch
from .site import SITE, page_weight, serve

FIRST_BUDGET_MS = 100.0
FRAME_BUDGET_MS = 1000 / 60

# Typing: each of ``values`` set into the field in turn, one input event each.
# After each redraw, the parts' own times from the result's data attributes.
TYPE_JS = """async ({rounds, host: hostSelector, field: fieldSelector, values}) => {
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


# A stroke over the whole grid, row by row in a snake, with the pen and then
# the eraser (128 cells, each one redraw: the forward pass, four canvases and
# the bars), `rounds` times. Each time runs from the pointer event to the
# redrawn picture laid out, as TYPE_JS's. The occlusion map (up to 16 more
# forward passes) follows once that frame is painted: the stroke waits for it,
# and the page's own time from the pointer event to the map drawn
# (data-occlusion-ms) is reported beside.
STROKE_JS = """async ({rounds, host: hostSelector}) => {
    const host = document.querySelector(hostSelector);
    const canvas = host.querySelector('canvas');
    const pen = host.querySelectorAll('select')[1];
    const out = host.querySelector('.attnbook-live-result');
    canvas.scrollIntoView({block: 'nearest'});
    host.querySelector('button').click();
    const times = [], compute = [], draw = [], occlusion = [];
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
                // the occlusion map, drawn after that frame (pages that draw it with the rest set no data-occluded)
                while (out.dataset.occluded !== undefined && out.dataset.occluded !== out.dataset.updates) {
                    await new Promise((resolve) => setTimeout(resolve, 0));
                }
                if (out.dataset.occlusionMs) occlusion.push(Number(out.dataset.occlusionMs));
            }
            canvas.dispatchEvent(new PointerEvent('pointerup', point));
        }
    }
    return {times, compute, draw, occlusion};
}"""


def prefixes(text: str) -> tuple[str, ...]:
    """``text`` typed one character at a time, from the empty field."""
    return tuple(text[:i] for i in range(len(text) + 1))


@dataclass(frozen=True)
class Live:
    """One live explorer: where it is, how it is driven, its budget."""

    page: str  # its chapter's built page, book/<page>.html
    host: str  # the explorer's root element
    driver: str  # TYPE_JS or STROKE_JS, run in the page
    events: str = "keystrokes"  # what one timed event is, for the report
    budget_ms: float = FRAME_BUDGET_MS  # the worst redraw allowed
    field: str = "input[type=text]"  # TYPE_JS: where it types
    values: tuple[str, ...] = ()  # TYPE_JS: what the field holds after each keystroke


# Chapter 10's prompt is typed to the model's 128 characters one at a time (the
# page reuses the cache of the unchanged start: one position and the
# 40-character continuation a keystroke), then cut from the front one character
# at a time (every position changes: the whole prompt recomputed, the worst case).
LM_TEXT = (
    "The query and the keys and values. The lookup is a model of rows. "
    "Each query compares itself with every key, and the softmax tu"
)

# The live explorers, in `make bench`'s order.
EXPLORERS = {
    # Chapter 11: the longest input, a 40-token sequence of the chapter's task.
    "induction live": Live(
        "induction-heads", ".attnbook-live", TYPE_JS, values=prefixes(default_text(40, 64))
    ),
    "lm live": Live(
        "causal-language-model",
        ".attnbook-live-lm",
        TYPE_JS,
        budget_ms=50.0,
        field="textarea",
        values=prefixes(LM_TEXT) + tuple(LM_TEXT[i:] for i in range(1, len(LM_TEXT))),
    ),
    # Chapter 13: the longest input, 40 characters.
    "dates live": Live(
        "cross-attention",
        ".attnbook-live-dates",
        TYPE_JS,
        values=prefixes("Wednesday 23 September 1998, Wed 23 Sept"),
    ),
    # Chapter 15: a pen stroke instead of a keystroke.
    "digits live": Live(
        "vision-transformer", ".attnbook-live-digits", STROKE_JS, events="stroke cells"
    ),
}


def _spread(samples: list[float]) -> dict | None:
    return {"median": statistics.median(samples), "worst": max(samples)} if samples else None


def live_times(url: str, explorer: Live, rounds: int = 3) -> dict:
    """Time to first result and redraws (ms) of ``explorer`` on the page at ``url``."""
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
        result = f"{explorer.host} .attnbook-live-result"
        page.wait_for_selector(f"{result}[data-first-at]", state="attached")
        first = page.evaluate(
            """(selector) => {
                const nav = performance.getEntriesByType('navigation')[0];
                return Number(document.querySelector(selector).dataset.firstAt) - nav.domInteractive;
            }""",
            result,
        )
        measured = page.evaluate(
            explorer.driver,
            {
                "rounds": rounds,
                "host": explorer.host,
                "field": explorer.field,
                "values": list(explorer.values),
            },
        )
        browser.close()
    times = sorted(measured["times"])
    return {
        "first_ms": first,
        "median_ms": statistics.median(times),
        "worst_ms": times[-1],
        "events": len(times),
        "compute_ms": statistics.median(measured["compute"]),
        "draw_ms": statistics.median(measured["draw"]),
        "forward_worst_ms": max(measured["compute"]),
        # lm: the continuation, written in the task after each redraw
        "continue_ms": _spread(measured.get("cont", [])),
        # digits: the occlusion map, where the page says how long it took
        "occlusion_ms": _spread(measured.get("occlusion", [])),
    }


def report(name: str, path: Path, base: str, root: Path) -> bool:
    """Measure explorer ``name`` on ``path`` (served from ``root`` at ``base``), print
    one line, and say whether it met its budgets."""
    explorer = EXPLORERS[name]
    result = live_times(f"{base}/{path.relative_to(root).as_posix()}", explorer)
    weight = page_weight(path)
    ok = (
        weight <= 1024 * 1024
        and result["first_ms"] <= FIRST_BUDGET_MS
        and result["worst_ms"] <= explorer.budget_ms
    )
    print(
        f"{path.stem:<20} {name:<15} {weight / 1024:>6.0f} KiB   first result "
        f"{result['first_ms']:6.1f} ms   redraw median {result['median_ms']:5.2f} ms, "
        f"worst {result['worst_ms']:5.2f} ms over {result['events']} {explorer.events} "
        f"(median forward {result['compute_ms']:.2f} ms, drawing {result['draw_ms']:.2f} ms)"
    )
    for key, what in (
        ("continue_ms", "continuation after the redraw"),
        ("occlusion_ms", "occlusion map"),
    ):
        if result[key]:
            print(
                f"{'':<36} forward worst {result['forward_worst_ms']:.2f} ms; {what}: "
                f"median {result[key]['median']:.2f} ms, worst {result[key]['worst']:.2f} ms"
            )
    return ok


def which(path: Path, text: str) -> str:
    """The explorer on a page: a built chapter's, else the most specific host it names."""
    for name, explorer in EXPLORERS.items():
        if path.stem == explorer.page:
            return name
    named = [name for name, explorer in EXPLORERS.items() if explorer.host[1:] in text]
    return max(named, key=lambda name: len(EXPLORERS[name].host))


def main(paths: list[str]) -> int:
    ok = True
    for name in paths:
        path = Path(name).resolve()
        # A built page is served with its site (its stylesheets and scripts).
        root = SITE.resolve() if path.is_relative_to(SITE.resolve()) else path.parent
        explorer = which(path, path.read_text(encoding="utf-8"))
        with serve(root) as base:
            ok &= report(explorer, path, base, root)
    others = ", ".join(
        f"{name}'s: {e.budget_ms:g} ms"
        for name, e in EXPLORERS.items()
        if e.budget_ms != FRAME_BUDGET_MS
    )
    print(
        f"budgets: page <= 1024 KiB, first result <= {FIRST_BUDGET_MS:g} ms, "
        f"worst redraw <= {FRAME_BUDGET_MS:.1f} ms ({others})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
