"""The report in a real browser: Debian's Chromium (/usr/bin/chromium, which .ci/run
installs), headless, driven by Playwright for Python (its own browsers are never
downloaded: `playwright install` is not run). Chromium is required: without it these
tests fail, they do not skip.

The page is made through the real CLI (in-process); the browser loads it from file://.
"""

from pathlib import Path

import pytest
from test_report import batch, blocks_file

from support.browser import launched_chromium
from support.cli import invoke_extract
from support.reportpage import A, B, write_summary


@pytest.fixture(scope="module")
def browser():
    with launched_chromium("the report's browser tests") as chromium:
        yield chromium


class Loaded:
    """A page loaded from a file, with every request and console message it made."""

    def __init__(self, browser, path: Path, scripts: bool = True):
        self.context = browser.new_context(java_script_enabled=scripts)
        self.page = self.context.new_page()
        self.requests, self.console, self.errors = [], [], []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", lambda message: self.console.append((message.type, message.text)))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url, wait_until="load")

    def close(self):
        self.context.close()

    def labels(self):
        return self.page.eval_on_selector_all(
            "#recordings tbody tr", "rows => rows.map(r => r.cells[0].dataset.s)"
        )


def make_report(folder: Path, *args) -> Path:
    target = folder / "report.html"
    result = invoke_extract("report", *(list(args) + ["-o", target]), pva=False)
    assert result.code == 0, result
    return target


@pytest.fixture(scope="module")
def batch_report(tmp_path_factory):
    """The page of a batch: 1-golden, 2-variant (with a blocks.json), 3-small, and an
    index with a failure (test_report.batch)."""
    folder = tmp_path_factory.mktemp("batch")
    out = batch(folder)
    blocks_file(out / "2-variant")
    return make_report(folder, out)


HOSTILE = '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned=2">'


@pytest.fixture(scope="module")
def odd_report(tmp_path_factory):
    """Three recordings: A under a hostile label, one with no kernels, B."""
    folder = tmp_path_factory.mktemp("odd")

    def no_kernels(data):
        data["kernels"] = []

    empty = write_summary(folder / "empty", A, no_kernels)
    return make_report(folder, A, empty, B, "--label", HOSTILE, "--label", "empty", "--label", "b")


@pytest.fixture
def loaded(browser, batch_report):
    opened = Loaded(browser, batch_report)
    yield opened
    opened.close()


def test_loads_offline_with_no_error(loaded):
    page = loaded.page
    assert loaded.requests == [loaded.url]  # the page itself, nothing else
    assert loaded.errors == []
    assert [m for m in loaded.console if m[0] in ("error", "warning")] == []
    assert page.locator("#recordings tbody tr").count() == 3
    assert page.locator("svg.chart g.bar").count() == 3
    assert page.locator("svg.chart g.bar rect").count() == 18
    assert page.locator("#heat-maps table.heat tbody tr").count() == 6
    assert page.locator("table.failures tbody tr").count() == 1
    assert page.locator("#sort-hint").is_visible()  # the script ran
    # the chart is drawn: the golden bar (its label, its stages, its total) is wider
    # than the plot (620 px)
    width = page.eval_on_selector("svg.chart g.bar", "g => g.getBBox().width")
    assert width > 620


def test_clicking_a_heading_sorts_and_again_reverses(loaded):
    page = loaded.page
    assert loaded.labels() == ["1-golden", "2-variant", "3-small"]
    heading = page.locator("#recordings thead th", has_text="stages total")
    heading.locator("button").click()
    # totals by hand: 3-small 147159, 2-variant 156220, 1-golden 173253
    assert loaded.labels() == ["3-small", "2-variant", "1-golden"]
    assert heading.get_attribute("aria-sort") == "ascending"
    heading.locator("button").click()
    assert loaded.labels() == ["1-golden", "2-variant", "3-small"]
    assert heading.get_attribute("aria-sort") == "descending"
    # PV: 1-golden 12900, 3-small 12900, 2-variant 14190 (ties keep their order)
    page.locator("#recordings thead th", has_text="PV").locator("button").click()
    assert loaded.labels() == ["1-golden", "3-small", "2-variant"]
    assert heading.get_attribute("aria-sort") is None
    page.locator("#recordings thead th", has_text="recording").locator("button").click()
    page.locator("#recordings thead th", has_text="recording").locator("button").click()
    assert loaded.labels() == ["3-small", "2-variant", "1-golden"]
    assert loaded.errors == [] and loaded.requests == [loaded.url]


def test_hostile_label_stays_text_and_missing_values_sort_last(browser, odd_report):
    opened = Loaded(browser, odd_report)
    try:
        page = opened.page
        assert page.evaluate("typeof window.pwned") == "undefined"
        assert page.locator("img").count() == 0
        assert opened.labels() == [HOSTILE, "empty", "b"]
        heading = page.locator("#recordings thead th", has_text="stages total")
        heading.locator("button").click()
        assert opened.labels() == ["b", HOSTILE, "empty"]
        heading.locator("button").click()
        assert opened.labels() == [HOSTILE, "b", "empty"]
        assert opened.requests == [opened.url] and opened.errors == []
    finally:
        opened.close()


def test_readable_with_scripts_off(browser, batch_report):
    opened = Loaded(browser, batch_report, scripts=False)
    try:
        page = opened.page
        assert page.locator("#recordings tbody tr").count() == 3
        assert page.locator("#recordings thead button").count() == 0
        assert not page.locator("#sort-hint").is_visible()
        assert "\u25bc -9.8%" in page.locator("#recordings tbody tr").nth(1).inner_text()
        assert page.locator("svg.chart g.bar").count() == 3
        assert page.locator("#heat-maps table.heat").is_visible()
        assert opened.requests == [opened.url]
    finally:
        opened.close()


@pytest.fixture(scope="module")
def breakdown_reports(tmp_path_factory):
    """Two pages: tile-memory's and vit-f8weight's recordings with their breakdown.json
    (test_report_breakdown.made), and 30 recordings of 40 IPUs each (many_recordings)."""
    from test_report_breakdown import TILE_MEMORY, VIT, extracted, many_recordings

    folder = tmp_path_factory.mktemp("breakdowns")
    made = extracted(folder / "tm", TILE_MEMORY), extracted(folder / "vit", VIT)
    (folder / "few").mkdir()
    (folder / "many").mkdir()
    return (
        make_report(folder / "few", *made),
        make_report(folder / "many", *many_recordings(made, folder / "recordings")),
    )


def test_the_breakdowns_render_and_are_visible(browser, breakdown_reports):
    opened = Loaded(browser, breakdown_reports[0])
    try:
        page = opened.page
        assert opened.requests == [opened.url] and opened.errors == []
        assert [m for m in opened.console if m[0] in ("error", "warning")] == []
        assert page.locator("#breakdowns").is_visible()
        assert page.locator("#breakdowns details.breakdown").count() == 2
        charts = page.locator("#breakdowns svg.chart")
        assert charts.count() == 2
        for index, bars in ((0, 2), (1, 1)):  # tile-memory: 2 IPUs; vit-f8weight: 1
            chart = charts.nth(index)
            assert chart.is_visible()
            assert chart.locator("g.bar").count() == bars
            # drawn: the bar of all cycles fills the plot (620 px) from the labels on
            width = chart.locator("g.bar").first.evaluate("g => g.getBBox().width")
            assert width > 620
        # tile-memory's 7 ops on each of its 2 IPUs, vit-f8weight's first 10
        assert page.locator("#breakdowns table.ops").nth(0).locator("tbody tr").count() == 16
        assert page.locator("#breakdowns table.ops").nth(1).locator("tbody tr").count() == 11
        assert page.locator("#breakdowns table.ops").nth(1).is_visible()
        heading = page.locator("#recordings thead th", has_text="all cycles")
        assert heading.is_visible()
    finally:
        opened.close()


def test_many_breakdowns_stay_bounded(browser, breakdown_reports):
    path = breakdown_reports[1]
    assert path.stat().st_size < 3000000
    opened = Loaded(browser, path)
    try:
        page = opened.page
        assert opened.requests == [opened.url] and opened.errors == []
        assert [m for m in opened.console if m[0] in ("error", "warning")] == []
        assert page.locator("#breakdowns details.breakdown").count() == 30
        # the first 10 open, of 28 drawn (16 bars each); the last two listed only
        assert page.locator("#breakdowns details[open]").count() == 10
        assert page.locator("#breakdowns svg.chart").count() == 28
        assert page.locator("#breakdowns svg.chart").first.locator("g.bar").count() == 16
        assert page.locator("#breakdowns svg.chart").first.is_visible()
        # what is laid out stays a page a person scrolls: 10 open breakdowns of 16 IPUs
        height = page.evaluate("document.documentElement.scrollHeight")
        assert height < 200000, height
    finally:
        opened.close()


@pytest.fixture(scope="module")
def memory_report(tmp_path_factory):
    """tile-memory's recording with its memory.json (2 IPUs of 32 tiles, tiles 5, 17 and
    40 over the limit: test_report_memory)."""
    from test_report_memory import PROFILE, extracted

    folder = tmp_path_factory.mktemp("memory")
    return make_report(folder, extracted(folder / "tm", PROFILE))


def test_the_tile_map_renders_and_over_limit_tiles_stand_out(browser, memory_report):
    opened = Loaded(browser, memory_report)
    try:
        page = opened.page
        assert opened.requests == [opened.url] and opened.errors == []
        assert [m for m in opened.console if m[0] in ("error", "warning")] == []
        tile_map = page.locator("#tile-memory svg.tilemap:not(.key-cell)")
        assert tile_map.count() == 1 and tile_map.is_visible()
        box = tile_map.bounding_box()
        # 32 tiles a row (one IPU) of 11 px after 64 px of names; two blocks, one under
        # the other
        assert box["width"] >= 64 + 32 * 11 and box["height"] >= 2 * 11
        cells = tile_map.locator("rect")
        assert cells.count() == 64
        looks = cells.evaluate_all(
            """rects => rects.map(r => {
                const s = getComputedStyle(r), b = r.getBoundingClientRect();
                return [r.classList.contains('over'), s.fill, s.stroke,
                        parseFloat(s.strokeWidth), b.width, b.height];
            })"""
        )
        for over, fill, stroke, stroke_width, width, height in looks:
            assert width > 5 and height > 5  # every cell drawn, none of zero size
            if over:  # a hollow black ring: white inside, a 2 px black edge
                assert (fill, stroke, stroke_width) == ("rgb(255, 255, 255)", "rgb(0, 0, 0)", 2)
            else:  # a shade, no heavy edge, never white
                assert fill != "rgb(255, 255, 255)" and stroke != "rgb(0, 0, 0)"
                assert stroke_width < 1
        assert sum(1 for look in looks if look[0]) == 3
        # the IPUs' blocks: IPU 1's first cell below IPU 0's last
        blocks = tile_map.locator("g.ipu")
        assert blocks.count() == 2
        last = blocks.nth(0).locator("rect").last.bounding_box()
        first = blocks.nth(1).locator("rect").first.bounding_box()
        assert first["y"] > last["y"] + last["height"]
        assert page.locator("#tile-memory .over-count").is_visible()
        bar = page.locator("#tile-memory svg.chart g.bar")
        assert bar.count() == 1 and bar.is_visible()
        assert bar.evaluate("g => g.getBBox().width") > 620
        # a cell's tooltip is its <title>
        assert (
            cells.nth(40)
            .locator("title")
            .text_content()
            .startswith("tile 40, IPU 1: 707,628 bytes")
        )
    finally:
        opened.close()
