"""`extract report` with breakdown.json beside the summaries: the bars of all cycles by
kind, the top ops and the table's time: columns. The recordings are made by the real CLI
(`extract PROFILE -o summary.json --breakdown --memory`) from the committed fixtures; the
numbers expected are read from the breakdown.json files with the standard library's json,
and worked by hand where a comment says so. In a browser: test_report_browser.py."""

import json
import shutil

import pytest

from support.cli import invoke_extract
from support.paths import FIXTURES, GOLDEN
from support.reportpage import parse

TILE_MEMORY = FIXTURES / "tile-memory" / "profile.pop"
VIT = GOLDEN / "poprt" / "profile_logs_f8weight" / "inference" / "profile.pop"
HOSTILE = '<img src=x onerror="window.pwned=1"> & </script>\u00e9'


def extracted(folder, profile):
    target = folder / "summary.json"
    result = invoke_extract(profile, "-o", target, "--breakdown", "--memory")
    assert result.code == 0, result
    assert (folder / "breakdown.json").is_file() and (folder / "memory.json").is_file()
    return folder


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """tm (tile-memory: 2 IPUs) and vit (vit-f8weight: 1 IPU), each extracted once."""
    top = tmp_path_factory.mktemp("made")
    return extracted(top / "tm", TILE_MEMORY), extracted(top / "vit", VIT)


def copied(made, tmp_path, *names):
    folders = []
    for source, name in zip(made, names):
        shutil.copytree(str(source), str(tmp_path / name))
        folders.append(tmp_path / name)
    return folders


def report_of(tmp_path, *folders):
    target = tmp_path / "report.html"
    result = invoke_extract("report", *(list(folders) + ["-o", target]), pva=False)
    assert result.code == 0, result
    return target.read_bytes(), result


def thousands(value):
    return "{:,}".format(value)


def first_window(folder):
    return json.loads((folder / "breakdown.json").read_text())["windows"][0]


def test_bars_of_all_cycles_by_kind_and_the_top_ops(made, tmp_path):
    tm, vit = copied(made, tmp_path, "tm", "vit")
    html, _ = report_of(tmp_path, tm, vit)
    page = parse(html)
    views = page.find("section", id="breakdowns").find_all("details", cls="breakdown")
    assert [v.find("span", cls="label").text() for v in views] == ["tm", "vit"]
    # tile-memory: every step has a row on both IPUs (fixtures/tile-memory/README.md)
    assert "inference 1, 2 IPUs" in views[0].find("summary").text()
    assert "inference 1, 1 IPU" in views[1].find("summary").text()
    for view, folder in zip(views, (tm, vit)):
        ipus = first_window(folder)["ipus"]
        bars = view.find("svg").find_all("g", cls="bar")
        assert len(bars) == len(ipus)
        for bar, ipu in zip(bars, ipus):
            assert bar.find("text", cls="name").text() == "IPU {}".format(ipu["ipu"])
            assert bar.find("text", cls="total").text() == thousands(ipu["cycles"])
            segments = [rect.find("title").text() for rect in bar.find_all("rect")]
            assert segments == [
                "IPU {}: {}: {} all cycles ({:.1f}%)".format(
                    ipu["ipu"], kind["kind"], thousands(kind["cycles"]), 100.0 * kind["share"]
                )
                for kind in ipu["kinds"]
                if kind["cycles"]
            ]
        legend = [key.text() for key in view.find_all("span", cls="key")]
        assert legend == [kind["kind"] for kind in ipus[0]["kinds"]]
        ops = [
            [cell.text() for cell in row.find_all("td")]
            for row in view.find("table", cls="ops").find_all("tr")
            if "ipu" not in row.classes and row.find_all("td")
        ]
        assert ops == [
            [
                str(ipu["ipu"]),
                op["op"] if len(op["op"]) <= 400 else op["op"][:399] + "\u2026",
                op["kind"],
                op["stage"],
                thousands(op["executions"]),
                thousands(op["cycles"]),
                "{:.1f}%".format(100.0 * op["cycles"] / ipu["cycles"]),
            ]
            for ipu in ipus
            for op in ipu["ops"][:10]
        ]
    # By hand (the fixture's README): tile-memory's first inference has 7 ops per IPU,
    # all shown; vit-f8weight's 122, the first 10 shown and counted.
    assert len(ops) == 10
    assert "the first 10 of 122 ops" in views[1].text()
    assert "the first" not in views[0].find("table").text()
    # one chart title each: no id twice on the page
    ids = [node.attrs["id"] for node in page.find_all() if "id" in node.attrs]
    assert len(ids) == len(set(ids))


def test_the_table_gains_the_time_columns(made, tmp_path):
    tm, vit = copied(made, tmp_path, "tm", "vit")
    page = parse(report_of(tmp_path, tm, vit)[0])
    headings = [
        th.text() for th in page.find("table", id="recordings").find("thead").find_all("th")
    ]
    start = headings.index("all cycles")
    assert headings[start - 1] == "allocated memory max"  # after every column of before
    assert headings[start + 1] == "span (all rows)"
    kinds = [h for h in headings if h.startswith("kind ")]
    # vit's kinds, as breakdown.json orders them, then tile-memory's (all among vit's)
    assert kinds == ["kind " + kind["kind"] for kind in first_window(tm)["ipus"][0]["kinds"]] + [
        "kind " + k["kind"]
        for k in first_window(vit)["ipus"][0]["kinds"]
        if k["kind"] not in {x["kind"] for x in first_window(tm)["ipus"][0]["kinds"]}
    ]
    rows = page.find("table", id="recordings").find("tbody").find_all("tr")
    for row, folder in zip(rows, (tm, vit)):
        ipus = first_window(folder)["ipus"]
        cells = dict(zip(headings[1:], row.find_all("td")))
        assert cells["all cycles"].attrs["data-v"] == str(max(i["cycles"] for i in ipus))
        assert cells["span (all rows)"].attrs["data-v"] == str(max(i["span"] for i in ipus))
        for kind in ipus[0]["kinds"]:
            most = max(k["cycles"] for i in ipus for k in i["kinds"] if k["kind"] == kind["kind"])
            assert cells["kind " + kind["kind"]].attrs["data-v"] == str(most)
        for layer in ipus[0]["layers"]:
            assert "layer " + layer["layer"] in cells
    titles = page.find("table", id="recordings").find("thead").find_all("th")
    assert titles[start].attrs["title"] == "time:cycles (all cycles)"
    assert titles[start + 1].attrs["title"] == "time:span (span, in cycles)"
    legend = page.find("section", id="table").find("p", cls="legend").text()
    assert "from each recording's breakdown.json" in legend


def test_a_foreign_or_unreadable_breakdown_is_not_drawn(made, tmp_path):
    tm, vit = copied(made, tmp_path, "tm", "vit")
    data = json.loads((tm / "breakdown.json").read_text())
    data["profile"] = "another/profile.pop"
    (tm / "breakdown.json").write_text(json.dumps(data, indent=2) + "\n")
    (vit / "breakdown.json").write_text("{")
    html, result = report_of(tmp_path, tm, vit)
    page = parse(html)
    assert page.find_all("section", id="breakdowns") == []
    headings = [
        th.text() for th in page.find("table", id="recordings").find("thead").find_all("th")
    ]
    assert "all cycles" not in headings and not any(h.startswith("kind ") for h in headings)
    untrusted = page.find("section", id="untrusted")
    lines = [
        [td.text() for td in tr.find_all("td")] for tr in untrusted.find("tbody").find_all("tr")
    ]
    assert lines == [
        [
            "tm",
            str(tm / "breakdown.json"),
            "not drawn: it does not belong to the summary beside it: it describes another "
            "profile ('another/profile.pop', the summary '{}')".format(TILE_MEMORY),
        ],
        [
            "vit",
            str(vit / "breakdown.json"),
            (
                "not drawn: not a breakdown.json file: not JSON (Expecting property name "
                "enclosed in double quotes: line 1 column 2 (char 1))"
            ),
        ],
    ]
    assert "A breakdown.json that is not its summary's" in untrusted.text()
    assert result.stderr.splitlines()[0].startswith(
        "extract: warning: {}: not drawn: it does not belong".format(tm / "breakdown.json")
    )


def test_names_from_the_file_are_text_and_long_ones_cut(made, tmp_path):
    (tm,) = copied(made, tmp_path, "tm")
    data = json.loads((tm / "breakdown.json").read_text())
    ipu = data["windows"][0]["ipus"][0]
    ipu["ops"][0]["op"] = HOSTILE
    ipu["ops"][1]["op"] = "/a" * 250
    ipu["kinds"][0]["kind"] = HOSTILE
    (tm / "breakdown.json").write_text(json.dumps(data, indent=2) + "\n")
    html, _ = report_of(tmp_path, tm)
    page = parse(html)
    assert page.find_all("img") == []
    view = page.find("details", cls="breakdown")
    cells = [row.find_all("td") for row in view.find("table", cls="ops").find_all("tr")]
    assert cells[2][1].text() == HOSTILE
    assert cells[3][1].text() == ("/a" * 250)[:399] + "\u2026"
    assert HOSTILE in [key.text() for key in view.find_all("span", cls="key")]
    assert HOSTILE in view.find("svg").find_all("rect")[0].find("title").text()


def many_recordings(made, folder, count=30, ipus=40, ops=12):
    """`count` copies of tile-memory's recording, each breakdown.json made to hold `ipus`
    IPUs of `ops` ops (still its summary's: the profile and the steps are unchanged)."""
    source = made[0]
    data = json.loads((source / "breakdown.json").read_text())
    window = data["windows"][0]
    one = window["ipus"][0]
    window["ipus"] = [
        dict(one, ipu=n, ops=[dict(one["ops"][0], op="op {} {}".format(n, k)) for k in range(ops)])
        for n in range(ipus)
    ]
    folders = []
    for number in range(count):
        target = folder / "r{:02}".format(number)
        target.mkdir(parents=True)
        shutil.copy(str(source / "summary.json"), str(target / "summary.json"))
        (target / "breakdown.json").write_text(json.dumps(data, indent=2) + "\n")
        folders.append(target)
    return folders


def test_many_ipus_and_recordings_are_bounded(made, tmp_path):
    folders = many_recordings(made, tmp_path / "many")
    html, _ = report_of(tmp_path, *folders)
    page = parse(html)
    views = page.find_all("details", cls="breakdown")
    assert len(views) == 30
    # By hand: each shows 16 of its 40 IPUs and 10 of each one's 12 ops: 16 bars and 160
    # ops, 176 rows; 28 of them are 4,928 rows, a 29th would pass 5,000: the last two are
    # listed, not drawn.
    drawn = [v for v in views if v.find_all("svg")]
    assert len(drawn) == 28
    for view in drawn:
        assert len(view.find("svg").find_all("g", cls="bar")) == 16
        assert "(the first 16 shown" in view.find("summary").text()
        assert len([r for r in view.find_all("tr") if "ipu" not in r.classes]) == 1 + 160
    for view in views[28:]:
        assert "Not drawn: the page already holds" in view.text()
        assert "open" not in view.attrs
    assert len(html) < 3000000


def test_a_batch_s_breakdown_is_drawn_while_its_index_vouches_for_it(tmp_path):
    profiles = tmp_path / "profiles" / "a"
    profiles.mkdir(parents=True)
    shutil.copy(str(TILE_MEMORY), str(profiles / "profile.pop"))
    out = tmp_path / "out"
    result = invoke_extract("run", profiles.parent, "-o", out, "--breakdown", "--no-pva", "-j", "1")
    assert result.code == 0, result
    page = parse(report_of(tmp_path, out)[0])
    assert len(page.find_all("details", cls="breakdown")) == 1
    # Changed since the batch wrote it (its SHA-256 in the index no longer matches): the
    # same numbers, but no longer the batch's file, so not drawn.
    path = out / "a" / "breakdown.json"
    path.write_text(path.read_text() + " ")
    page = parse(report_of(tmp_path, out)[0])
    assert page.find_all("details", cls="breakdown") == []
    (line,) = page.find("section", id="untrusted").find("tbody").find_all("tr")
    assert line.find_all("td")[1].text() == str(path)
    assert line.find_all("td")[2].text().startswith("not drawn: it does not belong")
