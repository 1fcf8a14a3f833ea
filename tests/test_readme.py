"""The README and CONTRIBUTING.md name only what exists, the README fits a first
read, and the licence and citation files agree with the package and the book.

What a page "names" is read from its Markdown as markdown-it-py parses it:

* ``make TARGET`` in its inline code and its shell blocks (```` ```bash ````)
  must be a target of the Makefile;
* every relative link and image, and every path-like word in its inline code
  and shell blocks (a word with a ``/`` or a file's extension), must exist in
  the repository. Build outputs (``_build/``, ``.venv``, ``dist/``) and
  absolute paths are not the repository's and are skipped; a placeholder in
  capitals (``book/colab/NAME.ipynb``) or a ``*`` must match at least one file.
  A link to a heading (``CONTRIBUTING.md#setting-up``) must find the heading;
* a link to the book's website must be under the address that _config.yml's
  repository gives (GitHub Pages: ``https://OWNER.github.io/REPO/``), and a
  page there (``book/NAME.html``) must have its source in the repository.

The tests of the checkers themselves feed them a page with a missing target,
path, heading and image text, so that a checker that finds nothing fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import tomllib
import yaml
from markdown_it import MarkdownIt

from tools.site import ROOT, config

README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md"]
MAX_README_LINES = 150
MAX_IMAGE_BYTES = 300 * 1024
PYPROJECT = ROOT / "lib" / "pyproject.toml"
NOT_IN_THE_REPOSITORY = ("_build", ".venv", ".venv-colab", "dist")
SHELL = {"bash", "sh", "shell", "console"}
EXTENSIONS = [
    ".md",
    ".py",
    ".yml",
    ".yaml",
    ".toml",
    ".txt",
    ".in",
    ".cff",
    ".ipynb",
    ".js",
    ".json",
    ".css",
    ".bib",
    ".svg",
    ".png",
    ".f16",
    ".pt",
]
MARKDOWN = MarkdownIt("commonmark")


# --- what a page names -------------------------------------------------------


def _walk(tokens):
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def code_texts(text: str) -> list[str]:
    """The page's inline code and the contents of its shell blocks."""
    found = []
    for token in _walk(MARKDOWN.parse(text)):
        if token.type == "code_inline" or token.type == "fence" and token.info.strip() in SHELL:
            found.append(token.content)
    return found


def links(text: str) -> list[tuple[str, str]]:
    """``(kind, target)`` of every link and image: kind is "link" or "image"."""
    found = []
    for token in _walk(MARKDOWN.parse(text)):
        if token.type == "link_open":
            found.append(("link", token.attrs["href"]))
        elif token.type == "image":
            found.append(("image", token.attrs["src"]))
    return found


def images(text: str) -> list[tuple[str, str]]:
    """``(src, alt)`` of every image."""
    return [
        (token.attrs["src"], token.content)
        for token in _walk(MARKDOWN.parse(text))
        if token.type == "image"
    ]


def headings(text: str) -> set[str]:
    """The anchors GitHub gives the page's headings (lower case, spaces to
    hyphens, punctuation other than hyphens and underscores dropped)."""
    tokens = MARKDOWN.parse(text)
    anchors = set()
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "heading_open":
            title = inline.content.lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


MAKE = re.compile(r"(?:^|[\s;&|(])make\s+(?:[A-Z][A-Z_]*=\S*\s+)*([a-z][\w-]*)", re.M)


def make_targets_named(text: str) -> set[str]:
    return {m[1] for code in code_texts(text) for m in MAKE.finditer(code)}


def makefile_targets(makefile: str) -> set[str]:
    """The targets of the Makefile's rules (not its variables)."""
    targets = set()
    for line in makefile.splitlines():
        rule = re.match(r"([A-Za-z][\w.-]*(?:[ \t]+[A-Za-z][\w.-]*)*)[ \t]*:(?!=)", line)
        if rule:
            targets.update(rule[1].split())
    return targets


def path_words(text: str) -> set[str]:
    """The path-like words of the page's inline code and shell blocks."""
    words = set()
    for code in code_texts(text):
        for word in re.split(r"[\s,;()\"'`]+", code):
            word = word.split("=", 1)[-1].rstrip(".:")
            if not word or word.startswith(("-", "$", "<", "{", "#")) or "://" in word:
                continue
            if re.fullmatch(r"\*?\.\w+", word):  # an extension, not a file
                continue
            if "/" in word or word.endswith(tuple(EXTENSIONS)):
                words.add(word)
    return words


PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]{2,}\b")


def missing_paths(text: str, root: Path) -> list[str]:
    """Every path the page names (links, images, path-like code) that does not
    exist under ``root``, with the reason."""
    missing = []
    named = path_words(text) | {target for _, target in links(text) if not urlparse(target).scheme}
    for name in sorted(named):
        path, _, anchor = name.partition("#")
        if not path:  # a heading of this page
            if anchor not in headings(text):
                missing.append(f"{name} (no such heading)")
            continue
        if path.startswith("/") or path.split("/")[0] in NOT_IN_THE_REPOSITORY:
            continue
        matches = [root / path]
        if not matches[0].exists():  # a glob, or a placeholder such as NAME
            matches = list(root.glob(re.sub(PLACEHOLDER, "*", path.rstrip("/"))))
        if not any(m.exists() for m in matches):
            missing.append(name)
        elif anchor and anchor not in headings(matches[0].read_text(encoding="utf-8")):
            missing.append(f"{name} (no such heading)")
    return missing


def website() -> str:
    """The book's address on GitHub Pages, from _config.yml's repository."""
    owner, repo = urlparse(config()["repository"]["url"]).path.strip("/").split("/")[:2]
    return f"https://{owner}.github.io/{repo}/"


def misplaced_urls(text: str, repository: str, site: str, root: Path) -> list[str]:
    """Links to the book's repository or website that point elsewhere than
    _config.yml says, or to a page without a source."""
    wrong = []
    for url in re.findall(r"https://[^\s)>\]`]+", text):
        if ("github.io" not in url and "github.com" not in url) or PLACEHOLDER.search(url):
            continue  # another site, or a template such as https://OWNER.github.io/REPO/
        if url.startswith(site):
            page = url[len(site) :].split("#")[0]
            if page.endswith(".html"):
                stem = page[: -len(".html")]
                if not any((root / f"{stem}{ext}").exists() for ext in (".md", ".ipynb")):
                    wrong.append(f"{url} (no source for {stem})")
        elif not url.startswith(repository.rstrip("/")):
            wrong.append(url)
    return wrong


# --- the pages ------------------------------------------------------------------


def test_the_readme_fits_a_first_read():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines (at most {MAX_README_LINES})"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_make_target_named_is_in_the_makefile(page):
    targets = makefile_targets((ROOT / "Makefile").read_text(encoding="utf-8"))
    named = make_targets_named(page.read_text(encoding="utf-8"))
    assert {"book", "test"} <= named or page != README
    assert sorted(named - targets) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_path_and_link_named_exists(page):
    assert missing_paths(page.read_text(encoding="utf-8"), ROOT) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_to_the_book_follow_the_config(page):
    text = page.read_text(encoding="utf-8")
    assert misplaced_urls(text, config()["repository"]["url"], website(), ROOT) == []


def test_the_readme_shows_the_site_in_small_described_pictures():
    shown = images(README.read_text(encoding="utf-8"))
    assert 1 <= len(shown) <= 3
    for src, alt in shown:
        assert len(alt.split()) >= 8, f"{src}: alt text too short to describe it: {alt!r}"
        assert (ROOT / src).stat().st_size <= MAX_IMAGE_BYTES, f"{src} is over 300 KiB"


# --- the checkers bite ------------------------------------------------------------


BROKEN = """# A page

Run `make book`, then `make frobnicate` and `NB=book/no-such-chapter.ipynb make test`.

```bash
make serve PORT=1
make also-missing
```

See [the guide](CONTRIBUTING.md#no-such-heading), [up](#a-page),
[down](#nowhere), `book/colab/NAME.ipynb`, `book/colab/NOPE/x.txt`,
`_build/html/index.html` and `/usr/bin/chromium`.

![](docs/img/absent.png)
"""


def test_the_checkers_find_what_a_broken_page_names_wrongly():
    targets = makefile_targets((ROOT / "Makefile").read_text(encoding="utf-8"))
    assert make_targets_named(BROKEN) - targets == {"frobnicate", "also-missing"}
    assert {"book", "test", "serve"} <= targets
    assert missing_paths(BROKEN, ROOT) == [
        "#nowhere (no such heading)",
        "CONTRIBUTING.md#no-such-heading (no such heading)",
        "book/colab/NOPE/x.txt",
        "book/no-such-chapter.ipynb",
        "docs/img/absent.png",
    ]
    assert images(BROKEN) == [("docs/img/absent.png", "")]


def test_the_url_check_finds_a_fork_left_behind_and_a_missing_page(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    site = "https://us.github.io/book/"
    text = (
        f"{site}book/intro.html {site}book/gone.html "
        "https://github.com/us/book/blob/main/LICENSE https://github.com/them/book"
    )
    assert misplaced_urls(text, "https://github.com/us/book", site, tmp_path) == [
        f"{site}book/gone.html (no source for book/gone)",
        "https://github.com/them/book",
    ]


# --- licence and citation ---------------------------------------------------------


def project() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]


def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def test_the_licence_file_gives_mit_for_code_and_cc_by_for_text():
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    mit = (ROOT / "lib" / "LICENSE").read_text(encoding="utf-8")
    assert mit.startswith("MIT License\n") and "Permission is hereby granted" in mit
    assert mit in licence  # the wheel's copy is the root's MIT text, word for word
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in licence
    assert project()["license"] == "MIT"
    assert project()["license-files"] == ["LICENSE"]


def test_the_wheel_metadata_carries_mit_and_its_text(tmp_path):
    """The metadata setuptools writes for the wheel, from a copy of lib/'s
    pyproject.toml, LICENSE and README (the package folders left empty)."""
    source = tmp_path / "lib"
    source.mkdir()
    for name in ("pyproject.toml", "LICENSE", "README.md"):
        (source / name).write_bytes((ROOT / "lib" / name).read_bytes())
    for package in tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["packages"]:
        (source / package.replace(".", "/")).mkdir(parents=True, exist_ok=True)
    out = tmp_path / "out"
    out.mkdir()
    script = f"from setuptools import build_meta; print(build_meta.prepare_metadata_for_build_wheel({str(out)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=source, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    info = out / done.stdout.strip().splitlines()[-1]
    metadata = (info / "METADATA").read_text(encoding="utf-8").split("\n\n")[0].splitlines()
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
    shipped = (info / "licenses" / "LICENSE").read_text(encoding="utf-8")
    assert shipped == (ROOT / "lib" / "LICENSE").read_text(encoding="utf-8")


def test_the_readme_states_the_licence_and_how_to_cite():
    text = README.read_text(encoding="utf-8")
    assert {"licence", "how-to-cite"} <= headings(text)
    section = text[text.index("## Licence") :]
    assert "MIT" in section and "CC BY 4.0" in section and "[LICENSE](LICENSE)" in section
    cite = text[text.index("## How to cite") :]
    cff = citation()
    assert f"version {cff['version']}" in cite
    assert f"({str(cff['date-released'])[:4]})" in cite
    assert cff["repository-code"] in cite


def test_citation_cff_is_valid_and_agrees_with_the_package_and_the_book():
    import check_jsonschema
    import jsonschema

    schema_path = (
        Path(check_jsonschema.__file__).parent
        / "builtin_schemas"
        / "vendor"
        / "citation-file-format.json"
    )
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    cff = citation()
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(cff)]
    assert errors == []
    assert cff["cff-version"] == "1.2.0"
    assert cff["repository-code"] == config()["repository"]["url"]
    assert cff["version"] == project()["version"]
    assert cff["authors"] == [{"name": config()["author"]}]
    assert cff["license"] == ["MIT", "CC-BY-4.0"]
    assert isinstance(cff["date-released"], str)  # quoted: CFF wants a string
    broken = {**cff, "license": ["MIT AND CC-BY-4.0"]}
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))
