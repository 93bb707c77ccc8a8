"""Headless Chromium for the tests that look at pages (``tests/browser/``).

Chromium and its driver come from the machine's Debian packages (``apt-get install chromium
chromium-driver``; ``.ci/run`` installs them). Without them the browser tests skip, saying why,
unless ``LM_REQUIRE_BROWSER=1`` (which CI sets), when they fail instead.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

INSTALL_HINT = "apt-get install chromium chromium-driver (.ci/run does)"
BINARIES = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver", "chromium-driver")


def _first(names: tuple[str, ...]) -> str | None:
    for name in names:
        path = shutil.which(name) or (f"/usr/lib/chromium/{name}"
                                      if os.path.exists(f"/usr/lib/chromium/{name}") else None)
        if path:
            return path
    return None


def _unavailable(why: str) -> None:
    if os.environ.get("LM_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{why} and LM_REQUIRE_BROWSER=1 — {INSTALL_HINT}")
    pytest.skip(f"{why} — {INSTALL_HINT}")


def open_chromium(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A headless Chromium WebDriver, quit afterwards; skips (or fails under CI) without one."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (pip install -e '.[test]')")
    binary, driver_path = _first(BINARIES), _first(DRIVERS)
    if binary is None or driver_path is None:
        _unavailable("headless Chromium or its driver is not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = binary  # type: ignore[assignment]
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", f"--window-size={width},{height}",
                     "--disable-background-networking", "--no-first-run"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
