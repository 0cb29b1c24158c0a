"""Every output a person reads that shows a block's or an inference's cycles says which
of the three numbers they are (docs/glossary.md): kernel cycles, all cycles or a span.
Checked on what each command prints for the committed fixtures: compare's markdown, CSV,
JSON and chart, blocks' markdown, diff's markdown and the report's page, each label that
speaks of cycles; and the docs: the glossary, and a link to it from each page of an
output with such numbers. (The bytes each output holds are their own tests'.)"""

import csv
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest

from support.cli import invoke_extract
from support.paths import FIXTURES, GOLDEN, REPO
from support.reportpage import parse

WORDS = ("kernel cycles", "all cycles", "span")
PROFILE = GOLDEN / "poprt" / "profile_logs_f8weight" / "inference" / "profile.pop"
RECOMPILED = FIXTURES / "vit-f8weight-recompiled" / "profile.pop"


def says_which(text: str) -> bool:
    return any(word in text.lower() for word in WORDS)


def ran(*args, pva=False):
    result = invoke_extract(*args, cwd=REPO, pva=pva)
    assert result.code == 0, result
    return result.stdout.decode("utf-8")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """Two single runs with blocks.json beside their summaries: golden, recompiled."""
    folder = tmp_path_factory.mktemp("words")
    made = []
    for name, profile in (("golden", PROFILE), ("recompiled", RECOMPILED)):
        target = folder / name / "summary.json"
        ran("run", str(profile), "-o", str(target), "--blocks", "--no-pva")
        made.append(target.parent)
    return made


# ---- compare -------------------------------------------------------------------------


def _markdown_rows(text):
    rows = []
    for line in text.splitlines()[2:]:
        if not line.startswith("| "):
            break
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        rows.append((cells[0], cells[1]))
    return rows


@pytest.mark.parametrize("stat", ["first", "median"])
def test_compare_s_markdown_says_kernel_cycles_and_span(recordings, stat):
    text = ran("compare", *map(str, recordings), "--clock-mhz", "1850", "--stat", stat)
    rows = _markdown_rows(text)
    assert len(rows) > 10
    for metric, unit in rows:
        if "cycles" in unit:
            assert says_which(metric + " " + unit), (metric, unit)
        if metric.startswith("stage: ") or metric == "stages, total":
            assert unit.startswith("kernel cycles"), (metric, unit)
        if metric.startswith("device span"):
            assert "span" in metric
    assert (
        "stages, total",
        "kernel cycles" + ("" if stat == "first" else ", median over blocks"),
    ) in rows


def test_compare_s_csv_and_json_units_say_it_too(recordings):
    paths = list(map(str, recordings))
    lines = list(csv.reader(io.StringIO(ran("compare", *paths, "--format", "csv"))))
    header = lines[0]
    section, metric, unit = header.index("section"), header.index("metric"), header.index("unit")
    in_csv = [(line[section], line[metric], line[unit]) for line in lines[1:]]
    rows = json.loads(ran("compare", *paths, "--format", "json"))["rows"]
    in_json = [(row["section"], row["metric"], row["unit"]) for row in rows]
    assert in_csv == in_json and len(in_csv) > 10
    for each in in_csv:
        if "cycles" in each[2]:
            assert says_which(" ".join(each)), each
        if each[0].startswith("kernel stages"):
            assert each[2] == "kernel cycles", each


def test_compare_s_chart_says_kernel_cycles(recordings, tmp_path):
    chart = tmp_path / "stages.svg"
    ran("compare", *map(str, recordings), "--chart", str(chart))
    root = ET.parse(str(chart)).getroot()
    svg = "{http://www.w3.org/2000/svg}"
    texts = {"".join(t.itertext()).strip(): t.get("class") for t in root.iter(svg + "text")}
    assert texts.get("kernel cycles") == "axis-title"
    titles = ["".join(t.itertext()) for t in root.iter(svg + "title")]
    assert titles and all("cycles" not in t or says_which(t) for t in titles), titles
    bars = [r for r in root.iter(svg + "rect") if r.get("class") == "bar"]
    assert bars and all(" kernel cycles" in r.find(svg + "title").text for r in bars)


# ---- blocks, diff ----------------------------------------------------------------------


def test_blocks_markdown_header_says_kernel_cycles():
    text = ran("blocks", str(PROFILE), "--format", "markdown")
    header = text.splitlines()[0]
    assert header.startswith("| stage (kernel cycles) | blocks | min |"), header


def test_diff_s_markdown_says_all_cycles():
    text = ran("diff", str(PROFILE), str(RECOMPILED), "--no-pva")
    lines = text.splitlines()
    headings = [line for line in lines if line.startswith("#")]
    sides = [line for line in lines if line.startswith(("- base: ", "- candidate: "))]
    assert len(sides) == 2
    for line in headings + sides:
        if "cycles" in line or "time" in line:
            assert "all cycles" in line, line
    assert lines[0].startswith("# extract diff: 861887 -> 846709 all cycles, ")
    assert "## Where the time went: all cycles, stages by kinds" in headings


# ---- report ----------------------------------------------------------------------------

LABELS = ("h1", "h2", "p", "summary", "title", "th", "dt", "caption", "legend")


def test_every_label_of_the_report_that_speaks_of_cycles_says_which(recordings, tmp_path):
    target = tmp_path / "report.html"
    ran("report", *map(str, recordings), "-o", str(target))
    page = parse(target.read_bytes())
    spoken = []
    for tag in LABELS:
        for node in page.find_all(tag):
            text = " ".join([node.text(), node.attrs.get("title") or ""])
            if "cycle" in text.lower():
                spoken.append(text)
                assert says_which(text), text
    # They are there to be checked: the table's legend, the chart's title, its bars,
    # the heat maps' legend and their slowest block.
    assert len(spoken) >= 8
    legend = page.find("section", id="table").find_all("p", cls="legend")[0].text()
    assert "kernel cycles" in legend and "span" in legend
    assert page.find("section", id="chart").find("h2").text() == "Kernel cycles per stage"
    headings = page.find("table", id="recordings").find_all("th", scope="col")
    stage_columns = [th for th in headings if th.attrs.get("title", "").startswith("stage")]
    span_columns = [th for th in headings if th.attrs.get("title", "").startswith("device_span")]
    assert len(stage_columns) == 7 and len(span_columns) == 3  # 6 stages, total; 2 spans, mean
    assert all(th.attrs["title"].endswith(" (kernel cycles)") for th in stage_columns)
    assert all("span" in th.text() for th in span_columns)
    maps = page.find("section", id="heat-maps")
    assert "kernel cycles per stage" in maps.find_all("p", cls="legend")[0].text()
    summaries = [s.text() for s in maps.find_all("summary")]
    # The golden profile's slowest body: docs/commands/blocks.md's table, its total's max.
    assert summaries[0] == "golden: slowest run 1, block 26: 190,196 kernel cycles"
    assert re.fullmatch(
        r"recompiled: slowest run \d, block \d+: [\d,]+ kernel cycles", summaries[1]
    )


# ---- the docs --------------------------------------------------------------------------

# The pages of every output that shows a block's or an inference's cycles.
PAGES = [
    "docs/commands/compare.md",
    "docs/commands/blocks.md",
    "docs/commands/report.md",
    "docs/commands/diff.md",
    "docs/commands/trace.md",
    "docs/commands/table.md",
    "docs/formats/summary.md",
    "docs/formats/blocks.md",
    "docs/formats/diff.md",
    "docs/formats/trace.md",
    "docs/formats/budget.md",
    "docs/formats/index.md",
]


def test_the_glossary_defines_the_three_words_and_the_pages_link_it():
    glossary = (REPO / "docs" / "glossary.md").read_text(encoding="utf-8")
    for word in WORDS:
        assert "| **{}** |".format(word) in glossary, word
    assert "(glossary.md)" in (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    for page in PAGES:
        text = (REPO / page).read_text(encoding="utf-8")
        assert "(../glossary.md)" in text, page
