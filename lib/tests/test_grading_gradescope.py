"""attnbook.grading.gradescope: Gradescope's run_autograder writes a results.json on
every path, in Gradescope's documented format, and isolates the notebook.

The end-to-end run of a real zip, installed offline as setup.sh installs it,
is tests/test_gradescope_zip.py (slow tier). Here: a fake /autograder under
tmp_path with a tests/ folder in the zip's format, graded by ``main``; the
choice of isolation; and the unprivileged fallback's two pieces (the account
and the locked folders), each seen to hold against a real process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from attnbook.grading import gradescope, remote, sandbox, submission

RIGHT = "def causal_lengths(batch, queries):\n    return torch.arange(1, queries + 1).repeat(batch, 1)\n"
WRONG = "def causal_lengths(batch, queries):\n    return torch.zeros(batch, queries, dtype=torch.long)\n"
PATCH = "import attnbook.checks\nattnbook.checks.case_verdict = lambda *a, **k: (True, '')\n"


def _test_file(name="causal_lengths", check="check_causal_lengths", seeds=(0, 7), cases=5):
    """A test file as make assignments writes it (question_from_test reads it, never runs it)."""
    out = [f'name = "{name}"', "points = 1", ""]
    for seed in seeds:
        for i in range(cases):
            out += [
                f"def test_{seed}_{i}({name}):",
                "    from attnbook.checks import case_verdict",
                f"    passed, why = case_verdict('{check}', {name}, {i}, seed={seed}, answer='{name}')",
                "    assert passed, why",
                "",
            ]
    return "\n".join(out)


def layout(tmp_path, *cells: str, files: dict | None = None):
    root = tmp_path / "autograder"
    (root / "source" / "tests").mkdir(parents=True)
    (root / "submission").mkdir()
    (root / "source" / "tests" / "causal_lengths.py").write_text(_test_file())
    if cells:
        head = "import otter\ngrader = otter.Notebook('x.ipynb')\nimport torch"
        nb = new_notebook(cells=[new_code_cell(head), *map(new_code_cell, cells)])
        nbformat.write(nb, root / "submission" / "hw.ipynb")
    for name, data in (files or {}).items():
        (root / "submission" / name).write_bytes(data)
    return root


def run(root) -> dict:
    assert gradescope.main(["--root", str(root), "--timeout", "60"]) == 0
    results = json.loads((root / "results" / "results.json").read_text())
    assert gradescope.problems(results) == []
    return results


@pytest.fixture
def bubblewrap():
    why = sandbox.check()
    if why is not None:
        pytest.skip(f"needs a working bubblewrap: {why}")


def test_right_wrong_and_patched_answers(tmp_path, bubblewrap):
    right = run(layout(tmp_path / "r", RIGHT))
    assert right["score"] == 1.0
    names = [(t["name"], t["visibility"], t["max_score"]) for t in right["tests"]]
    assert names == [
        ("causal_lengths: the book's cases", "visible", 0.5),
        ("causal_lengths: fresh cases", "after_published", 0.5),
    ]
    assert "bubblewrap" in right["extra_data"]["isolation"]
    assert "0.50 of 0.50 points" in right["output"]  # the book's half, not the total
    wrong = run(layout(tmp_path / "w", WRONG))
    assert wrong["score"] == 0.0
    book, fresh = wrong["tests"]
    assert "Case 1" in book["output"] or "case" in book["output"].lower()
    assert fresh["output"].startswith("0 of 5") and "seed" not in fresh["output"]
    half = run(layout(tmp_path / "h", RIGHT.replace("repeat(batch, 1)", "repeat(batch, 1)[:, :4]")))
    book = half["tests"][0]["score"]
    assert 0 < book < half["score"] < 1, half  # fresh cases add to the total
    assert f"{book:.2f} of 0.50 points" in half["output"]
    assert f"{half['score']:.2f} of" not in half["output"]  # the total waits for publishing
    assert run(layout(tmp_path / "p", PATCH + WRONG))["score"] == 0.0


def test_every_path_without_a_grade_writes_why(tmp_path):
    cases = {
        "none": ({"notes.txt": b"hello"}, "no notebook found"),
        "two": ({"a.ipynb": b"{}", "b.ipynb": b"{}"}, "2 notebooks"),
        "empty": ({"hw.ipynb": b""}, "empty"),
        "json": ({"hw.ipynb": b"[1, 2]"}, "not a Jupyter notebook"),
    }
    for name, (files, words) in cases.items():
        results = run(layout(tmp_path / name, files=files))
        assert results["score"] == 0.0 and words in results["output"], (name, results)
        assert "error of the grading" not in results["output"]


def test_an_exported_zip_is_read_by_name(tmp_path):
    data = tmp_path / "export.zip"
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("hw.ipynb", '{"cells": []}')
        archive.writestr("../../escape/evil.ipynb", "[]")  # ignored, never extracted
    root = layout(tmp_path, files={"hw.zip": data.read_bytes()})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    found, why = submission.notebook_in(root / "submission", scratch)
    assert (
        found == scratch / "submission.ipynb" and found.read_text() == '{"cells": []}' and why == ""
    )
    assert not (tmp_path / "escape").exists()


def test_a_failure_of_the_grading_says_so(tmp_path, monkeypatch):
    root = layout(tmp_path, RIGHT)
    (root / "source" / "tests" / "causal_lengths.py").write_text("name = 1\n")
    results = run(root)
    assert results["score"] == 0.0 and "error of the grading" in results["output"]

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(gradescope, "grade", broken)
    results = run(layout(tmp_path / "b", RIGHT))
    assert "the autograder itself failed (RuntimeError: a bug)" in results["output"]
    assert results["extra_data"]["status"] == "error"


def test_the_format_check_bites():
    good = {"score": 1.0, "tests": [{"name": "q", "score": 1, "max_score": 1}]}
    assert gradescope.problems(good) == []
    bad = [
        {"score": 1.0, "visibility": "students"},
        {"score": 1.0, "tests": [{"name": "q", "score": 2, "max_score": 1}]},
        {"score": 1.0, "tests": [{"name": "q", "points": 1}]},
        {"tests": [{"name": "q"}]},
        {"score": "1"},
        {"score": float("nan")},
        {"score": 1.0, "stdout_visibility": "teachers"},
    ]
    for results in bad:
        assert gradescope.problems(results), results


def test_isolation_is_bubblewrap_then_nobody_then_nothing():
    options, note = gradescope.isolation(check=lambda: None, euid=lambda: 1000)
    assert options == {"sandboxed": True}
    options, note = gradescope.isolation(check=lambda: "no userns", euid=lambda: 0)
    assert options == {"sandboxed": False, "user": "nobody"} and "no userns" in note
    options, note = gradescope.isolation(check=lambda: "no userns", euid=lambda: 1000)
    assert options is None and "refusing" in note


@pytest.fixture
def root_and_nobody():
    if os.geteuid() != 0:
        pytest.skip("the fallback runs as root (as on Gradescope)")
    try:
        sandbox.account("nobody")
    except KeyError:
        pytest.skip("no account nobody")


@pytest.fixture
def open_folder():
    """A folder under /tmp that the account nobody can reach (pytest's tmp_path is root's alone)."""
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="attnbook-fallback-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def test_the_fallback_account_cannot_read_locked_folders(open_folder, root_and_nobody):
    base = open_folder
    (base / "source").mkdir(parents=True)
    (base / "source" / "seed.txt").write_text("12345")
    (base / "open.txt").write_text("open")
    for path in (base / "source", base / "source" / "seed.txt", base / "open.txt"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    cat = shutil.which("cat")

    def read(path):
        return subprocess.run([cat, str(path)], capture_output=True, **sandbox.as_user())

    assert read(base / "open.txt").returncode == 0
    assert read(base / "source" / "seed.txt").returncode == 0  # readable before the lock
    assert sandbox.lock_away(base / "source", base / "missing") == [base / "source"]
    assert read(base / "source" / "seed.txt").returncode != 0
    assert read(base / "open.txt").stdout == b"open"


def test_the_worker_is_started_as_the_fallback_account(tmp_path, root_and_nobody, monkeypatch):
    seen = {}

    def popen(argv, **kwargs):
        seen.update(kwargs, owner=os.stat(kwargs["cwd"]).st_uid)
        raise OSError("stop here")

    monkeypatch.setattr(remote.subprocess, "Popen", popen)
    path = tmp_path / "nb.ipynb"
    nbformat.write(new_notebook(cells=[]), path)
    with pytest.raises(remote.GradingError, match="could not start: stop here"):
        remote.Submission(path, sandboxed=False, user="nobody").start()
    uid, gid = sandbox.account("nobody")
    assert (seen["user"], seen["group"], seen["extra_groups"], seen["owner"]) == (uid, gid, [], uid)


def test_root_is_never_the_fallback_account():
    with pytest.raises(ValueError, match="root"):
        sandbox.account("root")
