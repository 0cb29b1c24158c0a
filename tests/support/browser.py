"""Debian's Chromium (/usr/bin/chromium, which .ci/run installs), headless, driven by
Playwright for Python: its own browsers are never downloaded (`playwright install` is
not run). The report's browser tests and the trace viewers' tests launch it here; without
Chromium they fail, they do not skip."""

import contextlib
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextlib.contextmanager
def launched_chromium(needed_by: str):
    """A headless Chromium for the length of the block; `needed_by` names the tests in
    the failure when Chromium is missing."""
    assert CHROMIUM.exists(), (
        "{} is missing: {} need Debian's chromium package "
        "(apt-get install chromium; .ci/run installs it)".format(CHROMIUM, needed_by)
    )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
