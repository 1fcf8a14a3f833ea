"""attnbook.grading: a submission earns only what its functions' answers earn.

Each test grades a small notebook the way ``make grade`` and the autograder do:
the notebook runs in a worker inside bubblewrap, the checkers run here. The
attacks are those of a teacher's trial (patching the verdict, the checkers, torch,
builtins or the report from the student's own code; reading, writing or
reaching what is outside the submission), and each must earn nothing.

bubblewrap is needed (Debian's package ``bubblewrap``; ``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from attnbook.grading import remote, sandbox, score

RIGHT = "def causal_lengths(batch, queries):\n    return torch.arange(1, queries + 1).repeat(batch, 1)\n"
WRONG = "def causal_lengths(batch, queries):\n    return torch.zeros(batch, queries, dtype=torch.long)\n"
ENTROPY = (
    "def entropy(P):\n"
    "    return -(torch.where(P > 0, P * torch.log(P), torch.zeros_like(P))).sum(-1)\n"
)
HIDDEN = 7
QUESTIONS = [
    score.Question(
        "causal_lengths", 1.0, "check_causal_lengths", "causal_lengths", {0: 5, HIDDEN: 5}
    ),
    score.Question("entropy", 2.0, "check_entropy", "entropy", {0: 5, HIDDEN: 5}),
]


@pytest.fixture(scope="module", autouse=True)
def bubblewrap():
    why = sandbox.check()
    if why is not None:
        pytest.fail(f"these tests need a working bubblewrap: {why}")


def notebook(tmp_path, *cells: str, name: str = "submission") -> os.PathLike:
    path = tmp_path / f"{name}.ipynb"
    head = "import otter\ngrader = otter.Notebook('x.ipynb')\n%matplotlib inline\nimport torch"
    nbformat.write(new_notebook(cells=[new_code_cell(head), *map(new_code_cell, cells)]), path)
    return path


def grade(path, **kwargs) -> score.Graded:
    kwargs.setdefault("timeout", 60)
    return score.grade_notebook(path, QUESTIONS, **kwargs)


def test_right_answers_earn_every_point_and_wrong_ones_none(tmp_path):
    graded = grade(notebook(tmp_path, RIGHT, ENTROPY, "raise ValueError('a broken cell')"))
    assert graded.status == "graded", graded.reason
    assert graded.scores == {"causal_lengths": 1.0, "entropy": 2.0}
    assert graded.cell_errors == ["cell 4: ValueError: a broken cell"]
    graded = grade(notebook(tmp_path, WRONG))
    assert graded.scores == {"causal_lengths": 0.0, "entropy": 0.0}
    assert "no function entropy found" in graded.lines["entropy"][0]
    assert any(
        "Likely mistake" in line or "FAIL" in line for line in graded.lines["causal_lengths"]
    )


ATTACKS = {
    "the verdict replaced": (
        "import attnbook.checks\n"
        "attnbook.checks.case_verdict = lambda *a, **k: (True, '')\n"
        "import attnbook.checks._grading as g\n"
        "g.case_verdict = lambda *a, **k: (True, '')"
    ),
    "the checker's report replaced": (
        "import attnbook.checks._grading as g\n"
        "class Passed:\n    lines = ['  ok'] * 5\n    passed = True\n"
        "g.report_for = lambda *a, **k: Passed()\n"
        "import attnbook.checks as c\nc.report_for = g.report_for\n"
        "c.check_causal_lengths = lambda *a, **k: Passed()"
    ),
    "the report object patched": (
        "from attnbook.checks import CheckReport\n"
        "CheckReport.passed = property(lambda self: True)\n"
        "CheckReport.__bool__ = lambda self: True"
    ),
    "torch patched": (
        "torch.equal = lambda *a, **k: True\ntorch.allclose = lambda *a, **k: True\n"
        "torch.isclose = lambda a, b, **k: torch.ones_like(a, dtype=torch.bool)\n"
        "torch.Tensor.__eq__ = lambda *a: True"
    ),
    "builtins patched": (
        "import builtins\nbuiltins.sum = lambda *a, **k: 5\nbuiltins.all = lambda *a: True\n"
        "builtins.isinstance = lambda *a: True"
    ),
    "the worker's answers forged": (
        # the worker runs as __main__ (patching attnbook.grading.worker, a second
        # copy, would change nothing); its answers still come back as data
        "import sys\n"
        "sys.modules['__main__'].call = lambda m, ns, g: "
        "{'value': {'$opaque': 'bool', 'repr': 'True'}, 'args': []}"
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attack_from_the_notebook_earns_nothing(tmp_path, attack):
    graded = grade(notebook(tmp_path, ATTACKS[attack], WRONG))
    # Graded zero, or (builtins patched break the worker itself) an error: no mark.
    assert graded.scores.get("causal_lengths", 0.0) == 0.0, graded.lines


def test_an_attack_made_at_call_time_earns_nothing(tmp_path):
    patched = (
        "def causal_lengths(batch, queries):\n"
        "    import attnbook.checks, attnbook.checks._grading as g\n"
        "    g.case_verdict = attnbook.checks.case_verdict = lambda *a, **k: (True, '')\n"
        "    g.report_for = lambda *a, **k: None\n"
        "    return torch.zeros(batch, queries, dtype=torch.long)\n"
    )
    graded = grade(notebook(tmp_path, patched))
    assert graded.scores["causal_lengths"] == 0.0


def reach(tmp_path, attempt: str):
    """A notebook whose causal_lengths is right only when ``attempt`` (a cell that
    sets ``reached``) got outside the submission."""
    answer = (
        "def causal_lengths(batch, queries):\n"
        "    if reached:\n"
        "        return torch.arange(1, queries + 1).repeat(batch, 1)\n"
        "    return torch.zeros(batch, queries, dtype=torch.long)\n"
    )
    return grade(
        notebook(tmp_path, f"reached = False\ntry:\n{attempt}\nexcept Exception:\n    pass", answer)
    )


def test_files_outside_the_submission_cannot_be_read_or_written(tmp_path):
    secret = tmp_path / "solutions.txt"
    secret.write_text("the solutions")
    sibling = tmp_path / "other_student.ipynb"
    sibling.write_text("{}")
    outside = tmp_path / f"written-{uuid.uuid4().hex}"
    tmp_marker = f"/tmp/attnbook-{uuid.uuid4().hex}"
    graded = reach(tmp_path, f"    reached = 'solutions' in open({str(secret)!r}).read()")
    assert graded.scores["causal_lengths"] == 0.0
    graded = reach(
        tmp_path,
        f"    open({str(outside)!r}, 'w').write('x')\n"
        f"    open({str(sibling)!r}, 'w').write('overwritten')\n"
        f"    open({tmp_marker!r}, 'w').write('x')\n"
        "    reached = True",
    )
    assert graded.scores["causal_lengths"] == 0.0
    assert not outside.exists() and sibling.read_text() == "{}" and not os.path.exists(tmp_marker)
    # The home folder shows at most the folders of Python that the sandbox binds
    # (pyenv's installation, say), nothing else of it.
    home = os.path.realpath(os.path.expanduser("~"))
    bound = {
        p[len(home) + 1 :].split("/")[0]
        for p in sandbox._python_paths()
        if p.startswith(home + "/")
    }
    private = sorted(set(os.listdir(home)) - bound)
    assert private, "the test needs something in the home folder"
    graded = reach(
        tmp_path, f"    reached = bool(set(__import__('os').listdir({home!r})) & {set(private)!r})"
    )
    assert graded.scores["causal_lengths"] == 0.0


def test_the_grader_and_other_processes_are_out_of_sight(tmp_path):
    """The trial's sibling attack read the grader's command line from /proc."""
    graded = reach(
        tmp_path,
        "    import os\n"
        "    lines = [open(f'/proc/{p}/cmdline', 'rb').read() for p in os.listdir('/proc') if p.isdigit()]\n"
        "    reached = any(b'pytest' in x or b'grade' in x for x in lines)",
    )
    assert graded.scores["causal_lengths"] == 0.0


def test_no_network(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    graded = reach(
        tmp_path,
        f"    import socket\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    reached = True",
    )
    assert graded.scores["causal_lengths"] == 0.0
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_an_endless_loop_fails_its_question_alone(tmp_path):
    endless = "def causal_lengths(batch, queries):\n    while True:\n        pass\n"
    started = time.monotonic()
    graded = grade(notebook(tmp_path, endless, ENTROPY), question_timeout=2)
    assert graded.status == "graded"
    assert graded.scores == {"causal_lengths": 0.0, "entropy": 2.0}
    assert "ran past the time limit of 2 s" in "\n".join(graded.lines["causal_lengths"])
    assert time.monotonic() - started < 30


def test_a_function_that_kills_its_process_fails_its_question_alone(tmp_path):
    dies = "def causal_lengths(batch, queries):\n    import os\n    os._exit(3)\n"
    graded = grade(notebook(tmp_path, dies, ENTROPY))
    assert graded.status == "graded", graded.reason
    assert graded.scores == {"causal_lengths": 0.0, "entropy": 2.0}
    assert "died" in "\n".join(graded.lines["causal_lengths"])


def test_a_function_past_the_memory_limit_fails_its_question(tmp_path):
    greedy = (
        "def causal_lengths(batch, queries):\n"
        "    hoard = torch.ones(2**40, dtype=torch.uint8)\n"
        "    return torch.arange(1, queries + 1).repeat(batch, 1)\n"
    )
    graded = grade(notebook(tmp_path, greedy, ENTROPY))
    assert graded.scores == {"causal_lengths": 0.0, "entropy": 2.0}


@pytest.mark.parametrize(
    "cell, limit, words",
    [
        ("import os\nos._exit(0)", 60.0, "could not be run: its process exited with status 0"),
        ("while True:\n    pass", 3.0, "could not be run: no answer within 3 s"),
    ],
)
def test_a_notebook_that_cannot_run_is_an_error_not_a_zero(
    tmp_path, cell, limit, words, monkeypatch
):
    monkeypatch.setattr(remote, "START_TIMEOUT", limit)
    graded = grade(notebook(tmp_path, RIGHT, cell))
    assert graded.status == "error" and graded.scores == {}
    assert words in graded.reason


def test_a_submission_past_its_time_limit_is_an_error(tmp_path):
    slow = (
        "def causal_lengths(batch, queries):\n    import time\n    time.sleep(2)\n    return None\n"
    )
    graded = grade(notebook(tmp_path, slow, ENTROPY), timeout=4, question_timeout=30)
    assert graded.status == "error" and "ran past its time limit" in graded.reason


def test_in_place_edits_and_gradients_cross_the_process_boundary(tmp_path):
    """The checkers see an in-place edit made in the worker, and gradients flow back."""
    from attnbook.checks import check_masked_softmax

    edits = (
        "def masked_softmax_renorm(X, valid_lens):\n"
        "    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(X.shape[:2])\n"
        "    keep = torch.arange(X.shape[-1]) < lens[..., None]\n"
        "    Z = torch.where(keep, X, X.amin(-1, keepdim=True))\n"
        "    e = torch.exp(Z - Z.amax(-1, keepdim=True)) * keep\n"
        "    out = e / e.sum(-1, keepdim=True).clamp_min(1e-30)\n"
        "    X.detach().mul_(2)  # the slip: the caller's scores doubled\n"
        "    return out\n"
    )
    path = notebook(tmp_path, edits)
    with remote.Submission(path, deadline=time.monotonic() + 60) as submission:
        submission.start()
        proxy = submission.function("masked_softmax_renorm")
        report = check_masked_softmax(proxy)
    assert "modified its input in place" in repr(report)
    X = torch_tensor = __import__("torch").randn(2, 3, 4, requires_grad=True)
    lengths = __import__("torch").tensor([1, 3])
    path = notebook(tmp_path, "from attnbook import masking\nf = masking.masked_softmax", name="g")
    with remote.Submission(path, deadline=time.monotonic() + 60) as submission:
        out = submission.function("f")(X, lengths)
        (out * torch_tensor.new_tensor(range(4))).sum().backward()
    from attnbook import masking

    leaf = X.detach().clone().requires_grad_(True)
    (masking.masked_softmax(leaf, lengths) * leaf.new_tensor(range(4))).sum().backward()
    assert out.grad_fn is not None
    assert (X.grad - leaf.grad).abs().max() < 1e-6


@pytest.mark.parametrize(
    "cell",
    [
        "from attnbook import masking\n"
        "def masked_softmax_renorm(X, valid_lens):\n"
        "    return masking.masked_softmax(X, valid_lens)\n",
        "from attnbook.masking import masked_softmax\n"
        "def helper(X, lens):\n    return masked_softmax(X, lens)\n"
        "def masked_softmax_renorm(X, valid_lens):\n    return helper(X, valid_lens)\n",
        "from attnbook import masking\nmasked_softmax_renorm = masking.masked_softmax\n",
    ],
    ids=["module attribute", "imported name through a helper", "the book's function itself"],
)
def test_a_forbidden_shortcut_is_refused_through_the_grader(tmp_path, cell):
    """The trial's s20: the from-scratch masked softmax answered with the book's own."""
    from attnbook.checks import check_masked_softmax

    with remote.Submission(notebook(tmp_path, cell), deadline=time.monotonic() + 60) as submission:
        report = check_masked_softmax(submission.function("masked_softmax_renorm"))
    assert not any(line.lstrip().startswith("ok") for line in report.lines)
    assert report.mistake.startswith("refused"), repr(report)


# Concept questions (attnbook.grading.concepts): the concept questions' fixture that
# both test trees share (quiz_fixture.toml, one question of each kind), as a chapter.
CONCEPT_TOML = Path(__file__).with_name("quiz_fixture.toml").read_text(encoding="utf-8")


def concept_questions() -> list[score.Concept]:
    from attnbook.grading import concepts
    from attnbook.quiz import parse

    return [
        score.Concept(f"concept_{q.id}", 1.0, q.key, concepts.spec(q))
        for q in parse("fixture-chapter", CONCEPT_TOML)
    ]


def concept_notebook(tmp_path, *lines: str, name: str = "concepts"):
    return notebook(tmp_path, "answers = {}", *lines, name=name)


def test_concept_answers_are_judged_in_the_grader_with_the_books_feedback(tmp_path):
    """The answers come back from the worker as data: a letter, a set of letters, a
    number; right ones earn the point, wrong ones nothing and the option's feedback."""
    questions = [*concept_questions(), QUESTIONS[0]]
    right = concept_notebook(
        tmp_path,
        'answers["variance-grows"] = "c"',
        'answers["scores-row"] = {"A", "C"}',
        'answers["far-weight"] = "1/4"',
        'answers["width-predict"] = "B"',
        RIGHT,
    )
    graded = score.grade_notebook(right, questions, timeout=60)
    assert graded.status == "graded", graded.reason
    assert graded.scores == {
        "concept_variance-grows": 1.0,
        "concept_scores-row": 1.0,
        "concept_far-weight": 1.0,
        "concept_width-predict": 1.0,
        "causal_lengths": 1.0,
    }
    wrong = concept_notebook(
        tmp_path,
        'answers["variance-grows"] = "B"',
        'answers["scores-row"] = "A, B"',
        'answers["far-weight"] = 0.75',
        'answers["width-predict"] = "C"',
        name="wrong",
    )
    graded = score.grade_notebook(wrong, questions, timeout=60)
    assert graded.scores["concept_variance-grows"] == 0.0
    assert graded.scores["concept_far-weight"] == graded.scores["concept_scores-row"] == 0.0
    assert graded.scores["concept_width-predict"] == 0.0
    lines = graded.lines
    assert "B: not right. The scale removes the growth." in lines["concept_variance-grows"]
    assert lines["concept_far-weight"][0] == (
        "Not quite. That is the other key's weight. Read the order of the scores again."
    )
    assert (
        "B: not right. The larger score gets the larger weight: the second key's."
        in (lines["concept_scores-row"])
    )
    assert (
        "C: not right. The width sets how far the kernel reaches."
        in (lines["concept_width-predict"])
    )
    assert lines["concept_far-weight"][1].endswith("fixture-chapter.html#sec-b")


LIES = {
    "a str and a float whose == always says yes": (
        "class A(str):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = str.__hash__\n"
        "class F(float):\n    def __eq__(self, other):\n        return True\n"
        "    def __sub__(self, other):\n        return 0.0\n"
        "    __hash__ = float.__hash__\n"
        "answers['variance-grows'] = A('Z')\nanswers['far-weight'] = F(9)"
    ),
    "the worker's answers forged": (
        "import sys\n"  # the worker runs as __main__
        "sys.modules['__main__'].values = lambda m, ns: {\n"
        "    'value': {k: {'$opaque': 'str', 'repr': 'A'} for k in m['keys']}\n"
        "}"
    ),
    "the judge patched": (
        "import attnbook.grading.concepts as c\nc.judge = lambda *a: (True, [])\n"
        "c._is = lambda *a: True\nanswers['variance-grows'] = 'A'\nanswers['far-weight'] = 9"
    ),
}


@pytest.mark.parametrize("lie", list(LIES))
def test_a_lying_answer_earns_nothing(tmp_path, lie):
    graded = score.grade_notebook(
        concept_notebook(tmp_path, LIES[lie]), concept_questions(), timeout=60
    )
    assert graded.status == "graded", graded.reason
    assert graded.scores["concept_variance-grows"] == 0.0, graded.lines
    assert graded.scores["concept_far-weight"] == 0.0, graded.lines
