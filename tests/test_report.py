"""`extract report`: one self-contained HTML page. Its structure is read back with the
standard library's HTML parser (tests/support/reportpage.py); the numbers expected are worked
out by hand from the fixture summaries and the hand-made blocks.json and index here.
The page in a real browser: test_report_browser.py.
"""

import json
import os
import subprocess
import sys
import zipfile

import pytest

from support.cli import invoke_extract
from support.reportpage import A, B, index_entry, parse, record_blocks, write_index, write_summary

HOSTILE_LABEL = "</script><script>alert(\"x\")</script> & 'q' <b>\u00e9\u6f22</b>"
HOSTILE_STAGE = '<img src=x onerror=alert(1)> & "MLP" \u00fc'


def report(*args, **kwargs):
    return invoke_extract("report", *args, pva=False, **kwargs)


def made(tmp_path, *args):
    target = tmp_path / "report.html"
    result = report(*(list(args) + ["-o", target]))
    assert result.code == 0, result
    assert result.stdout == b""
    return target.read_bytes()


def batch(tmp_path):
    """out/1-golden (A), out/2-variant (B), out/3-small (A with one stage halved) and an
    index: three ok profiles (one warned) and one failed."""
    out = tmp_path / "out"
    write_summary(out / "1-golden", A)
    write_summary(out / "2-variant", B)

    def halve_mlp_down(data):
        for kernel in data["kernels"]:
            if kernel["stage"] == "MLP down":
                kernel["cycles"] = kernel["cycles"] // 2  # 52187 -> 26093

    write_summary(out / "3-small", A, halve_mlp_down)
    write_index(
        out,
        [
            index_entry("1-golden/summary.json", "runs/1-golden/profile.pop"),
            index_entry(
                "2-variant/summary.json",
                "runs/2-variant/profile.pop",
                warnings=['no kernel <step> matches & "so on"'],
            ),
            index_entry("3-small/summary.json", "runs/3-small/profile.pop"),
            index_entry(
                "4-bad/summary.json",
                "runs/4-bad/profile.pop",
                status="failed",
                reason="runs/4-bad/profile.pop: not a profile: <file is not a database>",
            ),
        ],
    )
    return out


def rows_of(page, table_id="recordings"):
    return page.find("table", id=table_id).find("tbody").find_all("tr")


# ---- what the page holds -------------------------------------------------------------


def test_header_table_chart_and_failures(tmp_path):
    html = made(tmp_path, batch(tmp_path), "--title", "Sweep")
    page = parse(html)
    assert page.find("head").find("title").text() == "Sweep" and page.find("h1").text() == "Sweep"
    meta = page.find("p", cls="meta").text()
    assert "by extract " in meta and " UTC" in meta
    assert page.find(id="count-recordings").text() == "3"
    assert page.find(id="count-failed").text() == "1"
    assert page.find(id="count-warned").text() == "1"

    rows = rows_of(page)
    assert [r.find("th").attrs["data-s"] for r in rows] == ["1-golden", "2-variant", "3-small"]
    assert rows[0].classes == ["baseline"]  # the first, by default
    assert (
        rows[0].find("th").attrs["title"] == "../poprt/profile_logs_f8weight/inference/profile.pop"
    )
    headings = [
        th.text()
        for th in page.find("table", id="recordings").find_all("th")
        if th.attrs.get("scope") == "col"
    ]
    # The stages in stage_rules.toml's order (PV's rule comes before QK transpose's and
    # fused QKV's there), not in the order the summary's kernels run them.
    assert headings == [
        "recording",
        "PV",
        "QK transpose",
        "fused QKV projection",
        "output projection",
        "MLP up",
        "MLP down",
        "stages total",
        "device span 1",
        "device span 2",
        "device span mean",
        "QKV executions",
        "exchange memory max",
        "allocated memory max",
    ]

    def cells(row):
        return dict(zip(headings[1:], row.find_all("td")))

    golden, variant, small = (cells(r) for r in rows)
    assert golden["stages total"].text() == "173,253"
    assert golden["stages total"].attrs["data-v"] == "173253"
    assert golden["stages total"].find_all("span") == []  # the baseline has no change
    # By hand: B against A. Total (156220 - 173253) / 173253 = -9.83 %: better (down);
    # PV 14190 against 12900: +10.0 %, worse (up); QK transpose 8488 both: the same.
    total = variant["stages total"].find("span")
    assert (total.classes, total.text()) == (["d", "better"], "\u25bc -9.8%")
    assert variant["stages total"].text() == "156,220\u25bc -9.8%"
    pv = variant["PV"].find("span")
    assert (pv.classes, pv.text()) == (["d", "worse"], "\u25b2 +10.0%")
    assert variant["QK transpose"].find("span").text() == "= +0.0%"
    # device span mean: (14733907 + 14733915) / 2 = 14733911 against 15987661.5: -7.8 %
    assert variant["device span mean"].text() == "14,733,911.0\u25bc -7.8%"
    # memory max: 590002 against 596494 = -1.1 %; exchange 36880 against 37092 = -0.6 %
    assert variant["allocated memory max"].find("span").text() == "\u25bc -1.1%"
    assert variant["exchange memory max"].find("span").text() == "\u25bc -0.6%"
    # 3-small: MLP down 26093 against 52187 (-50.0 %), total 173253 - 26094 = 147159
    assert small["MLP down"].text() == "26,093\u25bc -50.0%"
    assert small["stages total"].attrs["data-v"] == "147159"

    chart = page.find("svg", cls="chart")
    bars = chart.find_all("g", cls="bar")
    assert [b.find("text", cls="name").text() for b in bars] == ["1-golden", "2-variant", "3-small"]
    widths = [sum(float(r.attrs["width"]) for r in b.find_all("rect")) for b in bars]
    # one scale: the longest bar (A's 173253 cycles) is the plot's 620 px
    assert widths[0] == pytest.approx(620, abs=0.05)
    assert widths[1] == pytest.approx(620 * 156220 / 173253, abs=0.05)
    assert [len(b.find_all("rect")) for b in bars] == [6, 6, 6]

    failures = page.find("table", cls="failures").find("tbody").find_all("tr")
    assert [[td.text() for td in tr.find_all("td")] for tr in failures] == [
        [
            "runs/4-bad/profile.pop",
            ("runs/4-bad/profile.pop: not a profile: <file is not a database>"),
        ]
    ]
    warned = page.find("ul", cls="warnings")
    assert warned.text().strip() == 'runs/2-variant/profile.popno kernel <step> matches & "so on"'
    assert page.find_all(id="heat-maps") == [] and page.find_all(id="budget") == []


def test_baseline_option(tmp_path):
    page = parse(made(tmp_path, batch(tmp_path), "--baseline", "2-variant"))
    rows = rows_of(page)
    assert [r.classes for r in rows] == [[], ["baseline"], []]
    # A against B: (173253 - 156220) / 156220 = +10.9 %, worse
    golden_total = [td for td in rows[0].find_all("td")][6]
    assert golden_total.find("span").text() == "\u25b2 +10.9%"
    assert "2-variant" in page.find("p", cls="meta").text()


def test_unknown_baseline_is_a_usage_error(tmp_path):
    result = report(batch(tmp_path), "--baseline", "nope", "-o", tmp_path / "r.html")
    assert result.code == 2, result
    assert result.stderr == (
        "extract: error: --baseline nope: no recording is labelled so "
        "(the labels: 1-golden, 2-variant, 3-small)\n"
    )
    assert not (tmp_path / "r.html").exists()


def test_self_contained(tmp_path):
    html = made(tmp_path, batch(tmp_path))
    page = parse(html)
    assert len(page.find_all("script")) == 1 and "src" not in page.find("script").attrs
    assert page.find_all("link") == [] and page.find_all("img") == []
    assert page.find_all("iframe") == [] and page.find_all("object") == []
    for node in page.find_all():
        for name, value in node.attrs.items():
            assert name not in ("src", "srcset", "action"), node.tag
            if name == "href":
                assert value.startswith("#"), value  # links within the page only
    text = html.decode("utf-8")
    assert (
        "url(" not in text
        and "@import" not in text
        and "//" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "").replace("// ", "")
    )


def test_without_an_index_and_on_stdout(tmp_path):
    result = report(A, B)
    assert result.code == 0, result
    assert result.stdout.startswith(b"<!DOCTYPE html>")
    page = parse(result.stdout)
    assert page.find_all(id="count-failed") == [] and page.find_all(id="failures") == []
    assert "No batch index" in page.find("p", cls="note").text()
    assert len(rows_of(page)) == 2


def test_one_recording(tmp_path):
    page = parse(made(tmp_path, A))
    assert len(rows_of(page)) == 1 and page.find("tbody").find("tr").classes == ["baseline"]


# ---- escaping ------------------------------------------------------------------------


def test_every_name_reaches_the_page_as_text(tmp_path):
    def odd_names(data):
        for kernel in data["kernels"]:
            if kernel["stage"] == "MLP up":
                kernel["stage"] = HOSTILE_STAGE
        data["profile"] = 'runs/"x" & <y>/profile.pop'

    first = write_summary(tmp_path / "a", A, odd_names)
    second = write_summary(tmp_path / "b", B)
    title = '<i>report</i> & "more"'
    html = made(
        tmp_path, first, second, "--label", HOSTILE_LABEL, "--label", "plain", "--title", title
    )
    page = parse(html)
    # nothing from the names became markup
    assert len(page.find_all("script")) == 1
    assert page.find_all("img") == [] and page.find_all("i") == []
    assert page.find_all("b") == []
    # ... and each is shown exactly as it is
    assert page.find("head").find("title").text() == title
    assert rows_of(page)[0].find("th").attrs["data-s"] == HOSTILE_LABEL
    assert HOSTILE_LABEL + " baseline" == rows_of(page)[0].find("th").text()
    assert rows_of(page)[0].find("th").attrs["title"] == 'runs/"x" & <y>/profile.pop'
    stage_headings = [
        th
        for th in page.find("table", id="recordings").find_all("th")
        if th.attrs.get("title") == "stage:" + HOSTILE_STAGE + " (kernel cycles)"
    ]
    assert [th.text() for th in stage_headings] == [HOSTILE_STAGE]
    legend = [k.text() for k in page.find_all("span", cls="key")]
    assert HOSTILE_STAGE in legend
    assert page.find_all("g", cls="bar")[0].find_all("title")[0].text().startswith(HOSTILE_LABEL)
    text = html.decode("utf-8")
    assert "</script><script>alert" not in text and "<img src" not in text
    assert "\u00e9\u6f22" in text  # non-ASCII as UTF-8, not as entities


def test_a_lone_surrogate_is_shown_escaped(tmp_path):
    path = tmp_path / "s" / "summary.json"
    path.parent.mkdir()
    path.write_text(A.read_text().replace('"MLP up"', '"MLP \\ud800 up"'))
    html = made(tmp_path, path)
    assert "MLP \\ud800 up" in html.decode("utf-8")  # valid UTF-8


# ---- the heat map --------------------------------------------------------------------

ODD = '<odd> & "stage"'


def blocks_file(folder):
    """A blocks.json by hand (docs/formats/blocks.md's format): two runs of three blocks."""

    def body(run, block, cycles):
        total = sum(cycles.values())
        return {
            "run": run,
            "block": block,
            "first_step": 100 * (run * 3 + block),
            "end_step": None,
            "kernels": len(cycles),
            "cycles": cycles,
            "total": total,
        }

    qkv, up = "fused QKV projection", "MLP up"
    blocks = [
        body(1, 0, {qkv: 100, up: 200, ODD: 50}),  # 350
        body(1, 1, {qkv: 110, up: 200, ODD: 10}),  # 320
        body(1, 2, {qkv: 100, up: 260}),  # 360
        body(2, 0, {qkv: 140, up: 200, ODD: 30}),  # 370
        body(2, 1, {qkv: 100, up: 400, ODD: 50}),  # 550: the slowest
        body(2, 2, {qkv: 120, up: 200, ODD: 50}),
    ]  # 370
    data = {
        "profile": "p.pop",
        "stages": [qkv, up, ODD, "other"],
        "blocks": blocks,
        "stats": {},
        "total": None,
    }  # stats are not read by the report
    (folder / "blocks.json").write_text(json.dumps(data, indent=2))
    record_blocks(folder)


def test_heat_map_of_blocks_and_stages(tmp_path):
    out = batch(tmp_path)
    blocks_file(out / "2-variant")
    page = parse(made(tmp_path, out))
    maps = page.find("section", id="heat-maps").find_all("details")
    assert len(maps) == 1  # only the recording with a blocks.json beside its summary
    assert maps[0].find("summary").text() == "2-variant: slowest run 2, block 1: 550 kernel cycles"
    table = maps[0].find("table", cls="heat")
    # "other" has no kernel rows in any block: no column
    assert [th.text() for th in table.find("thead").find_all("th")] == [
        "run",
        "block",
        "fused QKV projection",
        "MLP up",
        ODD,
        "total",
    ]
    grid = [
        [(td.text(), td.classes) for td in tr.find_all("td")]
        for tr in table.find("tbody").find_all("tr")
    ]
    # Shades by hand, (value - column min) / (column max - min) * 8, rounded:
    # QKV 100..140: 110 -> 2, 120 -> 4; MLP up 200..400: 260 -> 2.4 -> 2;
    # odd 10..50: 30 -> 4; total 320..550: 350 -> 1.04 -> 1, 360 -> 1.39 -> 1, 370 -> 1.74 -> 2
    assert grid == [
        [("1", []), ("0", []), ("100", ["h0"]), ("200", ["h0"]), ("50", ["h8"]), ("350", ["h1"])],
        [("1", []), ("1", []), ("110", ["h2"]), ("200", ["h0"]), ("10", ["h0"]), ("320", ["h0"])],
        [("1", []), ("2", []), ("100", ["h0"]), ("260", ["h2"]), ("\u2014", []), ("360", ["h1"])],
        [("2", []), ("0", []), ("140", ["h8"]), ("200", ["h0"]), ("30", ["h4"]), ("370", ["h2"])],
        [
            ("2", []),
            ("1", []),
            ("100", ["h0"]),
            ("400", ["h8"]),
            ("50", ["h8"]),
            ("550", ["h8"]),
            ("\u25c0 slowest", ["mark"]),
        ],
        [("2", []), ("2", []), ("120", ["h4"]), ("200", ["h0"]), ("50", ["h8"]), ("370", ["h2"])],
    ]
    assert [tr.classes for tr in table.find("tbody").find_all("tr")].count(["slowest"]) == 1


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"{", "not a blocks file: not JSON"),
        (b"[]", "not a blocks file: a JSON list where it is an object"),
        (b'{"stages": ["a"], "blocks": [{"run": 1}]}', "blocks[0] is not an object"),
        (b'{"stages": "a", "blocks": []}', "'stages' is not a list of labels"),
        (b"\xff", "not UTF-8"),
    ],
)
def test_a_bad_blocks_file_is_one_line(tmp_path, content, problem):
    out = batch(tmp_path)
    (out / "3-small" / "blocks.json").write_bytes(content)
    result = report(out, "-o", tmp_path / "r.html")
    assert result.code == 1, result
    assert result.stderr.startswith("extract: error: {}: ".format(out / "3-small" / "blocks.json"))
    assert problem in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "r.html").exists()


# ---- budget checks -------------------------------------------------------------------


def test_budget_checks_are_shown_as_compare_decides_them(tmp_path):
    # The page's checks are compare --budget's own, read back from its JSON: the same
    # recordings (the --baseline one first), metrics, patterns, budgets and statuses.
    out = batch(tmp_path)
    budget = tmp_path / "budget.toml"
    budget.write_text(
        '[budgets]\n"stage:*" = "+2%"\n"device_span:*" = ["+1%", "<= 1"]\n'
        '"attention_exchange:*" = "+512"\n'
    )
    html = made(tmp_path, out, "--budget", budget, "--baseline", "2-variant")
    gate = invoke_extract(
        "compare",
        out / "2-variant",
        out / "1-golden",
        out / "3-small",
        "--budget",
        budget,
        "-f",
        "json",
        pva=False,
    )
    assert gate.code == 3, gate
    expected = [
        [c["status"], c["recording"], c["metric"], c["pattern"], c["budget"]]
        for c in json.loads(gate.stdout)["budgets"]
    ]
    page = parse(html)
    rows = page.find("table", id="checks").find("tbody").find_all("tr")
    shown = [[td.text() for td in tr.find_all("td")][:5] for tr in rows]
    marks = {
        "fail": "\u2718 fail",
        "ok": "\u2714 ok",
        "skipped": "\u2013 skipped",
        "missing": "? missing",
    }
    # The failed and missing checks first, then the others, each in compare's order.
    failing = [e for e in expected if e[0] in ("fail", "missing")]
    assert shown == [
        [marks[e[0]]] + e[1:] for e in failing + [e for e in expected if e not in failing]
    ]
    assert any(e[0] == "fail" for e in expected) and any(e[0] == "ok" for e in expected)
    assert expected.index(failing[-1]) > len(failing)  # the order did change
    # One vocabulary in the header and in the section: failed, missing, ok (skipped).
    counts = "{} failed, {} missing, {} ok".format(
        *(sum(e[0] == status for e in expected) for status in ("fail", "missing", "ok"))
    )
    skipped = sum(e[0] == "skipped" for e in expected)
    counts += ", {} skipped".format(skipped) if skipped else ""
    assert page.find(id="count-budget").text() == counts
    assert page.find(id="budget-counts").text() == counts
    assert len(page.find_all("script")) == 1


def test_a_bad_budget_is_a_usage_error_before_any_summary(tmp_path):
    budget = tmp_path / "budget.toml"
    budget.write_text('[budgets]\n"stage:*" = "+2 %%"\n')
    result = report(tmp_path / "no-such-folder", "--budget", budget, "-o", tmp_path / "r.html")
    assert result.code == 2, result
    assert result.stderr.startswith("extract: error: {}: ".format(budget)), result
    assert result.stderr.count("\n") == 1 and not (tmp_path / "r.html").exists()


# ---- errors and packaging ------------------------------------------------------------


def test_errors_are_one_line(tmp_path):
    bad = write_summary(tmp_path / "bad", A)
    bad.write_text("[]")
    for args, code, text in [
        ([bad], 1, str(bad)),
        ([tmp_path / "none"], 1, "no such file or folder"),
        ([A, "-o", tmp_path], 1, str(tmp_path)),
        ([A, B, "--label", "x", "--label", "x"], 2, "two recordings are labelled"),
    ]:
        result = report(*args)
        assert result.code == code, (args, result)
        assert result.stderr.startswith("extract: error: ") and text in result.stderr
        assert result.stderr.count("\n") == 1


def test_the_wheel_carries_the_templates(tmp_path, wheel):
    with zipfile.ZipFile(str(wheel)) as archive:
        names = set(archive.namelist())
        archive.extractall(str(tmp_path / "site"))
    for name in ("report.html.j2", "style.css.j2", "sort.js.j2"):
        assert "extractor/report/templates/" + name in names
    # the unpacked wheel, run from elsewhere, finds them
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    done = subprocess.run(
        [sys.executable, "-m", "extractor", "report", str(A)],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(rows_of(parse(done.stdout))) == 1
    where = subprocess.run(
        [sys.executable, "-c", "import extractor; print(extractor.__file__)"],
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        check=False,
    )
    assert where.stdout.decode().startswith(str(tmp_path / "site"))  # not the checkout's


def test_a_long_blocks_file_shows_its_first_blocks_and_the_slowest(tmp_path):
    from extractor.report.heatmap import MAX_HEAT_ROWS

    out = tmp_path / "out"
    write_summary(out / "long", A)
    count = MAX_HEAT_ROWS + 50
    bodies = [
        {
            "run": 1 + n // 10,
            "block": n % 10,
            "first_step": n,
            "end_step": n + 1,
            "kernels": 1,
            "cycles": {"PV": 100},
            "total": 100,
        }
        for n in range(count)
    ]
    bodies[count - 5]["cycles"]["PV"] = bodies[count - 5]["total"] = 900  # the slowest
    (out / "long" / "blocks.json").write_text(
        json.dumps({"profile": "p", "stages": ["PV"], "blocks": bodies, "stats": {}, "total": None})
    )
    write_index(out, [index_entry("long/summary.json", "runs/long/profile.pop")])
    record_blocks(out / "long")  # as a batch run with --blocks vouches for it
    page = parse(made(tmp_path, out))
    details = page.find("details", cls="heat-map")
    rows = details.find("tbody").find_all("tr")
    assert len(rows) == MAX_HEAT_ROWS + 1
    assert [td.text() for td in rows[-1].find_all("td")][:4] == [
        str(1 + (count - 5) // 10),
        str((count - 5) % 10),
        "900",
        "900",
    ]
    assert rows[-1].classes == ["slowest"]
    summary = details.find("summary").text()
    assert (
        "(the first {} of {} blocks shown, and the slowest;".format(MAX_HEAT_ROWS, count) in summary
    )
