"""Fixtures `e2e`: a fresh embedded cluster + Git repo from repo-template per test (controller not started);
`chromium`: a headless browser for the web UI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import E2E


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    world = E2E(tmp_path)
    try:
        yield world
    finally:
        world.close()


CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Headless Chromium (Debian's `chromium` package) driven by Playwright. Missing either FAILS the test:
    scripts/bootstrap installs both (Playwright never downloads a browser here)."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the web UI browser tests need Debian's chromium package "
            "(run ./scripts/bootstrap as root, or: apt-get update && apt-get install -y chromium)",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[test]' (or ./scripts/bootstrap)", pytrace=False)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
        )
        try:
            yield browser
        finally:
            browser.close()
