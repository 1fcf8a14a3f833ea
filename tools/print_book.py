"""`make pdf`: the whole book as one PDF, printed offline by headless Chromium.

Input: the single-page HTML build (``make pdf`` runs Jupyter Book's
``singlehtml`` builder into ``_build/singlehtml`` with ``ATTNBOOK_STATIC=1``,
like ``make book``). This script serves it on 127.0.0.1, opens it in Debian's
Chromium with every other host blocked, waits for MathJax to typeset, and
replaces each explorer (``.attnbook-explorer``) by small multiples: for each of
its controls (range inputs and selects), a few representative stops, each
picture labelled with the control's name and value and, under that, the
state's description (the explorer's caption, ``.attnbook-caption``). Then ``page.pdf()`` prints
A4 pages with the heading outline and internal links.

Usage: python -m tools.print_book [OUTPUT.pdf]   (default _build/pdf/attention-interactively.pdf)
"""

from __future__ import annotations

import base64
import logging
import re
import sys
import time
from pathlib import Path

from .browser import Offline, chromium, controls, picture
from .site import ROOT, serve, toc_files

SINGLE = ROOT / "_build" / "singlehtml"
OUTPUT = ROOT / "_build" / "pdf" / "attention-interactively.pdf"
STOPS = 4  # pictures per control

PRINT_CSS = """
@page { size: A4; margin: 16mm 14mm; }
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer, .bd-footer-content,
.header-article, .prev-next-area, .bd-header-article, .skip-link, .toggle-hidden-toggle,
#pst-back-to-top, .search-button-field { display: none !important; }
.bd-main .bd-content .bd-article-container { max-width: 100% !important; }
section > h1 { break-before: page; }
figure, .cell_output img, .attnbook-print { break-inside: avoid; }
.attnbook-print { display: grid; grid-template-columns: 1fr 1fr; gap: 4mm 5mm; margin: 2mm 0 4mm; }
.attnbook-print figure { margin: 0; text-align: center; }
.attnbook-print img { width: 100%; height: auto; }
.attnbook-print figcaption { font-size: 9pt; font-family: sans-serif; }
.attnbook-print figcaption .attnbook-print-text { display: block; font-size: 8pt;
  text-align: left; margin-top: 1mm; }
details { display: block; }
"""

# Open every folded block (solutions, hidden code) so that print shows it.
OPEN_FOLDS_JS = """() => {
    document.querySelectorAll('details').forEach(d => { d.open = true; });
    document.querySelectorAll('.toggle-hidden').forEach(el => el.classList.remove('toggle-hidden'));
}"""

SET_JS = """([control, index]) => {
    if (control.tagName === 'SELECT') control.selectedIndex = index;
    else control.value = String(Number(control.min) + index * Number(control.step || 1));
    control.dispatchEvent(new Event('input', {bubbles: true}));
    control.dispatchEvent(new Event('change', {bubbles: true}));
}"""

STOPS_JS = """control => control.tagName === 'SELECT' ? control.options.length
    : Math.round((Number(control.max) - Number(control.min)) / Number(control.step || 1)) + 1"""

LABEL_JS = """control => {
    const label = control.closest('label') || (control.id &&
        document.querySelector('label[for="' + control.id + '"]'));
    let name = control.getAttribute('aria-label') || '';
    if (!name && label) name = [...label.childNodes]
        .filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join(' ').trim();
    const root = control.closest('.attnbook-explorer');
    const outputs = [...root.querySelectorAll('output')];
    const own = (label && label.querySelector('output')) ||
        outputs[[...root.querySelectorAll('input[type=range], select')].indexOf(control)];
    return {name: name.replace(/[:\\s]+$/, ''), value: own ? own.textContent.trim() : ''};
}"""

REPLACE_JS = """([root, rows]) => {
    const box = document.createElement('div');
    for (const row of rows) {
        const grid = document.createElement('div');
        grid.className = 'attnbook-print';
        for (const cell of row) {
            const fig = document.createElement('figure');
            const img = document.createElement('img');
            img.src = cell.src; img.alt = cell.alt;
            const cap = document.createElement('figcaption');
            const head = document.createElement('b');
            head.textContent = cell.caption;
            cap.append(head);
            if (cell.text) {
                const text = document.createElement('span');
                text.className = 'attnbook-print-text';
                text.textContent = cell.text;
                cap.append(text);
            }
            fig.append(img, cap);
            grid.append(fig);
        }
        box.append(grid);
    }
    root.replaceWith(box);
}"""


# The text of every heading that prints, in order: heading links dropped and
# maths written from its TeX source (\\sqrt as the root sign). Chromium's own
# outline titles drop the maths, run words together where a heading wraps, and
# repeat some headings' text ("NotationNotation") depending on where the page
# breaks fall, so the outline is renamed from these (see fix_outline).
HEADINGS_JS = """() => {
    const items = MathJax.startup.document.getMathItemsWithin(document.body);
    const tex = container => { const item = items.find(i => i.typesetRoot === container);
        return item ? item.math.replace(/\\\\sqrt\\s*/g, '\u221a').replace(/\\\\,/g, ' ')
                          .replace(/\\\\([A-Za-z]+)/g, '$1').replace(/[{}]/g, '') : ''; };
    const text = node => {
        if (node.nodeType === Node.TEXT_NODE) return node.textContent;
        if (node.nodeType !== Node.ELEMENT_NODE || node.classList.contains('headerlink')) return '';
        if (node.tagName.toLowerCase() === 'mjx-container') return tex(node);
        return [...node.childNodes].map(text).join('');
    };
    return [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
        .filter(h => h.getClientRects().length)
        .map(h => text(h).replace(/\\s+/g, ' ').trim());
}"""


def squash(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def fix_outline(path: Path, headings: list[str]) -> int:
    """Give the PDF's outline entries the headings' own text; return how many changed.

    Chromium writes one outline entry per printed heading, in document order;
    each entry keeps its destination and gets the heading's text. Refuses (and
    leaves the file alone) when the entries and the headings do not pair up.
    """
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    # Chromium's PDF declares a trailer size a little short; pypdf copes, and
    # would say so on stderr.
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    writer = PdfWriter(clone_from=PdfReader(str(path)))
    entries = []

    def walk(entry):
        while entry is not None:
            entry = entry.get_object()
            entries.append(entry)
            if "/First" in entry:
                walk(entry["/First"])
            entry = entry.get("/Next")

    walk(writer._root_object["/Outlines"].get_object().get("/First"))
    if len(entries) != len(headings):
        raise SystemExit(f"outline has {len(entries)} entries for {len(headings)} headings")
    changed = 0
    for entry, heading in zip(entries, headings):
        title = str(entry["/Title"])
        # Chromium's title drops maths and may repeat itself, so only its
        # first word is compared.
        if not squash(title.split()[0]).startswith(squash(heading.split()[0])):
            raise SystemExit(f"outline entry {title!r} does not match heading {heading!r}")
        if title != heading:
            entry[NameObject("/Title")] = TextStringObject(heading)
            changed += 1
    with path.open("wb") as out:
        writer.write(out)
    return changed


def pick(count: int, wanted: int = STOPS) -> list[int]:
    """``wanted`` indices spread evenly over ``count`` stops, both ends included."""
    if count <= wanted:
        return list(range(count))
    return sorted({round(i * (count - 1) / (wanted - 1)) for i in range(wanted)})


def small_multiples(page) -> int:
    """Replace each explorer by labelled pictures of a few stops; return how many."""
    explorers = page.locator(".attnbook-explorer")
    total = explorers.count()
    for _ in range(total):
        explorer = page.locator(".attnbook-explorer").first
        rows = []
        for control in controls(explorer):
            handle = control.element_handle()
            start = handle.evaluate(
                "c => c.tagName === 'SELECT' ? c.selectedIndex : "
                "Math.round((Number(c.value) - Number(c.min)) / Number(c.step || 1))"
            )
            row = []
            for index in pick(handle.evaluate(STOPS_JS)):
                page.evaluate(SET_JS, [handle, index])
                shown = picture(explorer)
                assert shown["count"] == 1, "an explorer must show exactly one picture"
                view = explorer.locator(".attnbook-view")
                target = view if view.count() else explorer.locator("img:not([hidden])").first
                png = target.screenshot(animations="disabled")
                label = handle.evaluate(LABEL_JS)
                alt = explorer.locator("img:not([hidden])").first.get_attribute("alt") or ""
                # The description that moves with the picture, as the page shows it.
                caption = explorer.locator(".attnbook-caption")
                text = caption.first.text_content().strip() if caption.count() else ""
                row.append(
                    {
                        "src": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
                        "alt": alt,
                        "caption": f"{label['name']} = {label['value']}",
                        "text": text,
                    }
                )
            page.evaluate(SET_JS, [handle, start])
            rows.append(row)
        page.evaluate(REPLACE_JS, [explorer.element_handle(), rows])
    return total


def print_book(output: Path = OUTPUT) -> dict:
    index = SINGLE / f"{toc_files()[0]}.html"  # the root document holds the whole book
    if not index.exists():
        raise SystemExit(f"no {index}: run `make pdf` (it builds the single-page HTML first)")
    output.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # The singlehtml builder writes links relative to the site's top folder
    # (_static/..., _images/...), so the page is read from there; it writes no
    # search index, so the page does not ask for one.
    page_file = SINGLE / "print.html"
    html = re.sub(r"<script[^>]*searchindex\.js[^>]*></script>", "", index.read_text("utf-8"))
    page_file.write_text(html, encoding="utf-8")
    with chromium() as browser, serve(SINGLE) as base:
        offline = Offline(browser, viewport={"width": 1100, "height": 1400}, color_scheme="light")
        page = offline.page
        page.goto(f"{base}/{page_file.name}", wait_until="load")
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("MathJax.startup.promise")
        page.evaluate(OPEN_FOLDS_JS)
        explorers = small_multiples(page)
        page.add_style_tag(content=PRINT_CSS)
        page.emulate_media(media="print")
        page.evaluate("MathJax.startup.promise")
        page.wait_for_function(
            "[...document.images].every(img => img.complete)", polling=200, timeout=60_000
        )
        page.pdf(
            path=str(output),
            format="A4",
            print_background=True,
            outline=True,
            tagged=True,
            prefer_css_page_size=True,
        )
        renamed = fix_outline(output, page.evaluate(HEADINGS_JS))
        blocked, errors = list(offline.blocked), list(offline.errors)
        offline.close()
    if blocked:
        raise SystemExit(f"the print page asked for other hosts: {blocked}")
    if errors:
        raise SystemExit(f"console errors while printing: {errors}")
    return {"explorers": explorers, "renamed": renamed, "seconds": time.perf_counter() - start}


def main() -> int:
    output = Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT
    result = print_book(output)
    from pypdf import PdfReader

    pages = len(PdfReader(str(output)).pages)
    print(
        f"{output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}: {pages} pages, "
        f"{output.stat().st_size / 1024 / 1024:.1f} MiB, {result['explorers']} explorers as "
        f"small multiples, {result['renamed']} outline titles written from the headings, "
        f"printed in {result['seconds']:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
