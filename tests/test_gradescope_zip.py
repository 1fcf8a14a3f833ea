"""The Gradescope zip of `make assignments`, run as Gradescope runs it, offline (slow tier).

masked-softmax's assignment is built; its autograder zip is unpacked into a fake
/autograder under tmp_path; setup.sh's install step (the zip's install.sh) makes
a fresh Python 3.11 virtual environment with the zip's requirements.txt and its
attnbook wheel, pip told to use only local wheels (PIP_NO_INDEX, PIP_FIND_LINKS,
no pip configuration), inside a network namespace with no network where one can
be made; then the zip's run_autograder grades four submissions (the solutions,
wrong answers, wrong answers with the trial's two-line patch of the verdict, an
empty notebook), then, with no bwrap on PATH (as where Docker forbids its
namespaces), the solutions once more as the user nobody, who must not read the
zip's tests or write the results; each results.json is checked against
Gradescope's documented fields (attnbook.grading.gradescope.problems). About a
minute at load 2, two and a half at load 6-9.

**Where the wheels come from.** The machine's and CI's network reach package
registries but this must not depend on them, nor on a pip cache that a fresh CI
runner does not have, and a `pip download` of torch each run would be the
slowest step. .venv-otter, which the slow tier needs anyway (`make test-slow`
depends on it), is installed from the same lock the zip pins
(tools/requirements-otter.txt): so each pinned distribution is repacked from
.venv-otter's site-packages into a wheel (the files its RECORD lists, a new
RECORD with their hashes, its WHEEL tags), once per session. That is
offline-proof and costs disk I/O only (torch is most of it).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from importlib import metadata
from pathlib import Path

import nbformat
import pytest

from attnbook.grading import gradescope
from tools import assignments

ROOT = Path(__file__).resolve().parent.parent
OTTER_VENV = ROOT / ".venv-otter"
CHAPTER = ROOT / "book" / "masked-softmax.ipynb"
PATCH = "import attnbook.checks\nattnbook.checks.case_verdict = lambda *a, **k: (True, '')"

pytestmark = pytest.mark.slow


def _site_packages(venv: Path) -> Path:
    (site,) = venv.glob("lib/python3*/site-packages")
    return site


def repack(dist: metadata.Distribution, site: Path, out: Path) -> Path:
    """An installed distribution as a wheel in ``out``: the files its RECORD lists
    (none outside site-packages, no bytecode), a fresh RECORD, its WHEEL's tags."""
    info = Path(dist._path)  # the .dist-info folder
    tags = [
        line.split(":", 1)[1].strip()
        for line in (info / "WHEEL").read_text().splitlines()
        if line.startswith("Tag:")
    ]
    parts = [sorted({t.split("-")[i] for t in tags}) for i in range(3)]
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    wheel = out / f"{name}-{dist.version}-{'-'.join('.'.join(p) for p in parts)}.whl"
    skip = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for file in dist.files or []:
            relative = file.as_posix()
            if relative.startswith("..") or "__pycache__" in relative:
                continue
            if Path(relative).parent == Path(info.name) and Path(relative).name in skip:
                continue
            data = (site / relative).read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            writer.writerow([relative, f"sha256={digest.decode()}", len(data)])
            archive.writestr(relative, data)
        writer.writerow([f"{info.name}/RECORD", "", ""])
        archive.writestr(f"{info.name}/RECORD", record.getvalue())
    return wheel


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory):
    """Every distribution the zip's requirements pin (on this platform), from .venv-otter."""
    from packaging.requirements import Requirement

    assert (OTTER_VENV / "bin" / "python").exists(), "no .venv-otter: run make otter-env"
    site = _site_packages(OTTER_VENV)
    installed = {
        re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d
        for d in metadata.distributions(path=[str(site)])
    }
    out = tmp_path_factory.mktemp("wheelhouse")
    started = time.perf_counter()
    for line in assignments.requirements().splitlines():
        if not line or line.startswith(("#", "-")):
            continue
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        key = re.sub(r"[-_.]+", "-", requirement.name).lower()
        dist = installed.get(key)
        assert dist is not None, f".venv-otter lacks {requirement}: run make otter-env"
        assert requirement.specifier.contains(dist.version, prereleases=True), (
            f".venv-otter has {key} {dist.version}, the lock pins {requirement.specifier}"
        )
        repack(dist, site, out)
    print(f"wheelhouse: {len(list(out.iterdir()))} wheels in {time.perf_counter() - started:.1f} s")
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    assert (OTTER_VENV / "bin" / "otter").exists(), "no .venv-otter: run make otter-env"
    out = tmp_path_factory.mktemp("assignments")
    otter = str(OTTER_VENV / "bin" / "otter")
    # The chapter's exercises alone (the concept questions are graded in
    # tests/test_assignments.py's concept build), so the points stay the exercises'.
    from tests.test_assignments import EXERCISES

    argv = ["--out", str(out), "--otter", otter, "--exercises", EXERCISES, str(CHAPTER)]
    assert assignments.main(argv) == 0
    return out / "masked-softmax"


def _offline() -> list[str]:
    """A command prefix that runs its command without a network, where one can be made."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    for prefix in ([unshare, "-n"], [unshare, "-rn"]):
        if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    return []


def _python() -> str:
    """The interpreter install.sh makes the venv with: the system's Python 3.11 where
    there is one (as apt installs it on Gradescope), else .venv-otter's."""
    system = Path("/usr/bin/python3.11")
    return str(system) if system.exists() else str(OTTER_VENV / "bin" / "python")


@pytest.fixture(scope="module")
def autograder(built, wheelhouse):
    """The zip unpacked as Gradescope unpacks it, and setup.sh's install step run offline.
    The layout is in a folder everyone may enter, as /autograder is, so that only the
    grader's own locks keep the user nobody out of source/ in the fallback."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="attnbook-gradescope-"))
    os.chmod(base, 0o755)
    yield from _unpacked(built, wheelhouse, base)
    shutil.rmtree(base, ignore_errors=True)


def _unpacked(built, wheelhouse, base: Path):
    (zip_path,) = (built / "autograder").glob("*.zip")
    root = base / "autograder"
    source = root / "source"
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(source)
        for item in archive.infolist():  # extractall drops the modes
            os.chmod(source / item.filename, (item.external_attr >> 16) & 0o777 or 0o644)
    venv = root.parent / "venv"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root.parent),
        "PYTHON": _python(),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_CACHE_DIR": "1",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [*_offline(), "bash", str(source / "install.sh"), str(venv)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(f"install.sh: {time.perf_counter() - started:.1f} s, offline prefix {_offline()}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    version = subprocess.run(
        [venv / "bin" / "python", "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
    ).stdout
    assert version.strip() == "(3, 11)"
    for folder in (root, source):
        os.chmod(folder, 0o755)
    yield root, venv


def _version() -> str:
    text = (ROOT / "lib" / "pyproject.toml").read_text()
    return re.search(r'^version = "(.+)"', text, re.M).group(1)


def test_the_zip_is_pinned_and_self_contained(built):
    (zip_path,) = (built / "autograder").glob("*.zip")
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        texts = {n: archive.read(n).decode() for n in names if not n.endswith(".whl")}
    wheels = [n for n in names if n.startswith("wheels/")]
    assert wheels == [f"wheels/attnbook-{_version()}-py3-none-any.whl"]
    assert not {"environment.yml", "run_otter.py"} & set(names)
    for name, text in texts.items():
        assert "git+" not in text and "github.com" not in text, name
    requirements = [
        line for line in texts["requirements.txt"].splitlines() if line and line[0] not in "#-"
    ]
    assert requirements and all("==" in line for line in requirements)
    assert not [line for line in requirements if "otter" in line]
    info = json.loads(texts["attnbook.json"])
    assert info["attnbook"] == _version() and re.fullmatch(r"[0-9a-f]{40}", info["commit"])
    student = (built / "student" / "masked-softmax.ipynb").read_text()
    assert f"@{info['commit']}#subdirectory=lib" in student and "@main" not in student


def _submit(root: Path, venv: Path, name: str, data: bytes, path: str = "/usr/bin:/bin") -> dict:
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
        (root / folder).mkdir()
    (root / "submission" / name).write_bytes(data)
    env = {
        "PATH": path,
        "ATTNBOOK_AUTOGRADER": str(root),
        "ATTNBOOK_VENV": str(venv),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [str(root / "source" / "run_autograder")],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(f"run_autograder {name}: {time.perf_counter() - started:.1f} s")
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert gradescope.problems(results) == [], results
    return results


def _notebook_bytes(nb) -> bytes:
    return nbformat.writes(nb).encode()


def test_four_submissions_graded_as_gradescope_grades_them(built, autograder):
    root, venv = autograder
    solved = nbformat.read(built / "autograder" / "masked-softmax.ipynb", as_version=4)
    wrong = nbformat.read(built / "student" / "masked-softmax.ipynb", as_version=4)
    for cell in wrong.cells:
        if "otter_answer_cell" in cell.metadata.get("tags", []):
            cell.source = cell.source.replace("...", "return torch.zeros(1)")
    patched = nbformat.read(built / "student" / "masked-softmax.ipynb", as_version=4)
    patched.cells = [*wrong.cells[:3], nbformat.v4.new_code_cell(PATCH), *wrong.cells[3:]]

    right = _submit(root, venv, "masked-softmax.ipynb", _notebook_bytes(solved))
    assert right["score"] == 4.0, right
    assert [t["visibility"] for t in right["tests"]] == ["visible", "after_published"] * 2
    assert sum(t["max_score"] for t in right["tests"]) == pytest.approx(4.0)
    assert right["extra_data"]["attnbook"] == _version()

    wrong_results = _submit(root, venv, "masked-softmax.ipynb", _notebook_bytes(wrong))
    assert wrong_results["score"] == 0.0 and wrong_results["extra_data"]["status"] == "graded"

    attack = _submit(root, venv, "masked-softmax.ipynb", _notebook_bytes(patched))
    assert attack["score"] == 0.0 and attack["extra_data"]["status"] == "graded", attack

    empty = _submit(root, venv, "masked-softmax.ipynb", b"")
    assert empty["score"] == 0.0 and "empty" in empty["output"], empty
    assert "error of the grading" not in empty["output"]


def test_without_bubblewrap_the_notebook_runs_as_nobody(built, autograder):
    """Docker often forbids bubblewrap's namespaces: with no bwrap on PATH the grader
    (root) runs the notebook as nobody, who cannot read the zip's tests (the hidden
    seed) nor write the results; the solutions still earn every point."""
    root, venv = autograder
    if os.geteuid() != 0:
        pytest.skip("the fallback needs the grader to be root, as on Gradescope")
    from attnbook.grading import sandbox

    reach = subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], **sandbox.as_user())
    if reach.returncode != 0:
        pytest.skip(f"the user nobody cannot run {venv}'s Python here")
    bin_ = root.parent / "no-bwrap-bin"
    bin_.mkdir(exist_ok=True)
    for tool in ("bash", "mkdir", "cat"):
        target = bin_ / tool
        if not target.exists():
            target.symlink_to(shutil.which(tool))
    solved = nbformat.read(built / "autograder" / "masked-softmax.ipynb", as_version=4)
    tests = root / "source" / "tests"
    solved.cells.append(
        nbformat.v4.new_code_cell(f"print(open({str(tests / 'causal_lengths.py')!r}).read())")
    )
    solved.cells.append(
        nbformat.v4.new_code_cell(
            f"open({str(root / 'results' / 'results.json')!r}, 'w').write('{{}}')"
        )
    )
    results = _submit(root, venv, "masked-softmax.ipynb", _notebook_bytes(solved), path=str(bin_))
    assert "as the unprivileged user nobody" in results["extra_data"]["isolation"], results
    assert results["score"] == 4.0, results
    assert results["output"].count("PermissionError") == 2, results["output"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-m", "slow", "-s"]))
