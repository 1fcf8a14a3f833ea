"""The reader's edition: every chapter notebook as Colab, GitHub and a plain
JupyterLab show it (`make readers-edition`, also run by `make notebooks`).

    python tools/readers_edition.py            # write book/colab/NAME.ipynb for every chapter
    python tools/readers_edition.py --check    # exit 1 (naming the stale files) if any is out of date

Why a generated edition. The chapters are written in MyST Markdown, which the
website and the PDF need: numbered figures, cross-references, citations,
solution dropdowns. Colab, GitHub's notebook viewer, nbviewer and a JupyterLab
without extensions render notebook Markdown as CommonMark with HTML, where
MyST shows as raw text and a dropdown is an open code block. Rather than
write the chapters twice, or give the website up for the lowest common
Markdown, this tool derives a "reader's edition" of every ``book/NAME.ipynb``
into ``book/colab/NAME.ipynb``, in the repository's own tree (a fork gets it
with no extra workflow), and the Colab buttons and the README open that.
``tests/test_readers_edition.py`` fails when an edition is out of date with
its source, and renders each edition as CommonMark to prove it reads right.

What changes, in Markdown cells:

* ``(label)=`` lines and ``% comments`` go; ``{ref}`` becomes a link to the
  section on the published website (GitHub Pages of the repository named in
  ``_config.yml``: ``https://OWNER.github.io/REPO/book/PAGE.html#label``),
  chosen over a link to the sibling notebook because Colab cannot follow a
  relative link between notebooks, while the website page works everywhere;
* ``{numref}`` becomes "Figure N" (the number the website shows: Sphinx
  numbers figures through the whole book in reading order while no section
  is numbered), linked when the figure is on another page; ``{eq}`` "(N)";
* ``{cite}``/``{cite:p}`` become "(Vaswani et al., 2017)", ``{cite:t}``
  "Vaswani et al. (2017)", from ``book/references.bib`` the way
  sphinxcontrib-bibtex's author-year style names authors, linked to the
  references page; ``{doc}`` a link; ``{math}`` ``$...$``; any other role its
  text;
* dropdowns (``{dropdown}``, ``{admonition}`` with ``:class: dropdown``)
  become closed ``<details><summary>Title</summary>``; other admonitions a
  quoted block with a bold title; ``{figure}``/``{image}`` a Markdown image
  with a visible caption; ``{math}`` and bare amsmath environments ``$$``
  blocks; ``$$ ... $$ (label)`` loses its label.

In code cells: a figure caption kept in ``mystnb.figure`` metadata becomes a
Markdown cell "**Figure N.** caption" right after its cell; solution cells
(tag ``solution``) keep ``jupyter.source_hidden`` (JupyterLab) and get Colab's
form fold (``cellView: form``, with their ``# @title`` first line) and
collapsed outputs; cells the website removes (tag ``remove-cell``: the
install cell, hidden checks) stay, since they must run, but fold the same way
under a title, as do the concept questions' ``ask(...)`` cells (input hidden on
the website). Outputs are copied as stored. The output is deterministic:
writing twice changes nothing.
"""

from __future__ import annotations

import copy
import html
import re
import sys
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The book's index (labels, figure numbers, citations, the website's addresses) is in
# book_index; Target, plain_title, raw_url, read_bib, ... are imported from here too.
from tools.book_index import (  # noqa: F401 (re-exported: every import of readers_edition keeps working)
    AMSMATH,
    BOOK,
    EQ_LABEL,
    FENCE_OPEN,
    HEADING,
    LABEL_LINE,
    ROLE,
    ROOT,
    Book,
    Target,
    _closes,
    _latex_to_text,
    _markdown_sources,
    _options,
    _role_text,
    _text_backend,
    plain_title,
    raw_url,
    read_bib,
    scan_book,
    site_url,
    toc_pages,
)

OUT = BOOK / "colab"
EDITION_NOTE = "reader's edition"

ADMONITIONS = {
    "note": "Note",
    "tip": "Tip",
    "hint": "Hint",
    "important": "Important",
    "warning": "Warning",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "error": "Error",
    "seealso": "See also",
}


class Converter:
    """Turns one page's MyST Markdown into CommonMark with HTML."""

    def __init__(self, book: Book, page: str):
        self.book = book
        self.page = page

    # -- inline roles -------------------------------------------------------
    def role(self, match: re.Match) -> str:
        name, content = match.group(1), match.group(2)
        if name in ("ref", "numref", "eq", "doc"):
            return self.reference(name, content)
        if name.startswith("cite"):
            return self.cite(name, content)
        if name == "math":
            return f"${content}$"
        if name in ("code", "literal", "samp", "file", "command"):
            return f"`{content}`"
        return _role_text(content)

    def _target(self, name: str, content: str) -> tuple[str | None, str]:
        match = re.fullmatch(r"\s*(.*?)\s*<([^<>]+)>\s*", content, re.S)
        if match:
            return match.group(1), match.group(2).strip()
        return None, content.strip()

    def reference(self, role: str, content: str) -> str:
        text, label = self._target(role, content)
        if role == "doc":
            page = label.removesuffix(".md").removesuffix(".ipynb")
            if not page.startswith("/"):
                page = str(Path(self.page).parent / page)
            page = page.lstrip("/")
            heading = next(
                (t.title for t in self.book.targets.values() if t.page == page and not t.anchor),
                page,
            )
            return f"[{text or heading}]({self.book.url(page)})"
        target = self.book.targets.get(label)
        if target is None:
            raise ValueError(f"{self.page}: {{{role}}} to unknown label {label!r}")
        if role == "eq":
            shown = f"({target.number})"
        elif role == "numref":
            noun = {"figure": "Figure", "equation": "Equation"}.get(target.kind, "Section")
            number = str(target.number) if target.number is not None else target.title
            shown = (
                text.replace("%s", number)
                .replace("{number}", number)
                .replace("{name}", target.title)
                if text
                else f"{noun} {number}"
            )
        else:
            shown = text or target.title or label
        if target.page == self.page and role in ("numref", "eq"):
            return shown  # on the same page: the number is enough
        return f"[{shown}]({self.book.url(target.page, target.anchor)})"

    def cite(self, role: str, content: str) -> str:
        keys = [key.strip() for key in content.split(",") if key.strip()]
        unknown = [key for key in keys if key not in self.book.citations]
        if unknown:
            raise ValueError(f"{self.page}: citation keys not in references.bib: {unknown}")
        refs = self.book.url("book/references")
        keys.sort(key=lambda k: self.book.citations[k])  # the website's order
        if role in ("cite:t", "cite:ts"):
            parts = [f"{a} ({y})" for a, y in (self.book.citations[k] for k in keys)]
            return f"[{', '.join(parts)}]({refs})"
        parts = [f"{a}, {y}" for a, y in (self.book.citations[k] for k in keys)]
        return f"([{', '.join(parts)}]({refs}))"

    def inline(self, text: str) -> str:
        text = ROLE.sub(self.role, text)
        # MyST links to a label: [text](label), [text](#label), [text](<label>)
        return re.sub(r"\]\(<?#?([\w:.-]+)>?\)", self._link, text)

    def _link(self, match: re.Match) -> str:
        label = match.group(1)
        target = self.book.targets.get(label)
        if target is None or "." in label and label.endswith((".md", ".ipynb")):
            page = re.sub(r"\.(md|ipynb)$", "", label)
            if page != label:
                return f"]({self.book.url(str(Path(self.page).parent / page))})"
            return match.group(0)
        return f"]({self.book.url(target.page, target.anchor)})"

    # -- blocks ---------------------------------------------------------------
    def markdown(self, text: str) -> str:
        out: list[str] = []
        lines = text.split("\n")
        index = 0
        while index < len(lines):
            line = lines[index]
            fence = FENCE_OPEN.match(line)
            if fence and (fence.group(4) or fence.group(2)[0] != ":"):
                body, index = _fenced_body(lines, index, fence.group(2))
                if fence.group(4):
                    out.append(self.directive(fence.group(4), fence.group(5), body, fence.group(1)))
                else:
                    out.extend([line, *body, fence.group(1) + fence.group(2)])
                continue
            if AMSMATH.match(line) and not _inside_math(out):
                env = AMSMATH.match(line).group(1)
                end = index
                while end < len(lines) and not re.search(rf"\\end\{{{env}\*?\}}", lines[end]):
                    end += 1
                out.extend(["$$", *lines[index : end + 1], "$$"])
                index = end + 1
                continue
            if LABEL_LINE.match(line) or re.match(r"^%", line) or line.strip() == "+++":
                index += 1
                continue
            line = EQ_LABEL.sub(r"\1", line)
            out.append(self.inline(line))
            index += 1
        return "\n".join(out).strip("\n")

    def directive(self, name: str, argument: str, body: list[str], indent: str) -> str:
        options = _options(body)
        body = body[len(options) :]
        if body and body[0].strip() == "---":  # YAML options block
            end = next((i for i, b in enumerate(body[1:], 1) if b.strip() == "---"), 0)
            options.update(yaml.safe_load("\n".join(body[1:end])) or {})
            body = body[end + 1 :]
        inner = self.markdown("\n".join(body))
        title = self.inline(argument)
        if name == "dropdown" or "dropdown" in str(options.get("class", "")).split():
            summary = html.escape(plain_title(title) or "Details", quote=False)
            return f"<details>\n<summary>{summary}</summary>\n\n{inner}\n\n</details>"
        if name in ADMONITIONS or name == "admonition":
            heading = title if name == "admonition" else ADMONITIONS[name]
            quoted = "\n".join(f"> {b}".rstrip() for b in inner.split("\n"))
            return f"> **{heading}**\n>\n{quoted}"
        if name in ("figure", "image"):
            target = self.book.targets.get(options.get("name", ""))
            src = (
                argument
                if re.match(r"https?://", argument)
                else self.book.raw + str(Path(self.page).parent / argument)
            )
            image = f"![{options.get('alt', '')}]({src})"
            if name == "image":
                return image
            label = f"**Figure {target.number}.** " if target and target.number else ""
            return f"{image}\n\n{label}{inner}".rstrip()
        if name == "math":
            return f"$$\n{chr(10).join(body).strip()}\n$$"
        if name in ("code-block", "code", "sourcecode", "code-cell"):
            return f"```{argument}\n" + "\n".join(body) + "\n```"
        return (f"**{title}**\n\n" if title else "") + inner

    # -- notebooks -----------------------------------------------------------
    def notebook(self, source: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
        nb = copy.deepcopy(source)
        cells = []
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                cell.source = self.markdown(cell.source)
                cells.append(cell)
                if index == 0:
                    cells.append(self.edition_note(name))
                continue
            if cell.cell_type != "code":
                cells.append(cell)
                continue
            tags = cell.metadata.get("tags", [])
            if "solution" in tags:
                fold(cell, outputs=True)
            elif "remove-cell" in tags:
                first_code = not any(c.cell_type == "code" for c in cells)
                fold(
                    cell,
                    title="Install attnbook (Colab only; run this cell first)"
                    if first_code
                    else "Check: the numbers in the text are what the code computes",
                )
            elif "remove-input" in tags and cell.source.startswith("ask("):
                # a concept question (attnbook.quiz): the widget is the point, not the call
                fold(cell, title="Check your understanding (run this cell to answer)")
            elif {"hide-input", "hide-cell", "remove-input"} & set(tags):
                fold(cell, title="Code (folded, as on the website)")
            cells.append(cell)
            figure = cell.metadata.get("mystnb", {}).get("figure", {})
            if figure.get("caption"):
                target = self.book.targets.get(figure.get("name", ""))
                label = f"Figure {target.number}." if target and target.number else "Figure."
                caption = nbformat.v4.new_markdown_cell(
                    f"**{label}** {self.markdown(figure['caption'])}"
                )
                caption.id = f"{cell.get('id', index)}-caption"[:64]
                cells.append(caption)
        nb.cells = cells
        return nb

    def edition_note(self, name: str) -> nbformat.NotebookNode:
        url = self.book.url(self.page)
        note = nbformat.v4.new_markdown_cell(
            f"*This is the {EDITION_NOTE} of the chapter for Colab, GitHub and Jupyter; "
            f"it is also [on the book's website]({url}). It is generated from "
            f"`book/{name}` by `make readers-edition`: edit that file, not this one.*"
        )
        note.id = "readers-edition-note"
        return note


def fold(cell: nbformat.NotebookNode, title: str | None = None, outputs: bool = False) -> None:
    """Fold a code cell in JupyterLab (source_hidden) and in Colab (a form)."""
    jupyter = dict(cell.metadata.get("jupyter", {}))
    jupyter["source_hidden"] = True
    if outputs:
        jupyter["outputs_hidden"] = True
        cell.metadata["collapsed"] = True
    cell.metadata["jupyter"] = jupyter
    cell.metadata["cellView"] = "form"
    first = cell.source.split("\n", 1)[0]
    if not re.match(r"^#\s?@title\b", first):
        if title is None:
            raise ValueError(f"cell {cell.get('id')}: a folded cell needs a '# @title' first line")
        cell.source = f"# @title {title}\n{cell.source}"


def _fenced_body(lines: list[str], start: int, fence: str) -> tuple[list[str], int]:
    """The lines inside the fence opened at ``start``, and the index after it."""
    close = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    nested_plain = None
    for index in range(start + 1, len(lines)):
        line = lines[index]
        if fence[0] == ":":
            if close.match(line):
                return lines[start + 1 : index], index + 1
            continue
        inner = FENCE_OPEN.match(line)
        if nested_plain:
            if re.match(rf"^\s*{re.escape(nested_plain[0])}{{{len(nested_plain)},}}\s*$", line):
                nested_plain = None
            continue
        if close.match(line):
            return lines[start + 1 : index], index + 1
        if inner and not inner.group(4) and inner.group(2)[0] != ":":
            nested_plain = inner.group(2)
    raise ValueError(f"unclosed {fence} fence: {lines[start]!r}")


def _inside_math(out: list[str]) -> bool:
    return sum(line.count("$$") for line in out) % 2 == 1


def edition(path: Path, book: Book | None = None) -> nbformat.NotebookNode:
    """The reader's edition of one chapter notebook (nothing is written)."""
    book = book or scan_book()
    page = f"book/{path.stem}"
    source = nbformat.read(path, as_version=4)
    return Converter(book, page).notebook(source, path.name)


def dumps(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def sources(root: Path = ROOT) -> list[Path]:
    return sorted((root / "book").glob("*.ipynb"))


def stale(root: Path = ROOT) -> list[Path]:
    """The reader's editions that differ from what their sources give, or are
    missing; and any edition whose source is gone."""
    book = scan_book(root)
    out = root / "book" / "colab"
    wrong = []
    for path in sources(root):
        target = out / path.name
        if not target.exists() or target.read_text() != dumps(edition(path, book)):
            wrong.append(target)
    names = {path.name for path in sources(root)}
    wrong += [p for p in sorted(out.glob("*.ipynb")) if p.name not in names]
    return wrong


def write_all(root: Path = ROOT) -> list[Path]:
    book = scan_book(root)
    out = root / "book" / "colab"
    out.mkdir(exist_ok=True)
    changed = []
    names = set()
    for path in sources(root):
        target = out / path.name
        names.add(path.name)
        text = dumps(edition(path, book))
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            changed.append(target)
    for old in sorted(out.glob("*.ipynb")):
        if old.name not in names:
            old.unlink()
            changed.append(old)
    return changed


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        wrong = stale()
        for path in wrong:
            print(f"out of date: {path.relative_to(ROOT)}")
        if wrong:
            print(
                "run `make readers-edition` (python tools/readers_edition.py) and commit book/colab/"
            )
        return 1 if wrong else 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    changed = write_all()
    print(f"reader's edition: {len(changed)} of {len(sources())} notebooks written to book/colab/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
