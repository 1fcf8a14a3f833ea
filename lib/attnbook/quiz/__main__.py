"""``python -m attnbook.quiz check`` validates every question file; ``show CHAPTER`` prints one
(its questions as readers see them, then the keys).

Run from the repository's root, ``check`` also finds every section a question
links in its chapter's source (``book/PAGE.ipynb`` or ``.md``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from . import chapters, key_text, load, question_text

_LABEL = re.compile(r"^\(([A-Za-z0-9_-]+)\)=\s*$", re.MULTILINE)


def labels(page: Path) -> set[str]:
    """The MyST labels ``(label)=`` in a chapter's Markdown."""
    if page.suffix == ".ipynb":
        cells = json.loads(page.read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = page.read_text()
    return set(_LABEL.findall(text))


def problems(book: Path | None) -> list[str]:
    found = []
    for chapter in chapters():
        try:
            questions = load(chapter)
        except ValueError as error:
            found.append(str(error))
            continue
        if book is None:
            continue
        known: dict[str, set[str]] = {}
        for q in questions:
            targets = [q.section] + [o.reread for o in q.options] + [w.reread for w in q.wrong]
            for target in targets:
                page, label = target.split("#")
                if page not in known:
                    path = next(
                        (
                            book / f"{page}{s}"
                            for s in (".ipynb", ".md")
                            if (book / f"{page}{s}").exists()
                        ),
                        None,
                    )
                    known[page] = labels(path) if path else set()
                if label not in known[page]:
                    found.append(f"{q.key}: links {target}, which is not a label of book/{page}")
    return found


def main(argv: list[str]) -> int:
    if argv[:1] == ["check"]:
        book = Path("book") if Path("book").is_dir() else None
        found = problems(book)
        for line in found:
            print(line)
        count = sum(len(load(c)) for c in chapters()) if not found else 0
        print("ok:" if not found else "problems:", count or len(found), "questions" * (not found))
        return 1 if found else 0
    if len(argv) == 2 and argv[0] == "show":
        # The keys come last, so that a reader can answer before seeing them.
        questions = load(argv[1])
        for number, q in enumerate(questions, start=1):
            print(f"--- {number}. {q.key} ({q.kind}{', several' if q.multiple else ''})")
            print(question_text(q))
            print()
        print("Keys: " + "; ".join(f"{n}. {key_text(q)}" for n, q in enumerate(questions, 1)))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
