"""A recording on several IPUs: compare's markdown, the report and blocks' markdown say
that its stage cycles are kernel cycles added up over the IPUs' rows; json and csv are
as they were; on one IPU nothing changes.

By hand, from fixtures/edge/README.md: `multi-ipu` has two IPUs, every step a row on
each. Its first body's kernels are step 4 (fused QKV projection: 260 on IPU 0, 250 on
IPU 1) and step 7 (MLP up: 410 and 430), so compare's fused QKV projection is
260 + 250 = 510 and MLP up 410 + 430 = 840, for steps that took about 270 and 440
cycles on each IPU at once. `empty-code-bytes` is the one-IPU baseline: 260 and 410.
Its blocks: body 0 (steps 4 to 9) holds steps 4 and 7, body 1 (step 9, the second
anchor, 280 + 270) runs to the output: fused QKV projection 510 and 550.
"""

import json

import pytest

from support.cli import invoke_extract
from support.paths import REPO
from support.reportpage import parse

MULTI = "fixtures/edge/multi-ipu/profile.pop"  # from the repository's root
SINGLE = "fixtures/edge/empty-code-bytes/profile.pop"
SUMMED = (
    "kernel cycles, each kernel step's cycles added up over its rows on every IPU it ran "
    "on: the IPUs run at the same time, so these sums are not the time a step took."
)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """single/ and multi/: each a summary.json with its blocks.json."""
    out = tmp_path_factory.mktemp("ipus")
    for name, profile in (("single", SINGLE), ("multi", MULTI)):
        done = invoke_extract(profile, "-o", out / name / "summary.json", "--blocks", cwd=REPO)
        assert done.code == 0, done
    return out


def compare(*args):
    result = invoke_extract("compare", *args, pva=False)
    assert result.code in (0, 3), result
    return result


def test_compare_s_markdown_says_what_the_stage_rows_are(recordings):
    result = compare(recordings / "single", recordings / "multi")
    lines = result.stdout.decode().splitlines()
    assert "| stage: fused QKV projection | kernel cycles | 260 | 510 (+96.2%) |" in lines
    assert "| stage: MLP up | kernel cycles | 410 | 840 (+104.9%) |" in lines
    assert lines[-2:] == [
        "",
        "Several IPUs: the stage rows and their total of multi (2 IPUs) are " + SUMMED,
    ]
    assert lines[-3].startswith("| ")  # right under the table


def test_compare_s_note_comes_before_the_budget_line(recordings, tmp_path):
    budget = tmp_path / "budget.toml"
    budget.write_text('[budgets]\n"stage:*" = "+2%"\n')
    result = compare(recordings / "single", recordings / "multi", "--budget", budget)
    assert result.code == 3, result
    lines = result.stdout.decode().splitlines()
    assert lines[-3].startswith("Several IPUs: the stage rows and their total of multi (2 IPUs)")
    assert lines[-2:] == ["", "budget: 2 of 2 checks failed"]


def test_compare_on_one_ipu_and_its_csv_and_json_say_nothing_more(recordings):
    single = compare(recordings / "single", recordings / "single" / "summary.json")
    assert single.stdout.decode().splitlines()[-1].startswith("| attention exchange: ")
    assert b"IPU" not in single.stdout
    for form in ("csv", "json"):
        both = compare(recordings / "single", recordings / "multi", "-f", form)
        assert b"Several IPUs" not in both.stdout and b"IPUs" not in both.stdout
    data = json.loads(compare(recordings / "single", recordings / "multi", "-f", "json").stdout)
    rows = {row["metric_name"]: row["values"] for row in data["rows"]}
    assert rows["stage:fused QKV projection"] == [260, 510]


def test_blocks_markdown_says_what_its_cycles_are():
    result = invoke_extract("blocks", MULTI, "-f", "markdown", cwd=REPO)
    assert result.code == 0, result
    lines = result.stdout.decode().splitlines()
    # fused QKV over the two bodies: 510 and 550 (by hand, above)
    assert lines[2] == (
        "| fused QKV projection | 2 | 510 | 530.0 | 530.0 | 550 | 20.0 "
        "| run 1, block 0 | run 1, block 1 |"
    )
    assert lines[-2:] == ["", "Several IPUs (2): these are " + SUMMED]


def test_blocks_on_one_ipu_and_blocks_json_and_csv_say_nothing_more():
    single = invoke_extract("blocks", SINGLE, "-f", "markdown", cwd=REPO)
    assert single.code == 0, single
    assert single.stdout.decode().splitlines()[-1].startswith("| **total** |")
    for form in ("json", "csv"):
        result = invoke_extract("blocks", MULTI, "-f", form, cwd=REPO)
        assert result.code == 0, result
        assert b"IPU" not in result.stdout


def test_the_report_says_it_for_that_recording(recordings, tmp_path):
    target = tmp_path / "report.html"
    result = invoke_extract("report", recordings, "-o", target, pva=False)
    assert result.code == 0, result
    page = parse(target.read_bytes())
    note = page.find("p", id="several-ipus").text()
    assert note == (
        "Several IPUs: the stage columns, their total, the chart and the heat map of "
        "multi (2 IPUs) are " + SUMMED
    )
    maps = page.find_all("details", cls="heat-map")
    assert [m.find("summary").text().split(":")[0] for m in maps] == ["multi", "single"]
    assert [[p.text() for p in m.find_all("p", cls="note")] for m in maps] == [
        ["2 IPUs: kernel cycles, added up over the IPUs' rows of each step (not time)."],
        [],
    ]


def test_a_one_ipu_report_has_no_note(recordings, tmp_path):
    target = tmp_path / "report.html"
    result = invoke_extract("report", recordings / "single", "-o", target, pva=False)
    assert result.code == 0, result
    html = target.read_bytes()
    assert b"several-ipus" not in html and b"IPUs" not in html


def test_table_keeps_its_rows_as_they_were(recordings):
    result = invoke_extract("table", recordings / "multi", pva=False)
    assert result.code == 0, result
    text = result.stdout.decode()
    assert "multi,fixtures/edge/multi-ipu/profile.pop,stage:fused QKV projection,510\r\n" in text
    assert "IPU" not in text
