"""Make docs/report.png: the `extract report` page of the committed fixtures, as
headless Chromium shows it. Run from anywhere, with the project's venv (Playwright is a
test dependency; Debian's /usr/bin/chromium is the browser):

    .venv/bin/python docs/make_screenshot.py

It extracts every fixture profile as a batch into a temporary folder (with the pva
stand-in, tests/pva_double; with --blocks, --breakdown and --memory when this extract
has them, so that the page has its heat maps, breakdowns and tile maps), adds the
hand-made FP8 variant summary (fixtures/vit-f8weight-b), makes the report against the
golden recording, and takes a screenshot of the whole page.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from support.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (the tests' launch)

TARGET = REPO / "docs" / "report.png"
GOLDEN = "vit-f8weight/poprt/profile_logs_f8weight/inference"
VARIANT = "vit-f8weight-b (hand-made FP8 variant)"


SHOW_ONE_OF_EACH = """() => {
  const map = "svg.tilemap:not(.key-cell)";
  const richest = (all) =>
    all.reduce((best, d) => (d.innerHTML.length > best.innerHTML.length ? d : best));
  for (const kind of ["heat-map", "breakdown", "tile-memory"]) {
    const all = Array.from(document.querySelectorAll("details." + kind));
    if (all.length === 0) continue;
    const shown =
      kind === "tile-memory"
        ? all.find((d) => d.querySelector(map + " rect.over")) || richest(all)
        : richest(all);
    for (const details of all) details.open = details === shown;
  }
}"""


def extract(*args, check=True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "tests" / "pva_double"))
    return subprocess.run(
        [sys.executable, "-m", "extractor"] + [str(a) for a in args],
        cwd=str(REPO),
        env=env,
        check=check,
        capture_output=True,
    )


def derived_options() -> list:
    """--blocks, --breakdown and --memory, those this extract has: the page's heat maps,
    breakdowns and tile maps."""
    shown = extract("run", "--help").stdout.decode("utf-8", "replace")
    return [option for option in ("--blocks", "--breakdown", "--memory") if option in shown]


def main() -> int:
    with tempfile.TemporaryDirectory() as temporary:
        out = Path(temporary) / "out"
        options = derived_options()
        extract("fixtures", "-o", out, "--jobs", "2", "--quiet", *options)
        page = Path(temporary) / "report.html"
        extract(
            "report",
            REPO / "fixtures" / "vit-f8weight-b" / "expected.json",
            out,
            "--label",
            VARIANT,
            "--baseline",
            GOLDEN,
            "--title",
            "extract report: the committed fixtures",
            "-o",
            page,
        )
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            view = browser.new_page(viewport={"width": 1500, "height": 900})
            view.goto(page.as_uri(), wait_until="load")
            # A picture of a readable length: of each kind of drawing (heat maps,
            # breakdowns, tile memory), one open and the rest closed, as a reader clicks
            # them: the largest, and of the tile memory a map with tiles over the limit.
            view.evaluate(SHOW_ONE_OF_EACH)
            view.screenshot(path=str(TARGET), full_page=True)
            browser.close()
    print(
        "{}: written ({} bytes){}".format(
            TARGET.relative_to(REPO),
            TARGET.stat().st_size,
            "" if options else "; no --blocks in this extract: no heat maps",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
