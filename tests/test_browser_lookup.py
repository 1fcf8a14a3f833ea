"""Where the tests find their browser (tools.browser.find_chromium), without launching one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.browser import NoBrowserError, find_chromium


def executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def nowhere(name: str) -> None:
    return None


def test_chromium_variable_wins_even_at_an_unusual_path(tmp_path):
    debian = executable(tmp_path / "debian-chromium")
    (tmp_path / "opt" / "Chrome Beta").mkdir(parents=True)
    odd = executable(tmp_path / "opt" / "Chrome Beta" / "chrome")
    found = find_chromium({"CHROMIUM": str(odd)}, debian=debian, which=lambda name: "/x/chromium")
    assert found == str(odd)


def test_chromium_variable_naming_nothing_is_an_error(tmp_path):
    missing = tmp_path / "no-such-browser"
    with pytest.raises(NoBrowserError, match="CHROMIUM=.*no-such-browser.*not an executable"):
        find_chromium({"CHROMIUM": str(missing)}, debian=executable(tmp_path / "c"))


def test_chromium_variable_naming_a_plain_file_is_an_error(tmp_path):
    plain = tmp_path / "chrome"
    plain.write_text("not a program")
    with pytest.raises(NoBrowserError, match="not an executable"):
        find_chromium({"CHROMIUM": str(plain)}, debian=tmp_path / "none", which=nowhere)


def test_debian_chromium_comes_before_path(tmp_path):
    debian = executable(tmp_path / "chromium")
    assert find_chromium({}, debian=debian, which=lambda name: "/x/" + name) == str(debian)


@pytest.mark.parametrize("name", ["chromium", "google-chrome"])
def test_path_is_searched_when_there_is_no_debian_chromium(tmp_path, name):
    asked = []

    def which(candidate):
        asked.append(candidate)
        return f"/runner/bin/{candidate}" if candidate == name else None

    assert find_chromium({}, debian=tmp_path / "absent", which=which) == f"/runner/bin/{name}"
    assert asked[-1] == name


def test_no_browser_anywhere_names_all_three_places(tmp_path):
    with pytest.raises(NoBrowserError) as error:
        find_chromium({"CHROMIUM": ""}, debian=tmp_path / "absent", which=nowhere)
    message = str(error.value)
    for place in ("CHROMIUM", str(tmp_path / "absent"), "chromium", "google-chrome", "PATH"):
        assert place in message


def test_default_lookup_reads_the_real_environment(monkeypatch, tmp_path):
    odd = executable(tmp_path / "my-chrome")
    monkeypatch.setitem(os.environ, "CHROMIUM", str(odd))
    assert find_chromium() == str(odd)
