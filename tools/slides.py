"""A reveal.js deck and a PDF for each authored slide notebook (``make slides``).

    python -m tools.slides                      # every slides/*.ipynb
    python -m tools.slides masked-softmax ...   # some decks only
    python -m tools.slides --no-pdf ...         # the HTML decks only
    python -m tools.slides --executed DIR ...   # reuse nbval's executed copies

Each ``slides/NAME.ipynb`` is a short notebook written for the slide (not
copied from the chapter). Its cells carry Jupyter's standard slideshow
metadata, ``metadata.slideshow.slide_type``:

* ``slide``: starts a new slide (the first shown cell must be one);
* ``-``, ``fragment`` or ``subslide``: continues the current slide (one flat
  row of slides: no vertical stacks, no step-by-step reveals);
* ``notes``: speaker notes of the current slide (reveal.js's ``S`` key);
* ``skip``: not shown (it still runs). Cells tagged ``remove-cell`` (the Colab
  install cell) are skipped too.

The notebook is executed afresh with ``ATTNBOOK_STATIC=1``, so every explorer
emits its self-contained HTML fragment, exactly as on the website; a deck needs
no kernel and no network. ``--executed DIR`` (what `make check` passes) takes
instead the copy that `make test`'s strict nbval executed the same way and
wrote into DIR (tests/nbval_executed.py), for each deck whose cells are the
slide notebook's own; any other deck is executed afresh. Code is never shown, only what it displays: HTML,
then SVG, then PNG, then plain text, and printed text.

Written into ``_build/html/slides/`` (the website publishes that folder):
``NAME.html`` and ``NAME.pdf`` per deck (the PDF's links lead to the published
website, :func:`published_decks`, not to the local server it is printed from),
and once for all decks ``_static/``: reveal.js (from ``slides/node_modules``,
installed by ``npm ci`` from ``slides/package-lock.json``) and MathJax 3 (from the Python lock's
``sphinx-mathjax-offline``). A deck's size is its HTML alone: everything it
loads besides is in ``_static/``, shared by every deck and loaded once.
``_build/html/slides/build.json`` records each deck's size and build time.

A deck is named after its chapter (``slides/NAME.ipynb`` for ``book/NAME``). When
the chapter has a concept question marked ``deck = true``
(``attnbook/questions/NAME.toml``, :mod:`attnbook.quiz`), the deck gets two
Peer Instruction slides before its last one (:func:`concept_slides`): the
question with its options lettered A, B, C... for a vote, then the revote
slide, whose answer (the key, why it is right, and each wrong option's
misconception) is one reveal.js fragment; the speaker notes hold every
option's full feedback. A chapter with no question file yet gets none.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "slides"
OUT = ROOT / "_build" / "html" / "slides"
REVEAL = SOURCES / "node_modules" / "reveal.js"
MAX_DECK_BYTES = 2**20
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
CONTINUES = ("-", "fragment", "subslide")
SLIDE_TYPES = ("slide", "skip", "notes", *CONTINUES)
SKIP_TAGS = {"remove-cell"}


# MathJax's licence (the package does not ship it): the website serves it from the
# same folder, book/_ext/static/mathjax (offline_site's static files).
MATHJAX_LICENSE = ROOT / "book" / "_ext" / "static" / "mathjax"


def mathjax_dir() -> Path:
    """MathJax 3 as the lock ships it (the package sphinx-mathjax-offline)."""
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("sphinx-mathjax-offline is not installed: run `make install`")
    return Path(spec.origin).parent / "static" / "mathjax"


def deck_names() -> list[str]:
    return sorted(path.stem for path in SOURCES.glob("*.ipynb"))


def slide_type(cell, where: str) -> str:
    """The cell's slide type; a missing one continues the slide."""
    kind = cell.metadata.get("slideshow", {}).get("slide_type", "-")
    if kind not in SLIDE_TYPES:
        raise ValueError(f"{where}: slide_type must be one of {SLIDE_TYPES}, got {kind!r}")
    return kind


def group_slides(nb, name: str = "deck") -> list[dict]:
    """The notebook's cells as slides: ``[{"cells": [...], "notes": [...]}, ...]``."""
    slides: list[dict] = []
    for index, cell in enumerate(nb.cells):
        where = f"{name}, cell {index} ({cell.get('id', '?')})"
        kind = slide_type(cell, where)
        if kind == "skip" or SKIP_TAGS & set(cell.metadata.get("tags", [])):
            continue
        if kind == "slide":
            slides.append({"cells": [], "notes": []})
        elif not slides:
            raise ValueError(f"{where}: the first shown cell must start a slide, got {kind!r}")
        slides[-1]["notes" if kind == "notes" else "cells"].append(cell)
    if not slides:
        raise ValueError(f"{name}: no cell starts a slide (slideshow.slide_type 'slide')")
    return slides


def _math(content: str, options: dict) -> str:
    left, right = (r"\[", r"\]") if options.get("display_mode") else (r"\(", r"\)")
    return left + html.escape(content) + right


def markdown(text: str) -> str:
    """CommonMark with tables and $...$ / $$...$$ mathematics (typeset by MathJax)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.use(dollarmath_plugin, renderer=_math, allow_digits=False)
    return md.render(text)


def render_output(output: dict, where: str, alt: str = "") -> str:
    kind = output.get("output_type")
    if kind == "stream":
        if output.get("name") == "stderr":
            raise ValueError(f"{where}: wrote to stderr: {output.get('text', '')[:200]!r}")
        return f'<pre class="attnbook-text">{html.escape(output["text"])}</pre>'
    if kind == "error":
        raise ValueError(f"{where}: raised {output.get('ename')}: {output.get('evalue')}")
    data = output.get("data", {})
    if "text/html" in data:
        return f'<div class="attnbook-output">{data["text/html"]}</div>'
    if "image/svg+xml" in data:
        return f'<div class="attnbook-output">{data["image/svg+xml"]}</div>'
    if "image/png" in data:
        png = data["image/png"].replace("\n", "")
        alt = html.escape(alt, quote=True)
        return f'<img class="attnbook-figure" alt="{alt}" src="data:image/png;base64,{png}">'
    if "text/plain" in data:
        return f'<pre class="attnbook-text">{html.escape(data["text/plain"])}</pre>'
    return ""


def render_cell(cell, where: str) -> str:
    if cell.cell_type == "markdown":
        return markdown(cell.source)
    if cell.cell_type == "code":
        # A figure's alt text is written where the chapters write it (MyST-NB's).
        alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
        return "\n".join(render_output(o, where, alt) for o in cell.get("outputs", []))
    return ""


# The book's two licences, as LICENSE gives them and every page of the website links them
# in its footer (_config.yml's html.extra_footer; tests/test_slides.py checks they agree).
CC_BY = "https://creativecommons.org/licenses/by/4.0/"
MIT = "https://opensource.org/license/mit"


def credit_html(config: dict | None = None) -> str:
    """The title slide's credit and licence line, so that a deck shared on its own says
    whose it is, where the book is and how it may be reused: the instructor guide's
    credit line, for the book itself. The addresses are written out, for paper."""
    from tools.book_index import site_url
    from tools.site import config as read_config

    config = read_config() if config is None else config
    book = site_url(config)
    title, author = html.escape(config["title"]), html.escape(config["author"])
    return (
        f'<p class="attnbook-deck-credit">&ldquo;{title}&rdquo; by {author}, '
        f'<a href="{book}">{book}</a>, licensed under CC BY 4.0 '
        f'(<a rel="license" href="{CC_BY}">{CC_BY}</a>: the text, figures and these slides) '
        f'and MIT (<a rel="license" href="{MIT}">{MIT}</a>: the code).</p>'
    )


STYLE = """
.reveal { --r-main-font-size: 28px; --r-heading1-size: 2.1em; --r-heading2-size: 1.45em;
  --r-heading3-size: 1.1em; }
.reveal .slides section { text-align: left; }
.reveal .slides section h1, .reveal .slides section h2 { text-transform: none; }
.reveal .slides section.title-slide { text-align: center; padding-top: 170px; }
.reveal ul, .reveal ol { display: block; margin-left: 1.2em; }
.reveal li { margin: 0.25em 0; }
.reveal p { margin: 0.45em 0; line-height: 1.3; }
.reveal pre.attnbook-text { box-shadow: none; font-size: 0.62em; width: 100%;
  white-space: pre; margin: 0.3em 0; }
.reveal img.attnbook-figure { max-height: 430px; max-width: 100%; margin: 0.2em 0; }
.reveal .attnbook-output { font-size: 0.55em; }
.reveal .attnbook-output img { margin: 0; }
.reveal .attnbook-checkpoint { border-left: 6px solid #2a76dd; padding-left: 0.6em; }
.reveal .attnbook-deck-source { font-size: 0.6em; color: #555; }
.reveal .attnbook-deck-credit { font-size: 0.5em; color: #555; margin-top: 3em; }
.reveal table { font-size: 0.8em; }
.reveal .attnbook-concept-prompt p { font-size: 0.9em; }
.reveal ol.attnbook-concept-options { list-style: none; margin-left: 0; font-size: 0.85em; }
.reveal .attnbook-concept-answer-slide ol.attnbook-concept-options { font-size: 0.72em; }
.reveal .attnbook-concept-options li { margin: 0.35em 0; }
.reveal .attnbook-concept-letter { font-weight: bold; color: #2a76dd; margin-right: 0.25em; }
.reveal .attnbook-concept-vote { border-left: 6px solid #2a76dd; padding-left: 0.6em;
  font-size: 0.8em; }
.reveal .attnbook-concept-why { display: block; margin-left: 1.6em; color: #555; }
.reveal .attnbook-concept-why.attnbook-concept-right { color: #1a6b32; }
.reveal .attnbook-concept-key { font-size: 0.85em; }
.reveal .attnbook-concept-answer-slide .attnbook-concept-prompt p { font-size: 0.72em; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} (slides)</title>
<link rel="stylesheet" href="_static/reveal/reveal.css">
<link rel="stylesheet" href="_static/reveal/theme/white.css">
<style>{style}</style>
<script>
window.MathJax = {{
  tex: {{inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]]}},
  options: {{enableMenu: false}},
  startup: {{typeset: true}}
}};
</script>
<script defer src="_static/mathjax/tex-chtml.js"></script>
</head>
<body>
<div class="reveal"><div class="slides">
{sections}
</div></div>
<script src="_static/reveal/reveal.js"></script>
<script>
Reveal.initialize({{
  width: {width}, height: {height}, margin: 0.04, center: false, hash: true,
  slideNumber: "c/t", transition: "none", controls: true, progress: true,
  pdfMaxPagesPerSlide: 1, pdfSeparateFragments: false,
  // A key pressed inside an explorer is the explorer's (the drawing grid's arrows and
  // Space, a button's Space): reveal.js leaves alone only text fields otherwise.
  keyboardCondition: (event) => !event.target.closest(".attnbook-live-host, .attnbook-explorer")
}});
// The ?print-pdf view lays its pages out after Reveal is ready; tools/slides.py waits for this.
Reveal.on("pdf-ready", () => {{ document.documentElement.dataset.pdfReady = "1"; }});
// Lay the slides out again once the mathematics is typeset (its size changes).
window.addEventListener("load", () => {{
  if (window.MathJax && MathJax.startup) MathJax.startup.promise.then(() => Reveal.layout());
}});
</script>
</body>
</html>
"""


# ----------------------------------------------------------------- concept test (issue 54)

VOTE = "Vote, then discuss with your neighbour, then vote again."
# Crouch & Mazur (2001): the revote after discussion; what to do with the first vote's result.
PEER_INSTRUCTION_NOTES = (
    "<p>Peer Instruction (Crouch &amp; Mazur, 2001): read the question aloud; one to two "
    "minutes of silent thought, then everyone votes (hands, cards or a poll) without "
    "discussing. If about 30&ndash;70&nbsp;% are right, ask them to convince their neighbour "
    "(two to four minutes), then vote again on the next slide. Under about 30&nbsp;%, "
    "revisit the idea before discussing; over about 70&nbsp;%, explain briefly and move on.</p>"
)
_RIGHT_WORD = re.compile(r"^(?:Right|Correct|Yes)[.!]\s+")


def deck_question(name: str):
    """The concept question of chapter ``name`` marked ``deck = true``
    (:mod:`attnbook.quiz`), or None when the chapter has no question file yet or
    marks none. A question file that breaks the format is an error here too."""
    from attnbook import quiz

    if name not in quiz.chapters():
        return None
    return next((q for q in quiz.load(name) if q.deck), None)


def _letter(i: int) -> str:
    from attnbook.quiz import LETTERS

    return f'<span class="attnbook-concept-letter">{LETTERS[i]}.</span>'


def concept_slides(question) -> list[str]:
    """The two Peer Instruction slides of ``question`` (an :class:`attnbook.quiz.Question`),
    as ``<section>`` elements: the question for the vote, then the revote with the answer
    as one fragment (the key, why it is right, one line per wrong option naming its
    misconception). Maths as the quiz writes it, typeset by the deck's MathJax."""
    from attnbook.quiz import LETTERS, first_sentence, key_text, markdown
    from attnbook.quiz import one_line as quiz_line
    from attnbook.quiz._html import inline

    q = question

    def one_line(text: str) -> str:
        return inline(quiz_line(text))

    prompt = f'<div class="attnbook-concept-prompt">{markdown(q.prompt)}</div>'
    key = f"Answer: {one_line(key_text(q))}"
    ask_notes = PEER_INSTRUCTION_NOTES + f"<p>Key: {one_line(key_text(q))}.</p>"
    if q.kind == "predict":
        ask_notes += f"<p>In the chapter, the reader then looks: {markdown(q.look)}</p>"
    if q.kind == "numeric":
        vote = "Write down your number, then discuss with your neighbour, then write again."
        unit = f" {one_line(q.unit)}" if q.unit else ""
        options = f'<p class="attnbook-concept-key">Your answer: ____{unit}</p>'
        wrong = "".join(
            f'<li><span class="attnbook-concept-letter">{w.value:g}:</span> '
            f"{one_line(first_sentence(w.feedback))}</li>"
            for w in q.wrong
        )
        answer = (
            f'<div class="fragment attnbook-concept-answer" data-fragment-index="0">'
            f'<p class="attnbook-concept-key"><strong>{key}</strong></p>'
            f'<p class="attnbook-concept-why attnbook-concept-right">'
            f"{one_line(q.feedback)}</p>"
            f'<ol class="attnbook-concept-options">{wrong}</ol></div>'
        )
        answer_notes = (
            f"<p><strong>{key}</strong></p>{markdown(q.feedback)}"
            + "".join(
                f"<p><strong>{w.value:g}</strong>:</p>{markdown(w.feedback)}" for w in q.wrong
            )
            + f"<p><strong>Any other number</strong>:</p>{markdown(q.otherwise)}"
        )
        revote = prompt
    else:
        vote = VOTE
        items = [f"<li>{_letter(i)} {one_line(o.text)}</li>" for i, o in enumerate(q.options)]
        options = f'<ol class="attnbook-concept-options">{"".join(items)}</ol>'
        answered = []
        for i, o in enumerate(q.options):
            if o.correct:
                why = _RIGHT_WORD.sub("", " ".join(o.feedback.split()))
                line = (
                    '<span class="fragment attnbook-concept-why attnbook-concept-right" '
                    f'data-fragment-index="0"><strong>Right</strong>: {inline(why)}</span>'
                )
            else:
                line = (
                    '<span class="fragment attnbook-concept-why" data-fragment-index="0">'
                    f"<strong>Misconception</strong>: {one_line(first_sentence(o.feedback))}</span>"
                )
            answered.append(
                f'<li data-correct="{int(o.correct)}">{_letter(i)} {one_line(o.text)} {line}</li>'
            )
        answer = (
            f'<p class="fragment attnbook-concept-key" data-fragment-index="0"><strong>{key}</strong></p>'
            f'<ol class="attnbook-concept-options">{"".join(answered)}</ol>'
        )
        answer_notes = "".join(
            f"<p><strong>{LETTERS[i]} ({'right' if o.correct else 'wrong'})</strong>:</p>"
            f"{markdown(o.feedback)}"
            for i, o in enumerate(q.options)
        )
        revote = ""
    ask = (
        f'<section class="attnbook-concept" data-concept="question" data-key="{html.escape(q.key)}">\n'
        f"<h2>Concept test</h2>\n{prompt}\n{options}\n"
        f'<p class="attnbook-concept-vote">{vote}</p>\n'
        f'<aside class="notes">{ask_notes}</aside>\n</section>'
    )
    reveal = (
        f'<section class="attnbook-concept attnbook-concept-answer-slide" data-concept="answer" '
        f'data-key="{html.escape(q.key)}">\n'
        f"<h2>Concept test: vote again, then the answer</h2>\n{revote}\n{answer}\n"
        f'<aside class="notes">{answer_notes}</aside>\n</section>'
    )
    return [ask, reveal]


def deck_html(nb, name: str) -> str:
    """The reveal.js page of an executed slide notebook."""
    slides = group_slides(nb, name)
    sections = []
    for number, slide in enumerate(slides, start=1):
        where = f"{name}, slide {number}"
        body = "\n".join(render_cell(cell, where) for cell in slide["cells"])
        if number == 1:
            body += "\n" + credit_html()
        notes = "\n".join(render_cell(cell, where) for cell in slide["notes"])
        aside = f'<aside class="notes">{notes}</aside>' if notes else ""
        css = ' class="title-slide"' if number == 1 else ""
        sections.append(f"<section{css}>\n{body}\n{aside}\n</section>")
    question = deck_question(name)
    if question is not None:  # the concept test, before the last slide
        sections[-1:-1] = concept_slides(question)
    title = nb.metadata.get("title") or name
    return PAGE.format(
        title=html.escape(title),
        style=STYLE,
        sections="\n".join(sections),
        width=SLIDE_WIDTH,
        height=SLIDE_HEIGHT,
    )


def execute(path: Path) -> nbformat.NotebookNode:
    """Run a slide notebook with the explorers in their website form."""
    from tools import nbrun

    nb = nbformat.read(path, as_version=4)
    nbrun.execute(nb, timeout=300, static=True)
    return nb


def copy_assets(out: Path = OUT) -> None:
    """reveal.js and MathJax into ``out/_static`` (once for every deck)."""
    if not (REVEAL / "dist" / "reveal.js").is_file():
        raise FileNotFoundError(f"{REVEAL} is missing: run `npm ci` in slides/ (make slides does)")
    static = out / "_static"
    reveal = static / "reveal"
    shutil.rmtree(static, ignore_errors=True)
    (reveal / "theme" / "fonts").mkdir(parents=True)
    for name in ("reveal.js", "reveal.css"):
        shutil.copyfile(REVEAL / "dist" / name, reveal / name)
    shutil.copyfile(REVEAL / "LICENSE", reveal / "LICENSE")
    shutil.copyfile(REVEAL / "dist" / "theme" / "white.css", reveal / "theme" / "white.css")
    fonts = REVEAL / "dist" / "theme" / "fonts" / "source-sans-pro"
    shutil.copytree(
        fonts,
        reveal / "theme" / "fonts" / fonts.name,
        ignore=shutil.ignore_patterns("*.eot"),
    )
    mathjax = mathjax_dir()
    (static / "mathjax").mkdir()
    shutil.copyfile(mathjax / "tex-chtml.js", static / "mathjax" / "tex-chtml.js")
    for name in ("LICENSE", "NOTICE"):  # Apache 2.0, kept beside the website's copy too
        shutil.copyfile(MATHJAX_LICENSE / name, static / "mathjax" / name)
    shutil.copytree(
        mathjax / "output" / "chtml" / "fonts" / "woff-v2",
        static / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2",
    )


def executed_copy(path: Path, executed: Path | None) -> nbformat.NotebookNode | None:
    """``executed/NAME.ipynb``, the copy of the slide notebook ``path`` that
    strict nbval ran with the website's explorers (`make test`), if its cells
    are the notebook's own; else None."""
    if executed is None or not (executed / path.name).is_file():
        return None
    copy = nbformat.read(executed / path.name, as_version=4)
    source = nbformat.read(path, as_version=4)

    def cells(nb):
        return [(cell.cell_type, cell.source, cell.metadata) for cell in nb.cells]

    return copy if cells(copy) == cells(source) else None


def build_deck(name: str, out: Path = OUT, executed: Path | None = None) -> dict:
    """Write ``out/NAME.html`` from ``slides/NAME.ipynb``, executed afresh or
    taken from ``executed`` (see executed_copy); its size and time."""
    start = time.perf_counter()
    path = SOURCES / f"{name}.ipynb"
    nb = executed_copy(path, executed)
    reused = nb is not None
    if nb is None:
        nb = execute(path)
    page = deck_html(nb, name)
    target = out / f"{name}.html"
    target.write_text(page, encoding="utf-8")
    size = target.stat().st_size
    if size > MAX_DECK_BYTES:
        raise ValueError(f"{target}: {size} bytes, over the budget of {MAX_DECK_BYTES} (1 MiB)")
    return {
        "html_bytes": size,
        "slides": page.count("<section"),
        "html_seconds": round(time.perf_counter() - start, 1),
        "executed_by": "nbval (make test)" if reused else "tools.slides",
    }


# Hosts of the local server the decks are printed from: no link in a PDF may lead there.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def published_decks() -> str:
    """Where the website publishes the decks, ``https://OWNER.github.io/REPO/slides/``
    (:func:`tools.book_index.site_url` of ``_config.yml``'s repository)."""
    from tools.book_index import site_url
    from tools.site import config

    return site_url(config()) + "slides/"


def pdf_links(pdf: Path) -> list[tuple[int, str]]:
    """Every link of a PDF as (page number from 1, URI), in page order."""
    from pypdf import PdfReader

    links = []
    for number, page in enumerate(PdfReader(pdf).pages, start=1):
        for annotation in page.get("/Annots") or []:
            annotation = annotation.get_object()
            action = annotation.get("/A")
            if annotation.get("/Subtype") == "/Link" and action and "/URI" in action:
                links.append((number, str(action["/URI"])))
    return links


def local_links(pdf: Path) -> list[tuple[int, str]]:
    """The links of a PDF that lead to this machine (the print server), not to the web."""
    from urllib.parse import urlparse

    return [(n, uri) for n, uri in pdf_links(pdf) if urlparse(uri).hostname in LOCAL_HOSTS]


# Every link of the printed page made absolute against the deck's published address: a
# relative link (the title slide's ``../book/NAME.html``, a ``#/3``) would otherwise be
# printed against the local server's, http://127.0.0.1:PORT/..., dead once the PDF is shared.
PUBLISH_LINKS_JS = """published => {
    for (const link of document.querySelectorAll('a[href]'))  // an SVG's <a> too
        link.setAttribute('href', new URL(link.getAttribute('href'), published).href);
}"""


def _print_once(browser, url: str, pdf: Path, name: str) -> None:
    """One print of a deck's ``?print-pdf`` view, once its pages and mathematics are laid
    out, its links pointing at the published deck (:func:`published_decks`)."""
    from tools.browser import Offline

    with Offline(browser, viewport={"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT}) as tab:
        tab.page.goto(url, wait_until="load")
        tab.page.wait_for_function("window.Reveal && Reveal.isReady()")
        tab.page.evaluate("MathJax.startup.promise")
        tab.page.wait_for_function("document.documentElement.dataset.pdfReady === '1'")
        tab.page.evaluate(PUBLISH_LINKS_JS, published_decks() + f"{name}.html")
        tab.page.emulate_media(media="print")
        tab.page.pdf(path=str(pdf), prefer_css_page_size=True, print_background=True)
        if tab.blocked or tab.errors:
            raise RuntimeError(f"{name}: blocked {tab.blocked}, errors {tab.errors}")


def print_pdfs(names: list[str], out: Path = OUT) -> dict[str, dict]:
    """Print each deck with reveal.js's ``?print-pdf`` view into ``out/NAME.pdf``."""
    from pypdf import PdfReader

    from tools.browser import chromium
    from tools.site import serve

    results = {}
    with serve(out) as base, chromium() as browser:
        for name in names:
            start = time.perf_counter()
            pdf = out / f"{name}.pdf"
            slides = (out / f"{name}.html").read_text(encoding="utf-8").count("<section")
            # Reveal.isReady() comes before the print view has laid out its pages: printed
            # then, a deck once came out as one blank page (seen in CI). Wait for the print
            # view's own "pdf-ready", and check the page count; one retry, then refuse.
            for attempt in (1, 2):
                _print_once(browser, f"{base}/{name}.html?print-pdf", pdf, name)
                pages = len(PdfReader(pdf).pages)
                if pages == slides:
                    break
                if attempt == 2:
                    raise RuntimeError(f"{pdf}: {pages} pages printed for {slides} slides")
            local = local_links(pdf)
            if local:
                raise RuntimeError(
                    f"{pdf}: links (page, address) to the print server, dead once the PDF "
                    f"is shared: {local}; every link must lead to {published_decks()}"
                )
            results[name] = {
                "pdf_bytes": pdf.stat().st_size,
                "pdf_seconds": round(time.perf_counter() - start, 1),
            }
    return results


def main(argv: list[str]) -> int:
    pdf = "--no-pdf" not in argv
    argv = [a for a in argv if a != "--no-pdf"]
    executed = None
    if "--executed" in argv:
        at = argv.index("--executed")
        executed = Path(argv[at + 1])
        del argv[at : at + 2]
    names = argv or deck_names()
    unknown = sorted(set(names) - set(deck_names()))
    if unknown:
        raise ValueError(f"no slide notebook slides/NAME.ipynb for NAME in {unknown}")
    start = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    copy_assets(OUT)
    workers = min(2, len(names))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        built = dict(zip(names, pool.map(partial(build_deck, executed=executed), names)))
    if pdf:
        for name, printed in print_pdfs(names).items():
            built[name].update(printed)
    record_path = OUT / "build.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    record.update(built)
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    for name, facts in built.items():
        print(f"{name:38s} {facts}")
    print(f"{len(names)} decks in {time.perf_counter() - start:.1f} s -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
