"""Fixtures the book tests share: one headless browser for the whole session."""

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
