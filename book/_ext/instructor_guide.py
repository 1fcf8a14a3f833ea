"""Fills the instructor guide (book/instructor-guide.md) from the book's sources.

The page holds marker lines, ``% generated: NAME``, and inline tokens,
``{{ guide.NAME }}``; as Sphinx reads the page this extension replaces them with
MyST text computed from

- the table of contents (the chapters, in reading order, and their parts);
- each chapter's opening: its title and its "What you will learn" list;
- each chapter's exercises (``**N. ★★ Title.**``), with the checkers
  (``check_*``) named between one exercise and the next;
- the explorers each notebook calls (``*_explorer(`` and ``*_live(``);
- ``attnbook.checks.known_mistakes()``: every checker's known mistakes;
- ``notebook_times.json`` beside this file (``python -m tools.time_notebooks``):
  the CPU seconds each notebook took on a named machine;
- ``attnbook.quiz``: each chapter's concept questions (a chapter with no
  question file yet is left out).

It also adds guide_static/instructor-guide.css, which lets a long name in a
list on this page break on a phone's narrow column.

Nothing in the page is copied by hand, so it cannot drift from the chapters or
the checkers. Because the page's own file rarely changes, it is re-read on
every build. tests/test_instructor_guide.py checks what it lists.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DOCNAME = "book/instructor-guide"
TIMES = HERE / "notebook_times.json"

# The estimate of study time, stated on the page: prose read at WORDS_PER_MINUTE,
# and a fixed time per exercise by its difficulty (the preface's scale: a few
# minutes, some thought or a function, a small project).
WORDS_PER_MINUTE = 200
EXERCISE_MINUTES = {1: 10, 2: 30, 3: 60}
# The course plans: (key, title, parts, teaching weeks, project weeks).
PLANS = (
    ("module", "A two-week module", ("Part I",), 2, 0),
    ("unit", "A six-week unit", ("Part I", "Part II", "Part III"), 6, 0),
    ("course", "A full course", ("Part I", "Part II", "Part III", "Part IV"), 9, 3),
)
PROJECT_HOURS_PER_WEEK = 6  # a suggestion for the project weeks, not a measurement

MARKER = re.compile(r"^% generated: ([a-z-]+)[ \t]*$", re.M)
TOKEN = re.compile(r"\{\{ guide\.([a-z_]+) \}\}")
EXERCISE = re.compile(r"^(?:\d+\.\s+)?\*\*(?:(\d+)\.\s+)?(★+)\s+(.+?)\*\*", re.M)
CHECKER = re.compile(r"\b(check_[a-z0-9_]+)\(")
EXPLORER = re.compile(r"\b([a-z][a-z0-9_]*_(?:explorer|live))\(")
DROPDOWN = re.compile(r"^(`{3,}|:{3,})\{dropdown\}.*?^\1[ \t]*$", re.M | re.S)


@dataclass
class Exercise:
    number: str
    stars: int
    title: str
    checkers: list[str] = field(default_factory=list)
    ident: str | None = None  # the exercise id (cell metadata): EXERCISES=... takes it


@dataclass
class Chapter:
    name: str  # the file's stem, e.g. "masked-softmax"
    part: str  # "Part I", ...
    part_title: str
    title: str
    learn: list[str]
    words: int
    exercises: list[Exercise]
    explorers: list[tuple[str, str]]  # (call, section it appears in)
    checkers: list[str]  # in the order the chapter first calls them
    notebook: bool

    @property
    def reading_minutes(self) -> int:
        return math.ceil(self.words / WORDS_PER_MINUTE)

    @property
    def exercise_minutes(self) -> int:
        return sum(EXERCISE_MINUTES[e.stars] for e in self.exercises)

    @property
    def study_minutes(self) -> int:
        return self.reading_minutes + self.exercise_minutes


# ----------------------------------------------------------------- reading the sources


def _cells(path: Path) -> list[tuple[str, str]]:
    """(cell type, source) of a notebook, or one markdown cell for a .md chapter."""
    if path.suffix == ".md":
        return [("markdown", path.read_text())]
    nb = nbformat.read(path, as_version=4)
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def _learn(opening: str, name: str) -> list[str]:
    """The "What you will learn" of a chapter's opening: its list's items, or the
    paragraph that follows the words (some chapters write it as prose)."""
    found = re.search(r"^(?:\*\*)?What you will learn[.:]?(?:\*\*)?[.:]?[ \t]*(.*)$", opening, re.M)
    if found is None:
        raise ValueError(f"{name}: no 'What you will learn' in its opening")
    lines = opening[found.end() :].splitlines()[1:]
    if found.group(1).strip():
        paragraph = [found.group(1).strip()]
        for line in lines:
            if not line.strip():
                break
            paragraph.append(line.strip())
        return [" ".join(paragraph)]
    items: list[str] = []
    for line in lines:
        if line.startswith("- "):
            items.append(line[2:].strip())
        elif line.startswith("  ") and items:
            items[-1] += " " + line.strip()
        elif line.strip() == "" and not items:
            continue
        else:
            break
    if not items:
        raise ValueError(f"{name}: its 'What you will learn' list is empty")
    return [item.rstrip(";.") for item in items]


def _words(markdown: str) -> int:
    """Words of prose a student reads: folded blocks (solutions, "Going deeper"
    asides) and labels left out."""
    text = DROPDOWN.sub(" ", markdown)
    text = re.sub(r"^\(.*\)=$", " ", text, flags=re.M)
    return len(re.findall(r"[A-Za-z0-9][\w'’-]*", text))


def _title(text: str, name: str) -> str:
    match = re.search(r"^# (.+)$", text, re.M)
    if match is None:
        raise ValueError(f"{name}: no title (a '# ' heading) in its first cell")
    return match.group(1).strip()


def read_chapter(path: Path, part: str, part_title: str) -> Chapter:
    cells = _cells(path)
    name = path.stem
    opening = next(source for kind, source in cells if kind == "markdown")
    prose = "\n\n".join(
        source
        for kind, source in cells
        if kind == "markdown" and not source.startswith("Solution: open the dropdown")
    )
    exercises: list[Exercise] = []
    explorers: list[tuple[str, str]] = []
    checkers: list[str] = []
    section = ""
    for kind, source in cells:
        if kind == "markdown":
            headings = re.findall(r"^#{2,3} (.+)$", source, re.M)
            if headings:
                section = headings[-1].strip()
            for match in EXERCISE.finditer(source):
                number = match.group(1) or str(len(exercises) + 1)
                title = match.group(3).strip().rstrip(".")
                exercises.append(Exercise(number, len(match.group(2)), title))
        names = CHECKER.findall(source)
        for checker in names:
            if checker not in checkers:
                checkers.append(checker)
            if exercises and checker not in exercises[-1].checkers:
                exercises[-1].checkers.append(checker)
        if kind == "code" and not exercises:
            for call in EXPLORER.findall(source):
                if call not in [c for c, _ in explorers]:
                    explorers.append((call, section))
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        idents = [
            entry.get("exercise")
            for cell in nb.cells
            for entry in cell.metadata.get("attnbook", {}).get("exercises", [])
        ]
        if len(idents) == len(exercises):
            for exercise, ident in zip(exercises, idents):
                exercise.ident = ident
    return Chapter(
        name=name,
        part=part,
        part_title=part_title,
        title=_title(opening, name),
        learn=_learn(opening, name),
        words=_words(prose),
        exercises=exercises,
        explorers=explorers,
        checkers=checkers,
        notebook=path.suffix == ".ipynb",
    )


def chapters(root: Path = ROOT) -> list[Chapter]:
    """The chapters of the table of contents's parts, in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found = []
    for part in toc["parts"]:
        caption = part.get("caption", "")
        if not caption.startswith("Part "):
            continue
        label, _, part_title = caption.partition(":")
        for entry in part["chapters"]:
            base = root / entry["file"]
            path = next(
                p for p in (base.with_suffix(".ipynb"), base.with_suffix(".md")) if p.is_file()
            )
            found.append(read_chapter(path, label.strip(), part_title.strip()))
    return found


def notebook_times(path: Path = TIMES) -> dict:
    return json.loads(path.read_text())


def known_mistakes() -> dict[str, tuple[tuple[str, str], ...]]:
    from attnbook.checks import known_mistakes as table

    return table()


def concept_questions() -> dict[str, list]:
    """chapter -> its concept questions (``attnbook.quiz``), for the chapters with a file."""
    from attnbook import quiz

    return {name: quiz.load(name) for name in quiz.chapters()}


# ----------------------------------------------------------------- writing MyST


def escape(text: str) -> str:
    """Text shown as it is: every Markdown and MyST punctuation mark escaped."""
    return re.sub(r"([\\`*_{}\[\]()<>#+\-.!|$~:=^&@\"'%])", r"\\\1", text)


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _minutes(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h {rest:02d} min" if rest else f"{hours} h"


def _about(minutes: int) -> str:
    """An estimate, rounded up to 5 minutes."""
    return _minutes(5 * math.ceil(minutes / 5))


def _cpu(name: str, times: dict) -> str:
    failed = times.get("failed", {}).get(name)
    if failed is not None:
        return f"not measured: its run failed on the measuring machine ({escape(failed)})"
    seconds = times["cpu_seconds"].get(name)
    if seconds is None:
        raise ValueError(f"{name}: no time in {TIMES.name}; run python -m tools.time_notebooks")
    return f"{math.ceil(seconds)} s of CPU"


def _deck(name: str, decks: set[str]) -> str:
    if name in decks:
        # Raw HTML, not a Markdown link: MyST resolves a relative Markdown link as a
        # cross-reference, finds no source for ../slides/NAME.html, and the strict
        # build (-W) fails on the warning, as in `make site` once the decks exist.
        return (
            f'<a href="../slides/{name}.html">slides (HTML)</a>, '
            f'<a href="../slides/{name}.pdf">PDF</a>'
        )
    return "not in this build of the site (the decks come from `make slides`)"


def _stars(n: int) -> str:
    return "★" * n


def chapter_tables(found: list[Chapter], times: dict, decks: set[str]) -> str:
    out = []
    part = None
    for chapter in found:
        if chapter.part != part:
            part = chapter.part
            out.append(f"### {part}: {chapter.part_title}\n")
        learn = "\n".join(f"- {item}" for item in chapter.learn)
        if chapter.exercises:
            exercises = "\n".join(
                f"- **{e.number}.** {_stars(e.stars)} {e.title}"
                + (f" (`{e.ident}`)" if e.ident else "")
                + ": "
                + (
                    "checked by " + ", ".join(f"`{c}`" for c in e.checkers)
                    if e.checkers
                    else "no checker"
                )
                for e in chapter.exercises
            )
        else:
            exercises = "none"
        explorers = (
            "; ".join(f'`{call}()` in "{section}"' for call, section in chapter.explorers)
            if chapter.explorers
            else "none: the figures are static"
        )
        run = _cpu(chapter.name, times) if chapter.notebook else "no notebook: a text chapter"
        study = (
            f"about {_about(chapter.study_minutes)} (estimate): "
            f"{chapter.words:,} words read at {WORDS_PER_MINUTE} a minute "
            f"({_minutes(chapter.reading_minutes)}), "
            f"exercises {_minutes(chapter.exercise_minutes)}"
        )
        out.append(
            f"#### {{doc}}`{chapter.title} <{chapter.name}>`\n\n"
            f"**What the student learns**\n\n{learn}\n\n"
            "**Teaching it**\n\n"
            f"- **Study time**: {study}\n"
            f"- **Notebook run on a CPU**: {run}\n"
            f"- **Explorer to demonstrate**: {explorers}\n"
            f"- **Slide deck**: {_deck(chapter.name, decks)}\n\n"
            f"**Exercises**\n\n{exercises}\n"
        )
    return "\n".join(out)


def _weeks(minutes: list[int], weeks: int) -> list[int]:
    """Split chapters, in order, into ``weeks`` runs with the smallest largest load;
    the number of chapters in each week."""
    n = len(minutes)
    weeks = min(weeks, n)
    prefix = [0]
    for m in minutes:
        prefix.append(prefix[-1] + m)
    best = {(0, 0): (0, [])}
    for w in range(1, weeks + 1):
        for i in range(w, n - (weeks - w) + 1):
            options = []
            for j in range(w - 1, i):
                if (j, w - 1) in best:
                    load, split = best[(j, w - 1)]
                    options.append((max(load, prefix[i] - prefix[j]), [*split, i - j]))
            best[(i, w)] = min(options)
    return best[(n, weeks)][1]


def course_plans(found: list[Chapter], times: dict) -> str:
    out = []
    for _key, title, parts, weeks, project in PLANS:
        chosen = [c for c in found if c.part in parts]
        split = _weeks([c.study_minutes for c in chosen], weeks)
        total = sum(c.study_minutes for c in chosen)
        project_hours = project * PROJECT_HOURS_PER_WEEK
        span = f"{parts[0]} to {parts[-1]}" if len(parts) > 1 else parts[0]
        head = (
            f"### {title}: {span}, {weeks + project} weeks\n\n"
            f"{len(chosen)} chapters, about {_about(total)} of study in all (estimate)"
        )
        head += f", then a project of {project} weeks.\n" if project else ".\n"
        rows = ["| Week | Chapters | Study (estimate) |", "|---|---|---|"]
        start = 0
        for week, count in enumerate(split, 1):
            group = chosen[start : start + count]
            start += count
            names = "; ".join(f"{{doc}}`{c.title} <{c.name}>`" for c in group)
            rows.append(f"| {week} | {names} | {_about(sum(c.study_minutes for c in group))} |")
        for week in range(weeks + 1, weeks + project + 1):
            rows.append(
                f"| {week} | Project (see below) | about {PROJECT_HOURS_PER_WEEK} h (a suggestion) |"
            )
        if project:
            total += project_hours * 60
            rows.append(f"| All | | about {_about(total)} |")
        out.append(head + "\n" + "\n".join(rows) + "\n")
    return "\n".join(out)


def common_mistakes(found: list[Chapter], table: dict) -> str:
    """Every known mistake, by chapter and checker, each line ``- **name**: diagnosis``."""
    out = []
    placed = set()
    for chapter in found:
        own = [c for c in chapter.checkers if c in table]
        if not own:
            continue
        count = sum(len(table[c]) for c in own)
        out.append(f"### {{doc}}`{chapter.title} <{chapter.name}>`\n\n{count} known mistakes.\n")
        for checker in own:
            placed.add(checker)
            out.append(_checker_block(checker, table[checker]))
    rest = [c for c in table if c not in placed]
    if rest:
        out.append("### Checkers no chapter calls\n")
        out.extend(_checker_block(checker, table[checker]) for checker in rest)
    return "\n".join(out)


def _checker_block(checker: str, mistakes: tuple[tuple[str, str], ...]) -> str:
    lines = [f"`{checker}` knows {len(mistakes)}:\n"]
    lines += [f"- **{escape(name)}**: {escape(diagnosis)}" for name, diagnosis in mistakes]
    return "\n".join(lines) + "\n"


def parse_mistakes(markdown: str) -> dict[str, set[tuple[str, str]]]:
    """The mistakes a generated page lists, read back: checker -> {(name, diagnosis)}."""
    listed: dict[str, set[tuple[str, str]]] = {}
    checker = None
    for line in markdown.splitlines():
        head = re.match(r"^`(check_[a-z0-9_]+)` knows \d+:$", line)
        if head:
            checker = head.group(1)
            listed.setdefault(checker, set())
            continue
        item = re.match(r"^- \*\*(.+?)\*\*: (.+)$", line)
        if item and checker:
            listed[checker].add((unescape(item.group(1)), unescape(item.group(2))))
        elif line.startswith("#"):
            checker = None
    return listed


def _myst_inline(text: str) -> str:
    """Plain text with ``$maths$`` and backtick code kept as MyST reads them, the rest escaped."""
    from attnbook import quiz

    return "".join(part if i % 2 else escape(part) for i, part in enumerate(quiz.spans(text)))


QUESTION_LINE = re.compile(
    r"^- \*\*Question (\d+)\*\* \(([a-z]+)[^)]*\), after \{ref\}`([^`]+)`: (.*) "
    r"Key: \*\*(.+)\*\*\.$"
)


def concept_list(found: list[Chapter], questions: dict[str, list]) -> str:
    """Each chapter's concept questions, in reading order: number, kind, the idea (the
    prompt's first sentence), the section it follows and the key (``attnbook.quiz.key_text``)."""
    from attnbook.quiz import first_sentence, key_text

    out = []
    for chapter in found:
        own = questions.get(chapter.name)
        if not own:
            continue
        deck = next((i for i, q in enumerate(own, 1) if q.deck), None)
        count = f"{len(own)} question{'s' * (len(own) != 1)}"
        head = (
            f"{count}; question {deck} is the deck's concept test."
            if deck
            else f"{count}; none is marked for the deck yet."
        )
        lines = [f"### {{doc}}`{chapter.title} <{chapter.name}>`\n", head, ""]
        for number, q in enumerate(own, 1):
            kind = q.kind + (", several answers" if q.multiple else "")
            kind += ", in the deck" if q.deck else ""
            lines.append(
                f"- **Question {number}** ({kind}), after {{ref}}`{q.section.split('#')[1]}`: "
                f"{_myst_inline(first_sentence(q.prompt))} Key: **{escape(key_text(q))}**."
            )
        out.append("\n".join(lines) + "\n")
    if not out:
        return "No chapter has concept questions yet.\n"
    return "\n".join(out)


def parse_concept_list(markdown: str) -> dict[str, list[tuple[int, str, str, str]]]:
    """The concept questions a generated page lists, read back:
    chapter -> [(number, kind, section label, key)]."""
    listed: dict[str, list[tuple[int, str, str, str]]] = {}
    chapter = None
    for line in markdown.splitlines():
        head = re.match(r"^### \{doc\}`.+ <([a-z0-9-]+)>`$", line)
        if head:
            chapter = head.group(1)
            continue
        item = QUESTION_LINE.match(line)
        if item and chapter:
            number, kind, label, _idea, key = item.groups()
            listed.setdefault(chapter, []).append((int(number), kind, label, unescape(key)))
        elif line.startswith("#"):
            chapter = None
    return listed


def numbers(found: list[Chapter], table: dict, times: dict, root: Path = ROOT) -> dict[str, str]:
    machine = times["machine"]
    config = yaml.safe_load((root / "_config.yml").read_text())
    slowest = max(times["cpu_seconds"], key=times["cpu_seconds"].get)
    titles = {c.name: c.title for c in found}
    return {
        "repository": config["repository"]["url"].rstrip("/"),
        "title": config["title"],
        "author": config["author"],
        "mistakes": str(sum(map(len, table.values()))),
        "checkers": str(len(table)),
        "chapters": str(len(found)),
        "exercises": str(sum(len(c.exercises) for c in found)),
        "checked_exercises": str(sum(1 for c in found for e in c.exercises if e.checkers)),
        "words_per_minute": str(WORDS_PER_MINUTE),
        "one_star": str(EXERCISE_MINUTES[1]),
        "two_stars": str(EXERCISE_MINUTES[2]),
        "three_stars": str(EXERCISE_MINUTES[3]),
        "project_hours": str(PROJECT_HOURS_PER_WEEK),
        "machine": f"{machine['cpu']}, {machine['cores']} cores, torch {machine['torch']}",
        "measured": machine["measured"],
        "load": str(machine["load_average_before"]),
        "slowest": f"{math.ceil(times['cpu_seconds'][slowest])}",
        "wall_slowest": f"{math.ceil(times['seconds'][slowest])}",
        "slowest_name": f"{{doc}}`{titles[slowest]} <{slowest}>`",
    }


def fill(
    source: str, root: Path = ROOT, decks: set[str] | None = None, times_path: Path = TIMES
) -> str:
    """The page's source with every marker and token replaced."""
    found = chapters(root)
    table = known_mistakes()
    times = notebook_times(times_path)
    parts = {
        "chapter-tables": lambda: chapter_tables(found, times, decks or set()),
        "course-plans": lambda: course_plans(found, times),
        "common-mistakes": lambda: common_mistakes(found, table),
        "concept-questions": lambda: concept_list(found, concept_questions()),
    }
    values = numbers(found, table, times, root)

    def block(match: re.Match) -> str:
        if match.group(1) not in parts:
            raise ValueError(f"instructor guide: unknown marker {match.group(0)!r}")
        return parts[match.group(1)]()

    def token(match: re.Match) -> str:
        if match.group(1) not in values:
            raise ValueError(f"instructor guide: unknown token {match.group(0)!r}")
        return values[match.group(1)]

    return TOKEN.sub(token, MARKER.sub(block, source))


# ----------------------------------------------------------------- Sphinx


def decks_in(outdir: str | Path) -> set[str]:
    """The chapters whose deck (``slides/NAME.html`` and ``.pdf``) the site holds."""
    folder = Path(outdir) / "slides"
    return {p.stem for p in folder.glob("*.html") if p.with_suffix(".pdf").is_file()}


def _source_read(app, docname, source):
    if docname == DOCNAME:
        source[0] = fill(source[0], Path(app.srcdir), decks_in(app.outdir))


def _always_reread(app, env, added, changed, removed):
    return [DOCNAME] if DOCNAME in env.found_docs else []


def _static(app, config):
    config.html_static_path = [*config.html_static_path, str(HERE / "guide_static")]


def setup(app):
    app.connect("config-inited", _static)
    app.add_css_file("instructor-guide.css")
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _always_reread)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
