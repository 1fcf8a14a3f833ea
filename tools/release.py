"""Releases of the book and attnbook: the release commit, back to development,
and the wheel and sdist (CHANGELOG.md, "Versions", says the scheme).

    python -m tools.release prepare 2026.12.0 [--date 2026-12-01]   # make release VERSION=...
    python -m tools.release reopen                                  # make reopen
    python -m tools.release dist [dist]                             # make dist
    python -m tools.release notes 2026.12.0     # CHANGELOG.md's section (the GitHub release)
    python -m tools.release check-tag v2026.12.0  # exit 1 unless the tree is that release

`prepare` needs a clean working tree and makes one commit: the version in
lib/pyproject.toml, attnbook.__version__ and (when the file exists)
CITATION.cff's `version:` and `date-released:`; CHANGELOG.md's "Unreleased"
heading becomes "[VERSION] - DATE"; _config.yml's repository.branch becomes
the tag vVERSION; every notebook's install cell (tools/nbtools.py
install-cell --write) and the reader's edition (tools/readers_edition.py)
follow it. It neither tags nor pushes. `reopen` makes the commit after the
tag: the next patch's .dev0 version, branch `main`, a new "Unreleased"
heading.

`dist` builds attnbook's wheel and sdist with the setuptools already
installed (no download, no build isolation), from a copy of lib/ without
build leftovers, into the given folder (emptied first).
"""

from __future__ import annotations

import datetime
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION = re.compile(r"(?P<year>\d{4})\.(?P<month>\d{1,2})\.(?P<patch>\d+)")
DEV = re.compile(rf"(?P<release>{VERSION.pattern})\.dev0")
UNRELEASED = "## [Unreleased]"
# The notebooks and their reader's edition: what the install cells touch.
NOTEBOOK_PATHS = ("book", "_config.yml")


def parse_version(text: object) -> tuple[int, int, int]:
    """(year, month, patch) of a release version 'YYYY.M.PATCH'; ValueError otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"version must be a string like '2026.12.0', got {text!r}")
    match = VERSION.fullmatch(text)
    if not match:
        raise ValueError(
            f"version must be YEAR.MONTH.PATCH like '2026.12.0' (no 'v', no suffix), got {text!r}"
        )
    year, month, patch = (int(match[name]) for name in ("year", "month", "patch"))
    if not 1 <= month <= 12:
        raise ValueError(f"version {text!r}: month must be 1 to 12, got {month}")
    if text != f"{year}.{month}.{patch}":
        raise ValueError(
            f"version {text!r} has a leading zero; write {year}.{month}.{patch} "
            "(the form PyPI normalises to)"
        )
    return year, month, patch


def parse_date(text: str) -> str:
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise ValueError(f"date must be YYYY-MM-DD, got {text!r}") from None


def dev_version(release: str) -> str:
    """The version main carries after `release`: its next patch, .dev0."""
    year, month, patch = parse_version(release)
    return f"{year}.{month}.{patch + 1}.dev0"


def _replace_one(path: Path, pattern: str, replacement: str) -> None:
    """Replace the one line matching `pattern` (re.MULTILINE); ValueError if not exactly one."""
    text = path.read_text()
    new, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    if count != 1:
        raise ValueError(f"{path.name}: expected one line matching {pattern!r}, found {count}")
    path.write_text(new)


def versions(root: Path = ROOT) -> dict[str, str]:
    """The version as each file writes it (pyproject, __init__, CITATION.cff if present)."""
    found = {}
    pyproject = (root / "lib/pyproject.toml").read_text()
    found["lib/pyproject.toml"] = re.search(r'^version = "([^"]*)"$', pyproject, re.M)[1]
    init = (root / "lib/attnbook/__init__.py").read_text()
    found["lib/attnbook/__init__.py"] = re.search(r'^__version__ = "([^"]*)"$', init, re.M)[1]
    citation = root / "CITATION.cff"
    if citation.exists():
        match = re.search(r"^version:\s*\"?([^\"\s]+)\"?\s*$", citation.read_text(), re.M)
        found["CITATION.cff"] = match[1] if match else ""
    return found


def set_version(root: Path, version: str, date: str | None = None) -> None:
    """Write `version` into pyproject, __init__ and README's citation, and CITATION.cff with `date`."""
    _replace_one(root / "lib/pyproject.toml", r'^version = "[^"]*"$', f'version = "{version}"')
    _replace_one(
        root / "lib/attnbook/__init__.py", r'^__version__ = "[^"]*"$', f'__version__ = "{version}"'
    )
    readme = root / "README.md"
    if readme.exists():
        # The "How to cite" line: "*Attention, Interactively*, version X."
        _replace_one(
            readme, r"^Interactively\*, version \S+\.$", f"Interactively*, version {version}."
        )
    citation = root / "CITATION.cff"
    if citation.exists():
        _replace_one(citation, r"^version:.*$", f'version: "{version}"')
        if date is not None:
            text = citation.read_text()
            if re.search(r"^date-released:.*$", text, re.M):
                _replace_one(citation, r"^date-released:.*$", f'date-released: "{date}"')
            else:
                citation.write_text(text.rstrip("\n") + f'\ndate-released: "{date}"\n')


def set_branch(root: Path, ref: str) -> None:
    """Set repository.branch in _config.yml (the one `branch:` line under `repository:`)."""
    import yaml

    path = root / "_config.yml"
    text = path.read_text()
    match = re.search(r"^repository:\n((?:[ \t]+.*\n|[ \t]*#.*\n|\n)*)", text, re.M)
    if not match:
        raise ValueError("_config.yml has no repository: section")
    block, count = re.subn(r"^(\s+branch:).*$", rf"\1 {ref}", match[1], flags=re.M)
    if count != 1:
        raise ValueError(f"_config.yml: expected one branch: under repository:, found {count}")
    path.write_text(text[: match.start(1)] + block + text[match.end(1) :])
    if yaml.safe_load(path.read_text())["repository"]["branch"] != ref:
        raise ValueError(f"_config.yml: repository.branch did not become {ref!r}")


def changelog_versions(root: Path = ROOT) -> list[str]:
    """The released versions CHANGELOG.md has headings for, newest first."""
    text = (root / "CHANGELOG.md").read_text()
    return re.findall(r"^## \[(\d[^\]]*)\]", text, re.M)


def release_changelog(root: Path, version: str, date: str) -> None:
    """The Unreleased heading becomes the release's; a version already there is refused."""
    released = changelog_versions(root)
    if version in released:
        raise ValueError(f"version {version!r} is already released in CHANGELOG.md")
    if released and parse_version(version) < parse_version(released[0]):
        raise ValueError(
            f"version {version!r} is older than the last release, {released[0]} (CHANGELOG.md)"
        )
    path = root / "CHANGELOG.md"
    if path.read_text().count(UNRELEASED + "\n") != 1:
        raise ValueError(f"CHANGELOG.md must have one {UNRELEASED!r} heading")
    _replace_one(path, r"^## \[Unreleased\]$", f"## [{version}] - {date}")


def reopen_changelog(root: Path) -> None:
    """A new, empty Unreleased section above the newest release."""
    path = root / "CHANGELOG.md"
    text = path.read_text()
    if UNRELEASED in text:
        raise ValueError(f"CHANGELOG.md already has {UNRELEASED!r}")
    newest = re.search(r"^## \[\d", text, re.M)
    if newest is None:
        raise ValueError("CHANGELOG.md has no released version to reopen after")
    section = f"{UNRELEASED}\n\nNo changes since the last release.\n\n"
    path.write_text(text[: newest.start()] + section + text[newest.start() :])


def release_notes(version: str, root: Path = ROOT) -> str:
    """CHANGELOG.md's section for `version`, without its heading (the GitHub release's text)."""
    parse_version(version)
    text = (root / "CHANGELOG.md").read_text()
    match = re.search(rf"^## \[{re.escape(version)}\][^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if match is None:
        raise ValueError(f"CHANGELOG.md has no section for version {version!r}")
    return match[1].strip() + "\n"


def _run(root: Path, *args: str) -> str:
    done = subprocess.run(args, cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


def _require_clean(root: Path) -> None:
    status = _run(root, "git", "status", "--porcelain", "--untracked-files=no")
    if status.strip():
        raise ValueError(f"the working tree has uncommitted changes; commit them first:\n{status}")


def _sync_notebooks(root: Path) -> None:
    """Install cells and the reader's edition from _config.yml (the copy's own tools)."""
    _run(root, sys.executable, "tools/nbtools.py", "install-cell", "--write")
    _run(root, sys.executable, "tools/readers_edition.py")


def _commit(root: Path, message: str) -> None:
    _run(root, "git", "add", "-u")
    if (root / "CITATION.cff").exists():
        _run(root, "git", "add", "CITATION.cff")
    _run(root, "git", "commit", "--quiet", "-m", message)


def prepare(version: str, date: str | None = None, root: Path = ROOT) -> None:
    """The release commit for `version` (see the module's docstring)."""
    parse_version(version)
    date = parse_date(date) if date is not None else datetime.date.today().isoformat()
    _require_clean(root)
    current = versions(root)["lib/pyproject.toml"]
    release_changelog(root, version, date)
    set_version(root, version, date)
    set_branch(root, f"v{version}")
    _sync_notebooks(root)
    _commit(
        root,
        f"Release {version}: version {current} -> {version} (pyproject, __version__), "
        f"CHANGELOG heading dated {date}, _config.yml's branch v{version}, "
        "install cells and reader's edition pointing at the tag",
    )


def reopen(root: Path = ROOT) -> None:
    """Back to development after a release: next patch .dev0, branch main, Unreleased."""
    current = versions(root)["lib/pyproject.toml"]
    parse_version(current)  # only right after a release
    _require_clean(root)
    following = dev_version(current)
    reopen_changelog(root)
    set_version(root, following)
    set_branch(root, "main")
    _sync_notebooks(root)
    _commit(
        root,
        f"Back to development after {current}: version {following}, _config.yml's branch "
        "main, install cells and reader's edition pointing at main, CHANGELOG 'Unreleased'",
    )


def check_tag(tag: str, root: Path = ROOT) -> None:
    """ValueError unless the tree is the release `tag` names (what the workflow publishes)."""
    if not tag.startswith("v"):
        raise ValueError(f"a release tag is v followed by the version, got {tag!r}")
    version = tag[1:]
    parse_version(version)
    import yaml

    found = versions(root)
    branch = yaml.safe_load((root / "_config.yml").read_text())["repository"]["branch"]
    if set(found.values()) != {version} or branch != tag:
        raise ValueError(
            f"tag {tag!r} is not on a release commit: versions {found}, _config.yml branch "
            f"{branch!r} (make release VERSION={version} makes that commit)"
        )
    release_notes(version, root)


# Left out of the copy of lib/ that dist builds from: build leftovers.
DIST_IGNORE = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.pyc")


def dist(out: Path, lib: Path = ROOT / "lib") -> list[Path]:
    """Build the wheel and sdist of `lib` into `out` (emptied first); their paths."""
    out = out.resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "lib"
        shutil.copytree(lib, source, ignore=DIST_IGNORE)
        for hook in ("build_wheel", "build_sdist"):
            _run(
                source,
                sys.executable,
                "-c",
                f"from setuptools import build_meta; build_meta.{hook}({str(out)!r})",
            )
    return sorted(out.iterdir())


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["prepare"] and len(argv) in (2, 4):
            date = None
            if len(argv) == 4:
                if argv[2] != "--date":
                    raise ValueError(f"expected --date, got {argv[2]!r}")
                date = argv[3]
            prepare(argv[1], date)
            print(f"release commit made for {argv[1]}; tag it: git tag -a v{argv[1]}")
            return 0
        if argv == ["reopen"]:
            reopen()
            print(f"back to development: {versions()['lib/pyproject.toml']}")
            return 0
        if argv[:1] == ["notes"] and len(argv) == 2:
            print(release_notes(argv[1]), end="")
            return 0
        if argv[:1] == ["check-tag"] and len(argv) == 2:
            check_tag(argv[1])
            print(f"{argv[1]}: the tree is release {argv[1][1:]}")
            return 0
        if argv[:1] == ["dist"] and len(argv) <= 2:
            for path in dist(Path(argv[1]) if len(argv) == 2 else ROOT / "dist"):
                print(
                    f"{path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}"
                    f"  {path.stat().st_size / 1024:.0f} KiB"
                )
            return 0
    except (ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as error:
        print(
            f"error: {' '.join(error.cmd)} failed:\n{error.stdout}{error.stderr}", file=sys.stderr
        )
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
