"""Releases (tools/release.py, CHANGELOG.md "Versions"): one version in every
place that writes it, a wheel that carries everything the chapters import and
installs in a clean environment, and a release commit made on a copy of the
repository that leaves the book's own agreement checks passing.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tools import release
from tools.site import NOTEBOOKS, config, read_notebook

ROOT = release.ROOT
LIB = ROOT / "lib"
PACKAGE = LIB / "attnbook"


# The version ---------------------------------------------------------------


def test_one_version_everywhere():
    found = release.versions()
    assert len(set(found.values())) == 1, f"the versions disagree: {found}"
    import attnbook

    assert attnbook.__version__ == found["lib/pyproject.toml"]


def test_the_tree_is_a_release_or_the_next_dev_version():
    """A release names its tag in _config.yml and its heading in CHANGELOG.md;
    main carries a .dev0 version, branch main, and an Unreleased section."""
    version = release.versions()["lib/pyproject.toml"]
    branch = config()["repository"]["branch"]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    dev = release.DEV.fullmatch(version)
    if dev:
        release.parse_version(dev["release"])
        assert branch == "main", f"a .dev0 tree ({version}) installs from main, not {branch!r}"
        assert release.UNRELEASED in changelog
        assert dev["release"] not in release.changelog_versions(), (
            f"{version} is the development of a version CHANGELOG.md says is released"
        )
    else:
        release.parse_version(version)
        assert branch == f"v{version}", f"release {version} must install from v{version}"
        assert release.changelog_versions()[0] == version


@pytest.mark.parametrize(
    "bad",
    ["v2026.12.0", "2026.12", "2026.13.0", "2026.0.1", "2026.12.0.dev0", "2026.07.0", " 2026.12.0"],
)
def test_bad_versions_are_refused_by_name(bad):
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        release.parse_version(bad)


def test_a_version_that_is_not_a_string_is_refused():
    with pytest.raises(TypeError, match="2026.12"):
        release.parse_version(2026.12)


def test_good_versions_and_the_dev_version_after_them():
    assert release.parse_version("2026.12.0") == (2026, 12, 0)
    assert release.dev_version("2026.12.0") == "2026.12.1.dev0"
    assert release.dev_version("2027.1.3") == "2027.1.4.dev0"


# The wheel and the sdist ---------------------------------------------------


def package_files(package: Path = PACKAGE) -> set[str]:
    """Every file of the package as installed paths ("attnbook/..."), no caches."""
    return {
        path.relative_to(package.parent).as_posix()
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def missing_from(names: set[str], package: Path = PACKAGE) -> tuple[set[str], set[str]]:
    """(files of the package not in `names`, names under attnbook/ not in the package)."""
    expected = package_files(package)
    shipped = {name for name in names if name.startswith("attnbook/") and not name.endswith("/")}
    return expected - shipped, shipped - expected


def chapter_imports() -> set[str]:
    """Every attnbook module a chapter imports (by name, from its code cells)."""
    modules = set()
    for path in NOTEBOOKS:
        for cell in read_notebook(path).cells:
            if cell.cell_type != "code":
                continue
            source = "\n".join(
                line
                for line in cell.source.splitlines()
                if not line.lstrip().startswith(("%", "!"))
            )
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Import):
                    modules |= {a.name for a in node.names if a.name.startswith("attnbook")}
                elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "attnbook"
                ):
                    modules.add(node.module)
                    for alias in node.names:
                        name = f"{node.module}.{alias.name}"
                        relative = Path(*name.split("."))
                        if (LIB / relative).is_dir() or (LIB / f"{relative}.py").exists():
                            modules.add(name)
    return modules


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """attnbook's wheel and sdist, built as `make dist` builds them."""
    out = tmp_path_factory.mktemp("dist")
    paths = release.dist(out)
    wheel = next(path for path in paths if path.suffix == ".whl")
    sdist = next(path for path in paths if path.name.endswith(".tar.gz"))
    return wheel, sdist


def test_dist_is_one_wheel_and_one_sdist_at_the_version(built):
    wheel, sdist = built
    version = release.versions()["lib/pyproject.toml"]
    assert wheel.name == f"attnbook-{version}-py3-none-any.whl"
    assert sdist.name == f"attnbook-{version}.tar.gz"
    print(
        f"wheel {wheel.stat().st_size / 1024:.0f} KiB, sdist {sdist.stat().st_size / 1024:.0f} KiB"
    )


def test_the_wheel_carries_every_file_of_the_package(built):
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        missing, extra = missing_from(set(archive.namelist()))
    assert not missing, f"the wheel lacks {sorted(missing)}"
    assert not extra, f"the wheel has files lib/attnbook does not: {sorted(extra)}"


def test_the_sdist_carries_every_file_of_the_package(built):
    _, sdist = built
    with tarfile.open(sdist) as archive:
        top = sdist.name.removesuffix(".tar.gz") + "/"
        names = {m.name.removeprefix(top) for m in archive.getmembers() if m.isfile()}
    missing, extra = missing_from(names)
    assert not missing, f"the sdist lacks {sorted(missing)}"
    assert not extra, f"the sdist has files lib/attnbook does not: {sorted(extra)}"
    assert "pyproject.toml" in names


def test_the_file_check_bites_on_a_dropped_package_data_glob(tmp_path):
    """The check above, on a wheel built without the live explorers' weights glob."""
    lib = tmp_path / "lib"
    shutil.copytree(LIB, lib, ignore=release.DIST_IGNORE)
    pyproject = lib / "pyproject.toml"
    text = pyproject.read_text()
    assert '["*.js", "*.f16", "*.json"]' in text
    pyproject.write_text(text.replace('["*.js", "*.f16", "*.json"]', '["*.js", "*.json"]'))
    wheel = next(p for p in release.dist(tmp_path / "dist", lib=lib) if p.suffix == ".whl")
    with zipfile.ZipFile(wheel) as archive:
        missing, extra = missing_from(set(archive.namelist()))
    assert (
        missing == {name for name in package_files() if name.endswith(".f16")} and len(missing) >= 4
    )
    assert not extra


def test_the_chapters_import_only_modules_the_wheel_carries(built):
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    imported = chapter_imports()
    assert "attnbook.widgets.live" in imported  # the parse finds the chapters' imports
    for module in imported:
        path = module.replace(".", "/")
        assert f"{path}.py" in names or f"{path}/__init__.py" in names, module


# Run inside the clean environment: import every module of the installed
# package, read every data file through importlib.resources, print a report.
CLEAN_CHECK = """
import hashlib, importlib, importlib.metadata, importlib.resources, json, pkgutil, sys
import attnbook
modules = sorted(m.name for m in pkgutil.walk_packages(attnbook.__path__, "attnbook."))
for name in modules:
    importlib.import_module(name)
data = {}
for package, name in json.loads(sys.argv[1]):
    blob = importlib.resources.files(package).joinpath(name).read_bytes()
    data[f"{package}/{name}"] = hashlib.sha256(blob).hexdigest()
print(json.dumps({
    "file": attnbook.__file__,
    "version": attnbook.__version__,
    "metadata": importlib.metadata.version("attnbook"),
    "modules": modules,
    "data": data,
}))
"""


# About 25 s (every module imported afresh): make check's tier (test-slow).
@pytest.mark.slow
def test_the_wheel_installs_and_imports_in_a_clean_environment(built, tmp_path):
    """A fresh venv that sees the book's packages (torch, ...) through a .pth file
    but not lib/: the wheel installed with --no-deps, run from an empty folder."""
    wheel, _ = built
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # The book's site-packages, minus attnbook's editable install (its .pth
    # files are not read from a folder added by a .pth line).
    outer = Path(sysconfig.get_paths()["purelib"])
    (site / "book-packages.pth").write_text(f"{outer}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            wheel,
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    data = [
        (".".join(Path(name).parent.parts), Path(name).name)
        for name in sorted(package_files())
        if not name.endswith(".py")
    ]
    assert any(name.endswith(".f16") for _, name in data)
    run = tmp_path / "empty"
    run.mkdir()
    done = subprocess.run(
        [python, "-I", "-c", CLEAN_CHECK, json.dumps(data)],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert Path(report["file"]).is_relative_to(site), report["file"]
    version = release.versions()["lib/pyproject.toml"]
    assert report["version"] == report["metadata"] == version
    expected_modules = {
        name.removesuffix("/__init__.py").removesuffix(".py").replace("/", ".")
        for name in package_files()
        if name.endswith(".py")
    } - {"attnbook"}
    assert set(report["modules"]) >= expected_modules
    assert chapter_imports() <= set(report["modules"]) | {"attnbook"}
    for package, name in data:
        digest = hashlib.sha256((LIB / package.replace(".", "/") / name).read_bytes()).hexdigest()
        assert report["data"][f"{package}/{name}"] == digest, f"{package}/{name} differs"


# The release commit, on a copy of the repository ------------------------------


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The working tree as it is (tracked and new files, not ignored ones) in a
    fresh repository of one commit."""
    root = tmp_path_factory.mktemp("repo") / "book"
    names = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, names):
        source = ROOT / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    git(root, "init", "--quiet", "-b", "main")
    git(root, "add", "-A")
    env_commit(root, "copy")
    return root


def env_commit(root: Path, message: str) -> None:
    git(root, "-c", "user.name=test", "-c", "user.email=test@example.org", "commit", "-qm", message)


def tool(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.org",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.org",
    }
    return subprocess.run(
        [sys.executable, "-m", "tools.release", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )


def install_refs(root: Path) -> set[str]:
    """The git ref of every install cell: chapters, reader's edition and slide notebooks."""
    refs = set()
    for path in [
        *(root / "book").glob("*.ipynb"),
        *(root / "book/colab").glob("*.ipynb"),
        *(root / "slides").glob("*.ipynb"),
    ]:
        found = re.findall(r"#subdirectory=lib", path.read_text())
        assert found, f"{path.name} has no install cell"
        refs |= set(
            re.findall(r"attention-interactively@([^#\"]+)#subdirectory=lib", path.read_text())
        )
    return refs


# About 15 s: two commits on a copy of the repository, the agreement checks run there.
@pytest.mark.slow
def test_release_then_reopen_on_a_copy(copy):
    import yaml

    assert install_refs(copy) == {"main"}
    # Refusals first: a bad version, and a dirty tree, change nothing.
    done = tool(copy, "prepare", "2026.13.0")
    assert done.returncode == 1 and "'2026.13.0'" in done.stderr
    (copy / "README.md").write_text((copy / "README.md").read_text() + "\nedit\n")
    done = tool(copy, "prepare", "2026.12.0")
    assert done.returncode == 1 and "uncommitted" in done.stderr
    git(copy, "checkout", "README.md")
    assert git(copy, "status", "--porcelain") == ""

    done = tool(copy, "prepare", "2026.12.0", "--date", "2026-12-01")
    assert done.returncode == 0, done.stderr
    assert git(copy, "status", "--porcelain") == "", "the release commit left changes behind"
    assert git(copy, "rev-list", "--count", "HEAD") == "2\n"
    assert git(copy, "log", "-1", "--format=%s").startswith("Release 2026.12.0:")
    assert set(release.versions(copy).values()) == {"2026.12.0"}
    assert (
        yaml.safe_load((copy / "_config.yml").read_text())["repository"]["branch"] == "v2026.12.0"
    )
    assert 'date-released: "2026-12-01"' in (copy / "CITATION.cff").read_text()
    assert "Interactively*, version 2026.12.0." in (copy / "README.md").read_text()
    changelog = (copy / "CHANGELOG.md").read_text()
    assert "## [2026.12.0] - 2026-12-01" in changelog and release.UNRELEASED not in changelog
    assert install_refs(copy) == {"v2026.12.0"}
    # Nothing but the release's files changed.
    changed = set(git(copy, "diff", "--name-only", "HEAD~1").split())
    release_files = {
        "lib/pyproject.toml",
        "lib/attnbook/__init__.py",
        "CHANGELOG.md",
        "_config.yml",
        "CITATION.cff",
        "README.md",
    }
    assert release_files <= changed
    assert all(
        name.startswith(("book/", "slides/")) and name.endswith(".ipynb")
        for name in changed - release_files
    )
    # The book's own checks agree on the copy: install cells, reader's edition, versions.
    checks = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_notebooks.py",
            "tests/test_nbtools.py",
            "tests/test_readers_edition.py",
            "tests/test_release.py",
            "-k",
            "install_cell or in_sync or version",
        ],
        cwd=copy,
        env={**os.environ, "PYTHONPATH": str(copy / "lib")},
        capture_output=True,
        text=True,
    )
    assert checks.returncode == 0, checks.stdout[-3000:]
    assert " passed" in checks.stdout and " failed" not in checks.stdout
    # What the workflow runs on the tag: the tree is that release; its notes.
    assert tool(copy, "check-tag", "v2026.12.0").returncode == 0
    wrong = tool(copy, "check-tag", "v2026.12.1")
    assert wrong.returncode == 1 and "'v2026.12.1' is not on a release commit" in wrong.stderr
    notes = tool(copy, "notes", "2026.12.0").stdout
    assert notes.startswith("The first release.") and "## [" not in notes
    # A second release of the same version is refused.
    done = tool(copy, "prepare", "2026.12.0")
    assert done.returncode == 1 and "already released" in done.stderr
    (copy / "CHANGELOG.md").write_text(
        (copy / "CHANGELOG.md")
        .read_text()
        .replace("## [2026.12.0]", "## [Unreleased]\n\n## [2026.12.0]")
    )
    with pytest.raises(ValueError, match="'2026.11.3' is older than the last release, 2026.12.0"):
        release.release_changelog(copy, "2026.11.3", "2026-12-02")
    git(copy, "checkout", "CHANGELOG.md")

    done = tool(copy, "reopen")
    assert done.returncode == 0, done.stderr
    assert git(copy, "status", "--porcelain") == ""
    assert set(release.versions(copy).values()) == {"2026.12.1.dev0"}
    assert yaml.safe_load((copy / "_config.yml").read_text())["repository"]["branch"] == "main"
    assert install_refs(copy) == {"main"}
    changelog = (copy / "CHANGELOG.md").read_text()
    assert changelog.index(release.UNRELEASED) < changelog.index("## [2026.12.0] - 2026-12-01")
    # main is no release: the workflow would refuse a tag put on it.
    assert tool(copy, "check-tag", "v2026.12.1").returncode == 1
