"""The book as Sphinx sees it, for the reader's edition (tools/readers_edition.py).

:func:`scan_book` indexes every label, figure and equation of the book in
reading order (a :class:`Book` of :class:`Target` s), with the website's
addresses (:func:`site_url`, :func:`raw_url`) and the citations of
``book/references.bib`` (:func:`read_bib`); the MyST patterns it reads by are
shared with the converter.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"

LABEL_LINE = re.compile(r"^\(([^()\s]+)\)=\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ROLE = re.compile(r"\{([a-zA-Z][\w:+-]*)\}`([^`]*)`")
FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\s*(\{([\w:-]+)\})?\s*(.*?)\s*$")
EQ_LABEL = re.compile(r"(\$\$)\s*\(([^()\s]+)\)\s*$")
AMSMATH = re.compile(r"^\s*\\begin\{(equation|multline|gather|align|alignat|flalign|eqnarray)\*?\}")


def site_url(config: dict) -> str:
    """The published website: GitHub Pages' project site of the repository."""
    url = config["repository"]["url"].rstrip("/")
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(\.git)?", url)
    if not match:
        raise ValueError(f"repository url {url!r} is not https://github.com/OWNER/REPO")
    owner, repo = match.group(1), match.group(2)
    if repo.lower() == f"{owner.lower()}.github.io":  # a user site sits at the root
        return f"https://{repo.lower()}/"
    return f"https://{owner.lower()}.github.io/{repo}/"


def raw_url(config: dict) -> str:
    """Where GitHub serves the repository's files (for images in the edition)."""
    url = config["repository"]["url"].rstrip("/").removesuffix(".git")
    return url.replace("https://github.com/", "https://raw.githubusercontent.com/") + (
        f"/{config['repository']['branch']}/"
    )


def toc_pages(root: Path = ROOT) -> list[str]:
    """Every page in reading order, as paths without suffix ("book/intro", ...)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    parts = toc.get("parts") or [{"chapters": toc.get("chapters", [])}]
    pages = [toc["root"]]
    for part in parts:
        for entry in part.get("chapters", []):
            pages.append(entry["file"])
            pages.extend(section["file"] for section in entry.get("sections", []))
    return pages


def plain_title(text: str) -> str:
    """A heading as text: Markdown emphasis and code marks dropped."""
    text = ROLE.sub(lambda m: _role_text(m.group(2)), text)
    return re.sub(r"[*_`]", "", text).strip()


def _role_text(content: str) -> str:
    """What a role shows when it has an explicit title: "title <target>" -> title."""
    match = re.fullmatch(r"\s*(.*?)\s*<([^<>]+)>\s*", content, re.S)
    return match.group(1) if match else content


@dataclass
class Target:
    page: str  # "book/masked-softmax"
    anchor: str  # "" for a page's title
    title: str
    kind: str  # "section", "figure", "equation"
    number: int | None = None


@dataclass
class Book:
    """What a reference can point at, across the whole book."""

    site: str
    raw: str
    targets: dict[str, Target] = field(default_factory=dict)
    citations: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (authors, year)
    pages: list[str] = field(default_factory=list)

    def url(self, page: str, anchor: str = "") -> str:
        return f"{self.site}{page}.html" + (f"#{anchor}" if anchor else "")


def _markdown_sources(path: Path) -> list[tuple[str, dict | None]]:
    """(Markdown text, None) blocks of a page; code cells as ("", metadata)."""
    if path.suffix == ".md":
        return [(path.read_text(), None)]
    nb = json.loads(path.read_text())
    blocks = []
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            blocks.append((source, None))
        elif cell["cell_type"] == "code":
            blocks.append(("", cell.get("metadata", {})))
    return blocks


def scan_book(root: Path = ROOT) -> Book:
    """Index every label, figure and equation of the book, in reading order.

    Figures are numbered as Sphinx's numfig does when no section is numbered
    (this book's table of contents numbers none): one counter through every
    page in reading order. Equations are numbered per page.
    """
    config = yaml.safe_load((root / "_config.yml").read_text())
    book = Book(site=site_url(config), raw=raw_url(config), pages=toc_pages(root))
    figure_number = 0
    for page in book.pages:
        path = next(
            (
                root / f"{page}{suffix}"
                for suffix in (".ipynb", ".md")
                if (root / f"{page}{suffix}").exists()
            ),
            None,
        )
        if path is None:
            continue
        equation_number = 0
        pending: list[str] = []
        first_heading = True
        for text, metadata in _markdown_sources(path):
            if metadata is not None:
                figure = metadata.get("mystnb", {}).get("figure", {})
                if figure.get("caption") or figure.get("name"):
                    figure_number += 1
                    if figure.get("name"):
                        book.targets[figure["name"]] = Target(
                            page, figure["name"], figure.get("caption", ""), "figure", figure_number
                        )
                continue
            in_code = None
            open_directives: list[str] = []
            lines = text.splitlines()
            for index, line in enumerate(lines):
                fence = FENCE_OPEN.match(line)
                if in_code:
                    if _closes(in_code, line):
                        in_code = None
                    continue
                if open_directives and _closes(open_directives[-1], line):
                    open_directives.pop()
                    continue
                if fence and fence.group(4):
                    open_directives.append(fence.group(2))
                elif fence and fence.group(2)[0] != ":":
                    in_code = fence.group(2)
                    continue
                if fence and fence.group(4) in ("figure", "image"):
                    figure_number += fence.group(4) == "figure"
                    options = _options(lines[index + 1 :])
                    if "name" in options:
                        book.targets[options["name"]] = Target(
                            page,
                            options["name"],
                            "",
                            "figure",
                            figure_number if fence.group(4) == "figure" else None,
                        )
                    continue
                if fence and fence.group(4) == "math":
                    options = _options(lines[index + 1 :])
                    if "label" in options:
                        equation_number += 1
                        book.targets[options["label"]] = Target(
                            page, f"equation-{options['label']}", "", "equation", equation_number
                        )
                    continue
                eq = EQ_LABEL.search(line)
                if eq:
                    equation_number += 1
                    book.targets[eq.group(2)] = Target(
                        page, f"equation-{eq.group(2)}", "", "equation", equation_number
                    )
                    continue
                label = LABEL_LINE.match(line)
                if label:
                    pending.append(label.group(1))
                    continue
                heading = HEADING.match(line)
                if heading:
                    title = plain_title(heading.group(2))
                    for name in pending:
                        anchor = "" if first_heading else name
                        book.targets[name] = Target(page, anchor, title, "section")
                    first_heading = False
                    pending = []
                elif line.strip():
                    # A label before a paragraph, figure or list: {ref} to it must
                    # give its own text, as Sphinx requires.
                    for name in pending:
                        book.targets.setdefault(name, Target(page, name, "", "section"))
                    pending = []
    book.citations = read_bib(root / "book" / "references.bib")
    return book


def _closes(fence: str, line: str) -> bool:
    """Whether ``line`` closes a fence opened with ``fence`` (CommonMark's rule)."""
    return re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", line) is not None


def _options(lines: list[str]) -> dict[str, str]:
    """A directive's ``:key: value`` options (the lines right after its fence)."""
    options = {}
    for line in lines:
        match = re.match(r"^\s*:([\w-]+):\s*(.*?)\s*$", line)
        if not match:
            break
        options[match.group(1)] = match.group(2)
    return options


@functools.cache
def _text_backend():
    """pybtex's plain-text backend, looked up once: each lookup scans the
    entry points of every installed package (``render_as`` looks it up on
    every call, which made reading the bibliography take seconds)."""
    from pybtex.plugin import find_plugin

    return find_plugin("pybtex.backends", "text")()


def _latex_to_text(text: str) -> str:
    from pybtex.richtext import Text

    return Text.from_latex(text).render(_text_backend()).strip()


def read_bib(path: Path) -> dict[str, tuple[str, str]]:
    """Each entry's author text, as sphinxcontrib-bibtex's author-year style
    writes it ("A", "A and B", "A et al."), and its year (parsed by pybtex,
    which sphinxcontrib-bibtex itself uses)."""
    from pybtex.database import parse_file

    entries = {}
    for key, entry in parse_file(str(path), bib_format="bibtex").entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        surnames = [_latex_to_text(" ".join(p.prelast_names + p.last_names)) for p in people]
        if not surnames:
            authors = _latex_to_text(entry.fields.get("title", key))
        elif len(surnames) == 1:
            authors = surnames[0]
        elif len(surnames) == 2:
            authors = f"{surnames[0]} and {surnames[1]}"
        else:
            authors = f"{surnames[0]} et al."
        entries[key] = (authors, _latex_to_text(entry.fields.get("year", "n.d.")))
    return entries
