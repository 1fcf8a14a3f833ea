"""The concept questions on the website and in the PDF (``attnbook.quiz``).

* ``{concept-question} CHAPTER/ID``: the question where a prose chapter (one
  without code, so without ``ask(...)``) asks it: the same fragment that a
  notebook's ``ask`` displays on the website.
* ``% generated: concept-answers`` in ``book/concept-answers.md``: the
  appendix, replaced as Sphinx reads the page by MyST text computed from the
  question files: per chapter, in reading order, each question's number, its
  key, why it is right, and what each wrong option (or known wrong number)
  gets wrong, with a ``{ref}`` to the section it tests. Because the questions
  live in the library's data, not in this page, the page is re-read on every
  build.
* On a page with several questions, every question's fragment carries the
  same script (``quiz.js``, 10 KiB); the first keeps it and leaves ``wire`` on
  ``window``, and each later one gets a one-line call instead
  (:func:`share_scripts`), so that ten questions cost one script.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from attnbook import quiz

ROOT = Path(__file__).resolve().parent.parent.parent
DOCNAME = "book/concept-answers"
MARKER = re.compile(r"^% generated: concept-answers[ \t]*$", re.M)


class ConceptQuestion(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        key = self.arguments[0]
        try:
            question = quiz.find(key)
        except ValueError as error:
            raise self.error(f"concept-question: {error}") from None
        return [nodes.raw("", quiz.fragment(question), format="html")]


def toc_chapters(root: Path = ROOT) -> list[str]:
    """The book's pages in reading order, as file names without folder or suffix."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found = []
    for part in toc["parts"]:
        for entry in part["chapters"]:
            found.append(entry["file"].split("/")[-1])
    return found


def chapter_title(name: str, root: Path = ROOT) -> str:
    """The first level-one heading of ``book/NAME`` (.ipynb or .md)."""
    path = root / "book" / f"{name}.ipynb"
    if path.exists():
        cells = json.loads(path.read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = (root / "book" / f"{name}.md").read_text()
    match = re.search(r"^# (.+)$", text, re.M)
    return match.group(1).strip() if match else name


def _item(text: str) -> str:
    # One Markdown list item: the text (MyST, maths kept for MathJax) on one line.
    from attnbook.quiz import one_line

    return one_line(text)


def answers_markdown(root: Path = ROOT) -> str:
    """The appendix's MyST text (see the module docstring)."""
    have = set(quiz.chapters())
    out = []
    for name in toc_chapters(root):
        if name not in have:
            continue
        out.append(f"## {chapter_title(name, root)}\n")
        for number, q in enumerate(quiz.load(name), start=1):
            label = q.section.split("#")[1]
            out.append(
                f"**{number}.** {_item(q.prompt.split(chr(10) + chr(10))[0])}\n\n"
                f"*Answer: {quiz.key_text(q)}* (section: {{ref}}`{label}`)\n"
            )
            if q.kind == "numeric":
                out.append(f"- {_item(q.feedback)}")
                out += [f"- {w.value:g}: {_item(w.feedback)}" for w in q.wrong]
                out.append(f"- Any other number: {_item(q.otherwise)}")
            else:
                out += [
                    f"- **{quiz.LETTERS[i]}** ({'right' if o.correct else 'wrong'}): "
                    f"{_item(o.feedback)}"
                    for i, o in enumerate(q.options)
                ]
            out.append("")
    return "\n".join(out)


_SCRIPT = re.compile(r"(<div class=\"attnbook-quiz-host\">.*?<script>)(.*?)(</script></div>)", re.S)


def share_scripts(html_parts: list[str]) -> list[str]:
    """``html_parts`` (raw HTML in page order) with the quiz script only in the first
    question's fragment; later fragments call the shared ``wire``."""
    from attnbook.quiz._widget import SHARED_CALL

    seen = False
    out = []
    for part in html_parts:

        def one(match):
            nonlocal seen
            if not seen:
                seen = True
                return match.group(0)
            return match.group(1) + SHARED_CALL + match.group(3)

        out.append(_SCRIPT.sub(one, part))
    return out


def _share(app, doctree, docname):
    raws = [
        node
        for node in doctree.findall(nodes.raw)
        if "html" in node.get("format", "") and "attnbook-quiz-host" in node.astext()
    ]
    if len(raws) < 2:
        return
    for node, text in zip(raws, share_scripts([node.astext() for node in raws])):
        if text != node.astext():
            node.parent.replace(node, nodes.raw("", text, format=node["format"]))


def _source_read(app, docname, source):
    if docname == DOCNAME:
        source[0] = MARKER.sub(lambda _: answers_markdown(), source[0])


def _always_reread(app, env, added, changed, removed):
    return [DOCNAME] if DOCNAME in env.found_docs else []


def setup(app):
    app.add_directive("concept-question", ConceptQuestion)
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _always_reread)
    app.connect("doctree-resolved", _share)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
