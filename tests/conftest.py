"""Fixtures the book tests share: one headless browser for the whole session."""

from __future__ import annotations

import pytest

from tools.browser import chromium


@pytest.fixture(scope="session")
def browser():
    """The found Chromium (tools.browser.find_chromium), launched once per run."""
    with chromium() as launched:
        yield launched
