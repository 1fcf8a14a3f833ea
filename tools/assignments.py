"""Graded assignments from the chapters' exercises, with otter-grader.

For each chapter with checked exercises (or for the exercises named with
``--exercises id,id,...``) this writes an otter master notebook,
``_build/assignments/NAME/master.ipynb``, then runs ``otter assign`` on it into
``_build/assignments/NAME/student/`` (what students get: answers replaced by
``...``, public tests only) and ``_build/assignments/NAME/autograder/`` (the
zip to grade with, and the solutions: never hand these out). NAME is the
chapter's file name, e.g. masked-softmax.

The master is built from the exercise metadata (tools/exercise_metadata.py):

- the install cell pinned to the book's branch or tag (_config.yml), then the
  chapter's ``setup`` cells;
- each checked exercise as a question worth its stars, the solution being the
  solution cell's function renamed to the answer's name (with the helpers it
  uses); one test per checker case, public (the book's cases, the student sees
  the checker's report) and the same again hidden, on fresh random inputs
  (``attnbook.checks.case_verdict(..., seed=S)``, S drawn for each build from
  the system's randomness, or ``--seed``). The question's points are
  shared evenly among its tests, so a student earns the share of the cases
  their function passes; the checker runs once per question and seed;
- each written exercise as a manually graded question, its folded solution as
  the rubric;
- before the exercises, the chapter's concept questions (attnbook.quiz, the
  book's "Check your understanding"), one point each: the question as Markdown
  (prompt and lettered options), and a cell ``answers["ID"] = ...`` where the
  student writes a letter in quotes ("B"), the letters of every right option
  ("AC") or a number. Its one public test judges the answer with
  attnbook.grading.concepts and fails with the book's feedback (the picked
  option's, the numeric wrong value's, or ``otherwise``); the data it judges
  with (the key and that feedback) is written into the test, and the grader
  reads it from there and judges the answer the worker sends back as data.

Run by ``make assignments``: this script in .venv, ``otter assign`` from
.venv-otter (otter-grader and attnbook from lib/), named by ``--otter``. ``otter assign`` runs the solutions against every test, so a build that
finishes has full marks for the solutions. After the build, no line of a
solution, no rubric and no hidden test may appear in student/ (checked here).

    python -m tools.assignments [--exercises ID,ID] [--out DIR] [CHAPTER ...]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from tools import nbtools
from tools.exercise_metadata import DROPDOWN, KEY, exercises

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
OUT = ROOT / "_build" / "assignments"
# The hidden tests' fresh cases come from a seed drawn for each build
# (attnbook.checks.report_for), written only into the autograder's tests and
# the teacher's master; --seed fixes it (make assignments SEED=...).
SEED_RANGE = 2**31 - 1


def draw_seed() -> int:
    """A hidden seed from the operating system's randomness: 1 to 2**31 - 1 (0 is the book's)."""
    import secrets

    return 1 + secrets.randbelow(SEED_RANGE)


# torch's CPU wheels, for the autograder's requirements (Gradescope installs them).
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
# The grading environment's lock: the autograder pins attnbook's dependencies to it.
OTTER_LOCK = ROOT / "tools" / "requirements-otter.txt"
# The line under an exercise that points at its folded solution.
POINTER = re.compile(r"^Solution: open the dropdown.*$", re.M)
# The dict the student's answers to the concept questions go into.
CONCEPT_ANSWERS = "answers"


@dataclass
class Question:
    """One exercise of the assignment: checked (answer, check) or written (rubric)."""

    ident: str
    name: str  # otter's question name: the id's last part, in underscores
    stars: int
    prompt: str
    answer: str | None = None
    check: str | None = None
    solution: str | None = None  # the master's solution code
    rubric: str | None = None  # a written exercise's folded solution
    cases: int = 0
    solution_lines: list[str] = field(default_factory=list)
    concept: dict | None = None  # a concept question: attnbook.grading.concepts.spec


def concept_name(key: str) -> str:
    """otter's question name of the concept question ``chapter/id``."""
    return "concept_" + key.split("/", 1)[1].replace("-", "_")


def read_concepts(chapter: str, wanted: set[str] | None) -> list[Question]:
    """The chapter's concept questions (attnbook.quiz), all or those whose key is in
    ``wanted``, as assignment questions worth one point each; none for a chapter
    without a question file."""
    from attnbook import quiz
    from attnbook.grading import concepts

    if chapter not in quiz.chapters():
        return []
    out = []
    for q in quiz.load(chapter):
        if wanted is not None and q.key not in wanted:
            continue
        data = concepts.spec(q)
        lines = [
            f"- **{quiz.LETTERS[i]}.** {' '.join(o.text.split())}" for i, o in enumerate(q.options)
        ]
        unit = f" (in {q.unit})" if q.unit else ""
        prompt = f"**Concept question** ({concepts.POINTS} point){unit}.\n\n{q.prompt.strip()}"
        if lines:
            prompt += "\n\n" + "\n".join(lines)
        answer = f'{concepts.ANSWERS}["{q.id}"] = {concepts.solution(data)}'
        out.append(
            Question(
                ident=q.key,
                name=concept_name(q.key),
                stars=concepts.POINTS,
                prompt=prompt,
                solution=f"{concepts.how_to_answer(data)}\n{answer}  # SOLUTION",
                solution_lines=[answer],
                concept=data,
            )
        )
    return out


def concept_test(question: Question) -> str:
    """The concept question's public test: the book's feedback on the student's answer."""
    import pprint

    data = pprint.pformat(question.concept, indent=1, width=88, sort_dicts=False)
    data = data.replace("\n", "\n        ")
    return (
        "def test_concept(answers):\n"
        f'    """Concept question {question.ident}: the book\'s feedback on your answer."""\n'
        "    from attnbook.grading.concepts import verdict as concept_verdict\n\n"
        "    right, why = concept_verdict(\n"
        f'        "{question.ident}",\n'
        "        answers,\n"
        f"        {data},\n"
        "    )\n"
        "    assert right, why\n\n\n"
        "test_concept(answers)"
    )


def question_name(ident: str) -> str:
    return ident.split("/", 1)[1].replace("-", "_")


def _code(source: str) -> str:
    """A cell's code without IPython's % and ! lines (otter runs plain Python)."""
    return "\n".join(
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )


def solution_code(source: str, solution: str, answer: str) -> str:
    """The master's solution: the solution function renamed to ``answer``, its body
    between otter's solution markers, after the cell's definitions it uses
    (functions, imports, constants), which the student's notebook leaves out."""
    source = _code(source)
    tree = ast.parse(source)
    binds: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            binds[node.name] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                binds[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        binds[name.id] = node
    if solution not in binds or not isinstance(binds[solution], ast.FunctionDef):
        raise ValueError(f"solution must be a function the cell defines, got {solution!r}")
    main = binds[solution]
    needed: list[ast.stmt] = []
    todo = [main]
    while todo:
        node = todo.pop()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in binds:
                found = binds[sub.id]
                if found is not main and found not in needed:
                    needed.append(found)
                    todo.append(found)
    needed.sort(key=lambda n: n.lineno)
    lines = source.splitlines()
    rename = re.compile(rf"\b{re.escape(solution)}\b")

    def text(node: ast.stmt) -> str:
        return rename.sub(answer, "\n".join(lines[node.lineno - 1 : node.end_lineno]))

    header = "\n".join(lines[main.lineno - 1 : main.body[0].lineno - 1])
    body = "\n".join(lines[main.body[0].lineno - 1 : main.end_lineno])
    indent = re.match(r"\s*", body).group(0)
    parts = []
    if needed:
        helpers = "\n\n\n".join(text(n) for n in needed)
        parts.append(f"# BEGIN SOLUTION NO PROMPT\n{helpers}\n# END SOLUTION")
    parts.append(
        rename.sub(answer, header)
        + f"\n{indent}# BEGIN SOLUTION\n{rename.sub(answer, body)}\n{indent}# END SOLUTION"
    )
    return "\n\n\n".join(parts)


def case_count(check: str, seed: int) -> int:
    """How many cases ``check`` runs (the same for the public and the hidden ``seed``)."""
    from attnbook.checks import report_for

    def nothing(*args, **kwargs):
        return None

    counts = {len(report_for(check, nothing, seed=s).lines) for s in (0, seed)}
    if len(counts) != 1:
        raise ValueError(f"{check} runs {sorted(counts)} cases under seeds 0 and {seed}")
    return counts.pop()


def test_cell(question: Question, case: int, hidden: bool, seed: int) -> str:
    seed = seed if hidden else 0
    config = '""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\n' if hidden else ""
    kind = "fresh inputs" if hidden else "the book's case"
    function = f"test_{'hidden' if hidden else 'case'}_{case}"
    return (
        f"{config}def {function}({question.answer}):\n"
        f'    """Case {case + 1} of {question.check} ({kind})."""\n'
        f"    from attnbook.checks import case_verdict\n\n"
        f"    passed, why = case_verdict(\n"
        f'        "{question.check}", {question.answer}, {case}, seed={seed}, '
        f'answer="{question.answer}"\n'
        f"    )\n"
        f"    assert passed, why\n\n\n"
        f"{function}({question.answer})"
    )


def _dropdown_body(text: str) -> str:
    match = DROPDOWN.search(text)
    if match is None:
        return ""
    lines = match.group(0).split("\n")[1:-1]
    return "\n".join(lines).strip("\n")


def read_questions(path: Path, wanted: set[str] | None, converter, seed: int) -> list[Question]:
    """The chapter's exercises as questions (all, or those whose id is in ``wanted``)."""
    nb = nbformat.read(path, as_version=4)
    found = exercises(nb)
    questions: list[Question] = []
    by_id: dict[str, Question] = {}
    for exercise in found:
        listed = nb.cells[exercise.cell].metadata.get(KEY, {}).get("exercises", [])
        in_cell = [e for e in found if e.cell == exercise.cell]
        entry = listed[in_cell.index(exercise)] if len(listed) == len(in_cell) else None
        if entry is None:
            raise ValueError(
                f"{path.name}: exercise {exercise.number} has no id; "
                f"run python -m tools.exercise_metadata {path.relative_to(ROOT)}"
            )
        question = Question(
            ident=entry["exercise"],
            name=question_name(entry["exercise"]),
            stars=entry["stars"],
            prompt=converter.markdown(POINTER.sub("", exercise.text).strip()),
            rubric=converter.markdown(_dropdown_body(exercise.raw)) or None,
        )
        by_id[question.ident] = question
        questions.append(question)
    for cell in nb.cells:
        meta = cell.metadata.get(KEY, {})
        if "check" in meta:
            question = by_id[meta["exercise"]]
            question.answer, question.check = meta["answer"], meta["check"]
            question.solution = solution_code(cell.source, meta["solution"], meta["answer"])
            question.solution_lines = [
                line.strip()
                for line in question.solution.splitlines()
                if len(line.strip()) > 12 and not line.strip().startswith(("#", "def ", "return"))
            ]
            question.rubric = None
            question.cases = case_count(question.check, seed)
    if wanted is not None:
        questions = [q for q in questions if q.ident in wanted]
    return questions


def assignment_config(name: str) -> str:
    return f"""# ASSIGNMENT CONFIG
name: {name}
requirements: requirements.txt
python_version: "3.11"
export_cell:
    pdf: false
    instructions: "Save this notebook, run this cell, and hand in the zip file it makes."
generate:
    pdf: false
    show_stdout: true
    show_hidden: false
tests:
    ok_format: false
"""


def written_code(question: Question) -> str | None:
    """A code answer cell for a written exercise that asks for a function ("Write
    `name(...)`"): the model answer's first Python block, hidden from the student
    behind otter's solution markers, so that the student gets a code cell to
    write in beside the text cell. None when the exercise asks for no code."""
    if not re.search(r"\bWrite\s+`\w+\(", question.prompt) or not question.rubric:
        return None
    block = re.search(r"```python\n(.*?)```", question.rubric, re.S)
    if block is None:
        return None
    return (
        f"# Your code here.\n# BEGIN SOLUTION NO PROMPT\n{block.group(1).rstrip()}\n# END SOLUTION"
    )


def master(
    path: Path, questions: list[Question], seed: int, ref: str | None = None
) -> nbformat.NotebookNode:
    """The otter master notebook of a chapter's chosen exercises; its install cell
    installs attnbook at ``ref`` (a commit; default: _config.yml's branch or tag)."""
    chapter = nbformat.read(path, as_version=4)
    title = re.search(r"^# (.+)$", chapter.cells[0].source, re.M).group(1)
    setup = [
        new_code_cell(_code(c.source))
        for c in chapter.cells
        if c.cell_type == "code" and "setup" in c.metadata.get("tags", [])
    ]
    concepts = [q for q in questions if q.concept is not None]
    questions = [q for q in questions if q.concept is None]
    total = sum(q.stars for q in questions)
    intro = (
        f"The exercises of the chapter, {len(questions)} questions worth {total} points "
        "(one point per star). A checked exercise earns its points case by case: "
        "`grader.check` runs the book's checker on your function and shows its report; "
        "the grader also runs it on fresh inputs. Run the cells from the top, write "
        "each answer in the cell under its question, and keep the function names."
    )
    if concepts:
        intro = (
            f"First the chapter's {len(concepts)} concept questions, one point each: "
            f'write your answer in the cell under each, as `answers["..."] = "B"` (a letter '
            'in quotes; all the right letters in one string, such as `"AC"`, where several '
            "are right) or a number; `grader.check` shows the book's feedback on it. Then "
            + intro[0].lower()
            + intro[1:]
        )
    cells = [
        new_raw_cell(assignment_config(path.stem)),
        new_markdown_cell(f"# {title}: exercises\n\n{intro}"),
        new_code_cell(nbtools.install_cell_source(ref=ref)),
        *setup,
    ]
    if concepts:
        cells += [
            new_markdown_cell("## Check your understanding"),
            new_code_cell(f"{CONCEPT_ANSWERS} = {{}}  # your answers to the concept questions"),
        ]
    for q in concepts:
        cells += [
            new_raw_cell(f"# BEGIN QUESTION\nname: {q.name}\npoints: {q.stars}"),
            new_markdown_cell(q.prompt),
            new_raw_cell("# BEGIN SOLUTION"),
            new_code_cell(q.solution),
            new_raw_cell("# END SOLUTION"),
            new_raw_cell("# BEGIN TESTS"),
            new_code_cell(concept_test(q)),
            new_raw_cell("# END TESTS"),
            new_raw_cell("# END QUESTION"),
        ]
    if concepts and questions:
        cells.append(new_markdown_cell("## Exercises"))
    for q in questions:
        if q.check is None:
            code = written_code(q)
            cells += [
                new_raw_cell(f"# BEGIN QUESTION\nname: {q.name}\nmanual: true\npoints: {q.stars}"),
                new_markdown_cell(q.prompt),
                new_raw_cell("# BEGIN SOLUTION"),
                *([new_code_cell(code)] if code else []),
                new_markdown_cell(q.rubric or "(no model answer in the book)"),
                new_raw_cell("# END SOLUTION"),
                new_raw_cell("# END QUESTION"),
            ]
            continue
        tests = [test_cell(q, i, hidden=False, seed=seed) for i in range(q.cases)]
        tests += [test_cell(q, i, hidden=True, seed=seed) for i in range(q.cases)]
        cells += [
            new_raw_cell(f"# BEGIN QUESTION\nname: {q.name}\npoints: {q.stars}"),
            new_markdown_cell(q.prompt),
            new_raw_cell("# BEGIN SOLUTION"),
            new_code_cell(q.solution),
            new_raw_cell("# END SOLUTION"),
            new_raw_cell("# BEGIN TESTS"),
            *[new_code_cell(t) for t in tests],
            new_raw_cell("# END TESTS"),
            new_raw_cell("# END QUESTION"),
        ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_entries(lock: Path = OTTER_LOCK) -> list[tuple[str, str, set[str]]]:
    """The lock's packages: (normalised name, its requirement line, what it is there via)."""
    entries: list[tuple[str, str, set[str]]] = []
    for line in lock.read_text().splitlines():
        if line and not line.startswith((" ", "#", "-")):
            name = re.match(r"[A-Za-z0-9_.-]+", line).group(0)
            entries.append((_normalise(name), line.strip(), set()))
        elif entries and line.strip().startswith("#"):
            via = line.strip().lstrip("#").strip()
            via = via.removeprefix("via").strip()
            if via and not via.startswith("-r"):
                entries[-1][2].add(_normalise(via))
    return entries


def attnbook_dependencies(pyproject: Path = ROOT / "lib" / "pyproject.toml") -> set[str]:
    import tomllib
    from packaging.requirements import Requirement

    declared = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    # Those the grading's Python (3.11, as the assignment's config says) installs:
    # tomli, for Python 3.10 only, is not among them.
    wanted = [Requirement(d) for d in declared]
    return {
        _normalise(r.name)
        for r in wanted
        if r.marker is None or r.marker.evaluate({"python_version": "3.11"})
    }


def requirements(lock: Path = OTTER_LOCK) -> str:
    """What the autograder installs (Gradescope) besides attnbook's wheel: attnbook's
    dependencies and theirs, each at the version tools/requirements-otter.txt pins
    (the lock `make assignments` and `make grade` run with), torch's CPU build from
    PyTorch's index. Otter itself is not installed: the zip's run_autograder grades
    with attnbook.grading."""
    entries = lock_entries(lock)
    needed = set(attnbook_dependencies())
    missing = needed - {name for name, _, _ in entries}
    if missing:
        raise ValueError(f"{lock.name} does not pin attnbook's dependencies {sorted(missing)}")
    grew = True
    while grew:
        grew = False
        for name, _, via in entries:
            if name not in needed and via & needed:
                needed.add(name)
                grew = True
    lines = [line for name, line, _ in entries if name in needed]
    return (
        f"# attnbook's dependencies, pinned as {lock.relative_to(ROOT)} pins them\n"
        f"--extra-index-url {TORCH_INDEX}\n" + "\n".join(lines) + "\n"
    )


def for_colab(path: Path, questions: list[Question]) -> None:
    """Let the student notebook run in Colab: the install cell first, then otter's
    first cell made to start, in Colab only, attnbook.grading.colab's stand-in
    (otter 7 cannot find its tests there) instead of otter."""
    nb = nbformat.read(path, as_version=4)
    (init,) = [c for c in nb.cells if c.cell_type == "code" and "otter.Notebook(" in c.source]
    (install,) = [
        c for c in nb.cells if c.cell_type == "code" and "Colab only: install" in c.source
    ]
    checked = {q.name: (q.check, q.answer) for q in questions if q.check}
    checked.update({q.name: ("concept", q.ident) for q in questions if q.concept is not None})
    pairs = "".join(f"\n        {name!r}: {pair!r}," for name, pair in checked.items())
    init.source = (
        "# Initialize Otter. In Colab, where otter cannot run this notebook, the book's own\n"
        "# checks stand in for it (attnbook.grading.colab): grader.check shows the same report.\n"
        "import sys\n\n"
        'if "google.colab" in sys.modules:\n'
        "    from attnbook.grading.colab import Notebook\n\n"
        f"    grader = Notebook({{{pairs}\n    }})\n"
        "else:\n"
        "    import otter\n\n"
        f'    grader = otter.Notebook("{path.name}")'
    )
    nb.cells.remove(install)
    nb.cells.insert(0, install)
    nbformat.write(nb, path)


def source_commit(root: Path = ROOT) -> tuple[str | None, bool]:
    """The commit the tree is at (None outside git) and whether lib/ differs from it."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "lib"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None, True
    return sha, bool(changed)


def build_wheel(out: Path) -> Path:
    """attnbook's wheel, built from lib/ as `make dist` builds it, into ``out``."""
    from tools import release

    (wheel,) = [p for p in release.dist(out) if p.suffix == ".whl"]
    return wheel


#: otter's files of its Gradescope zip that ours replace or drop (environment.yml
#: and run_otter.py install and run otter, from conda and a git host).
OTTER_ONLY = {"run_autograder", "setup.sh", "run_otter.py", "environment.yml", "requirements.txt"}
GRADESCOPE = Path(__file__).resolve().parent / "gradescope"


def gradescope_zip(path: Path, wheel: Path, commit: str | None, changed: bool) -> None:
    """Rewrite otter's autograder zip for Gradescope: its tests and configuration,
    our setup.sh, install.sh and run_autograder (tools/gradescope/), the pinned
    requirements and attnbook's wheel (wheels/), and attnbook.json (the version and
    the commit it was built from)."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        kept = [(i, archive.read(i)) for i in archive.infolist() if i.filename not in OTTER_ONLY]
    version = re.match(r"attnbook-([^-]+)-", wheel.name).group(1)
    info = {"attnbook": version, "commit": commit, "lib_changed_since_commit": changed}
    added = {
        "requirements.txt": (requirements().encode(), 0o644),
        f"wheels/{wheel.name}": (wheel.read_bytes(), 0o644),
        "attnbook.json": (json.dumps(info, indent=1).encode() + b"\n", 0o644),
    }
    for name in ("setup.sh", "install.sh", "run_autograder"):
        added[name] = ((GRADESCOPE / name).read_bytes(), 0o755)
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        for name, (data, mode) in added.items():
            item = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            item.external_attr = (0o100000 | mode) << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(item, data)
        for item, data in kept:
            out.writestr(item, data)
    tmp.replace(path)


def leaks(student: Path, questions: list[Question], seed: int) -> list[str]:
    """Anything of the solutions that reached the student's notebook."""
    found = []
    for path in sorted(student.glob("*.ipynb")):
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        embedded = json.dumps(nbformat.read(path, as_version=4).metadata)
        for q in questions:
            for line in q.solution_lines:
                if line in text:
                    found.append(f"{path.name}: solution line of {q.name}: {line!r}")
            if q.rubric:
                for sentence in re.split(r"(?<=[.!?])\s+", q.rubric):
                    if len(sentence) > 40 and sentence in text:
                        found.append(f"{path.name}: rubric of {q.name}: {sentence[:60]!r}")
        seen = re.search(rf"seed\s*=\s*{seed}\b", text + embedded) or (
            len(str(seed)) >= 6 and re.search(rf"\b{seed}\b", text + embedded)
        )
        if seen:
            found.append(f"{path.name}: a hidden test")
        if "solution_" in text:
            found.append(f"{path.name}: a name starting solution_")
    return found


def _pinned(package: str) -> str:
    """``package==version`` as tools/requirements-otter.txt locks it."""
    lock = (ROOT / "tools" / "requirements-otter.txt").read_text()
    found = re.search(rf"^{re.escape(package)}==([^\s;\\]+)", lock, re.M)
    if found is None:
        raise ValueError(f"tools/requirements-otter.txt locks no {package}")
    return f"{package}=={found.group(1)}"


def student_readme(name: str, wheel: str) -> str:
    """How a student installs what the assignment's notebook needs (student/README.md)."""
    return f"""# {name}: the assignment

Open `{name}.ipynb`, answer each question in the cell under it, run the
`grader.check` cells to see the book's checker on your answers, then hand in
the notebook as your teacher asks.

## In Colab

Upload `{name}.ipynb` to Colab (File, Upload notebook) and run the cells from
the top: the first cell installs what the notebook needs. To hand it in, save
it, then File, Download, Download .ipynb.

## On your own machine

With Python 3.11, in a fresh virtual environment, from this folder:

```bash
python3.11 -m venv .venv
. .venv/bin/activate
pip install {_pinned("torch")} --index-url https://download.pytorch.org/whl/cpu
pip install ./{wheel} {_pinned("otter-grader")} jupyterlab
jupyter lab {name}.ipynb
```

`{wheel}` is the book's library, `attnbook`, at the version this assignment
was built with: install that file, not another version, so that the checkers
are the ones your work is graded with. The last cell of the notebook makes a
zip file to hand in; the notebook itself will do too.
"""


def build(
    path: Path,
    wanted: set[str] | None,
    out: Path,
    otter: str,
    book,
    seed: int | None = None,
    wheel: Path | None = None,
) -> Path | None:
    """Write the master of one chapter and run otter assign; the assignment's folder.
    ``book`` is the reader's edition's scan of the book (its links and citations);
    ``wheel`` is attnbook's wheel for the autograder zip (built here if None)."""
    from tools.readers_edition import Converter

    seed = draw_seed() if seed is None else seed
    questions = read_concepts(path.stem, wanted)
    questions += read_questions(path, wanted, Converter(book, path.stem), seed)
    if not any(q.check or q.concept for q in questions):
        return None
    folder = out / path.stem
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    commit, changed = source_commit()
    nbformat.write(master(path, questions, seed, ref=commit), folder / f"{path.stem}.ipynb")
    (folder / "requirements.txt").write_text(requirements())
    started = time.perf_counter()
    otter = os.path.abspath(otter)
    subprocess.run([otter, "assign", f"{path.stem}.ipynb", "."], cwd=folder, check=True)
    for student in (folder / "student").glob("*.ipynb"):
        for_colab(student, questions)
    found = leaks(folder / "student", questions, seed)
    if found:
        raise SystemExit("solutions reached student/:\n" + "\n".join(found))
    if wheel is None:
        wheel = build_wheel(folder / "dist")
    zips = sorted((folder / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise SystemExit(f"{folder}/autograder: expected one zip from otter, found {len(zips)}")
    gradescope_zip(zips[0], wheel, commit, changed)
    shutil.copy2(wheel, folder / "student" / wheel.name)
    (folder / "student" / "README.md").write_text(student_readme(path.stem, wheel.name))
    if changed or commit is None:
        print(
            f"{path.stem}: warning: lib/ differs from commit {commit}: the zip's wheel is "
            "this tree's attnbook, the student notebook's install cell names the commit"
        )
    (folder / "questions.json").write_text(
        json.dumps(
            [
                {
                    "name": q.name,
                    "exercise": q.ident,
                    "points": q.stars,
                    "checked": bool(q.check or q.concept),
                    **({"concept": True} if q.concept else {}),
                }
                for q in questions
            ],
            indent=1,
        )
        + "\n"
    )
    print(
        f"{path.stem}: {len(questions)} questions, otter assign {time.perf_counter() - started:.1f} s"
    )
    return folder


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", type=Path)
    parser.add_argument(
        "--exercises", default="", help="exercise ids or concept question keys, comma-separated"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--otter", default=str(ROOT / ".venv-otter" / "bin" / "otter"))
    parser.add_argument(
        "--seed", type=int, default=None, help="the hidden seed (default: drawn per assignment)"
    )
    args = parser.parse_args(argv)
    if args.seed is not None and not 0 < args.seed <= SEED_RANGE:
        raise SystemExit(f"--seed must be between 1 and {SEED_RANGE}, got {args.seed}")
    wanted = {e.strip() for e in args.exercises.split(",") if e.strip()} or None
    paths = args.chapters or sorted(BOOK.glob("*.ipynb"))
    if wanted is not None:
        chapters = {w.split("/", 1)[0] for w in wanted}
        unknown = chapters - {p.stem for p in sorted(BOOK.glob("*.ipynb"))}
        if unknown:
            raise SystemExit(f"--exercises: no chapter named {sorted(unknown)}")
        paths = [p for p in paths if p.stem in chapters]
    from tools.readers_edition import scan_book

    book = scan_book()
    built = []
    import tempfile

    with tempfile.TemporaryDirectory(prefix="attnbook-wheel-") as scratch:
        wheel = build_wheel(Path(scratch))
        for path in paths:
            folder = build(path, wanted, args.out, args.otter, book, args.seed, wheel)
            if folder is not None:
                built.append(folder)
    if wanted is not None:
        got = {q["exercise"] for f in built for q in json.loads((f / "questions.json").read_text())}
        if wanted - got:
            raise SystemExit(
                f"--exercises: no such checked chapter exercise or concept question "
                f"{sorted(wanted - got)}"
            )
    print(f"{len(built)} assignments in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
