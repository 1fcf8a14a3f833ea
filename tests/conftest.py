"""Fixtures the book tests share: one headless browser for the whole session, and
the live explorers' pages (tests/live_harness.py)."""

from __future__ import annotations

import pytest

from tools.browser import chromium


def pytest_configure(config):
    # Two tiers (Makefile): `make test` deselects these, `make check` runs
    # them alone (`make test-slow`). Only tests that check the test machinery
    # itself carry the mark: no edit of a chapter or of the library can break them.
    config.addinivalue_line(
        "markers", "slow: checks of the test machinery that start kernels; run by make check"
    )


@pytest.fixture(scope="session")
def browser():
    """The found Chromium (tools.browser.find_chromium), launched once per run."""
    with chromium() as launched:
        yield launched


# The live explorers' browser tests (tests/live_harness.py): each module names
# its explorer in EXPLORER.
@pytest.fixture(scope="module")
def explorer(request):
    """The module's live explorer (tests.live_harness.Explorer)."""
    return request.module.EXPLORER


@pytest.fixture(scope="module")
def fragment_page(explorer, tmp_path_factory):
    """A folder with a page holding only the explorer's fragment, and its widget."""
    from tests.live_harness import write_page

    widget = explorer.widget()
    folder = tmp_path_factory.mktemp("live")
    write_page(folder, widget)
    return folder, widget
