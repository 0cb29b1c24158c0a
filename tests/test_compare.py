"""`extract compare`: recordings side by side, exchanges matched across compiler ids, the
chart. Numbers expected here are worked out by hand (or, where said, computed in the test
from the two input files), never copied from the command's output.
"""

import csv
import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from extractor.core.metrics import mask_ids
from support.cli import invoke_extract
from support.paths import FIXTURES, GOLDEN

A = GOLDEN / "expected.json"  # the golden recording (the reference summary)
B = FIXTURES / "vit-f8weight-b" / "expected.json"  # hand-made FP8 variant (see its README)
SVG = "{http://www.w3.org/2000/svg}"


def load(path):
    return json.loads(Path(path).read_text())


def compare(*args, **kwargs):
    result = invoke_extract("compare", *args, pva=False, **kwargs)
    result.text = result.stdout.decode("utf-8")
    return result


def one_line_error(result, code=1):
    assert result.code == code, result
    assert result.stdout == b""
    assert result.stderr.startswith("extract: error: ") and result.stderr.count("\n") == 1
    return result.stderr


# ---- masking -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, masked",
    [
        (
            "cs23_/a/qkv/MatMul/1570/Conv_1/Convolve/ExchangePre",
            "cs#_/a/qkv/MatMul/#/Conv_1/Convolve/ExchangePre",
        ),
        (
            "copy617_Copy_{/a/1570/x,V/padding}_to_{/b/1583/y,/b/1583/z}/ExchangePre",
            "copy#_Copy_{/a/#/x,V/padding}_to_{/b/#/y,/b/#/z}/ExchangePre",
        ),
        ("copy5_Copy_/a/Softmax/1584/Out/ExchangePre", "copy#_Copy_/a/Softmax/#/Out/ExchangePre"),
        # a numeric part at the end, or before a brace or comma
        ("cs1_/a/7", "cs#_/a/#"),
        ("{/a/12,/b/3}", "{/a/#,/b/#}"),
        ("/1/2/3/", "/#/#/#/"),
        # kept: numbers that are part of a name, ids without their underscore, other prefixes
        (
            "/blocks/blocks.10/attn/MatMul_1/Conv_1/x12/12a/",
            "/blocks/blocks.10/attn/MatMul_1/Conv_1/x12/12a/",
        ),
        ("cs23/a", "cs23/a"),
        ("Copy_/a", "Copy_/a"),
        ("abcs23_x", "abcs23_x"),
        ("prog12_/a", "prog12_/a"),
        ("", ""),
    ],
)
def test_mask_ids(name, masked):
    assert mask_ids(name) == masked


def test_masking_matches_the_two_fixture_recordings():
    # B's README: every id was changed; 16 of the 17 golden exchanges are still there.
    a = [mask_ids(e["name"]) for e in load(A)["attention_exchanges"]]
    b = [mask_ids(e["name"]) for e in load(B)["attention_exchanges"]]
    assert not {e["name"] for e in load(A)["attention_exchanges"]} & {
        e["name"] for e in load(B)["attention_exchanges"]
    }
    assert len(a) == 17 and len(b) == 17 and len(set(a) & set(b)) == 16


# ---- the markdown table ------------------------------------------------------------


def table(text):
    """The markdown table as {first cell: [cells...]} (" (ms)" added to the first cell of
    a row in milliseconds), checking it is one whole table."""
    lines = text.splitlines()
    assert lines and all(line.startswith("| ") or line.startswith("|---") for line in lines)
    assert lines[1] == "|---|---|---:|---:|"
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        key = cells[0] + (" (ms)" if cells[1].startswith("ms at") else "")
        assert key not in rows
        rows[key] = cells[1:]
    return lines[0], rows


def test_markdown_on_the_two_fixture_recordings():
    result = compare(A, B, "--clock-mhz", "1850")
    assert result.code == 0, result
    assert result.stderr == ""
    header, rows = table(result.text)
    assert header == "| | unit | vit-f8weight | vit-f8weight-b |"
    # By hand: (33541 - 37277) / 37277 = -10.02 %, (14190 - 12900) / 12900 = +10.0 %,
    # (12021 - 14153) / 14153 = -15.06 %, (41012 - 48248) / 48248 = -14.998 %,
    # (46968 - 52187) / 52187 = -10.0006 %; totals 173253 and 156220: -9.83 %.
    assert rows["stage: fused QKV projection"] == ["kernel cycles", "37277", "33541 (-10.0%)"]
    assert rows["stage: QK transpose"] == ["kernel cycles", "8488", "8488 (+0.0%)"]
    assert rows["stage: PV"] == ["kernel cycles", "12900", "14190 (+10.0%)"]
    assert rows["stage: output projection"] == ["kernel cycles", "14153", "12021 (-15.1%)"]
    assert rows["stage: MLP up"] == ["kernel cycles", "48248", "41012 (-15.0%)"]
    assert rows["stage: MLP down"] == ["kernel cycles", "52187", "46968 (-10.0%)"]
    assert rows["stages, total"] == ["kernel cycles", "173253", "156220 (-9.8%)"]
    # Spans: (14733907 - 15987664) / 15987664 = -7.84 %; 15987664 / 1850e3 = 8.6420 ms,
    # 14733907 / 1850e3 = 7.9643 ms.
    assert rows["device span 1"][:3] == ["cycles", "15987664", "14733907 (-7.8%)"]
    lines = result.text.splitlines()
    assert rows["device span 1 (ms)"] == ["ms at 1850 MHz", "8.642", "7.964"]
    ms = [line for line in lines if "| ms at 1850 MHz |" in line]
    assert ms == [
        "| device span 1 | ms at 1850 MHz | 8.642 | 7.964 |",
        "| device span 2 | ms at 1850 MHz | 8.642 | 7.964 |",
    ]
    assert "| device span 2 | cycles | 15987659 | 14733915 (-7.8%) |" in lines
    assert rows["QKV executions"] == ["count", "54", "54"]
    assert rows["exchange code per tile, min"] == ["bytes", "4436", "4500"]
    assert rows["exchange code per tile, mean"] == ["bytes", "15602.7", "15990.5"]
    assert rows["exchange code per tile, max"] == ["bytes", "37092", "36880"]
    assert rows["allocated memory per tile, min"] == ["bytes", "86179", "84211"]
    assert rows["allocated memory per tile, mean"] == ["bytes", "550544.3", "538120.2"]
    assert rows["allocated memory per tile, max"] == ["bytes", "596494", "590002"]

    # Exchanges: matched across cs23_ -> cs30_, copy617_ -> copy657_, /1570/ -> /1602/.
    qkv = (
        "attention exchange: `cs#_/visual/trunk/blocks/blocks.0/attn/qkv/MatMul/#/"
        "matmulGrouped/Conv_1/Convolve/ExchangePre`"
    )
    assert rows[qkv] == ["code bytes per tile, max / mean", "324 / 171.9", "292 / 150.5"]
    copy = [
        key
        for key in rows
        if key.startswith("attention exchange: `copy#_Copy_{")
        and "attn/MatMul/#/matmulGrouped/Conv_1/weightsRearranged}" in key
    ]
    assert len(copy) == 1 and rows[copy[0]][1:] == ["1544 / 481.3", "1544 / 481.3"]
    matched = [k for k in rows if k.startswith("attention exchange: ")]
    unmatched = [k for k in rows if k.startswith("unmatched attention exchange: ")]
    assert len(matched) == 16 and len(unmatched) == 2
    gone = (
        "unmatched attention exchange: `cs#_/visual/trunk/blocks/blocks.0/attn/Mul_1/#/"
        "Op/Multiply/ExchangePre`"
    )
    new = (
        "unmatched attention exchange: `cs#_/visual/trunk/blocks/blocks.0/attn/qkv/MatMul/"
        "#/matmulGrouped/Conv_1/castWeights/ExchangePre`"
    )
    assert rows[gone][1:] == ["16 / 4.6", "\u2014"]
    assert rows[new][1:] == ["\u2014", "96 / 61.2"]
    # Rows in the order docs/commands/compare.md lists them: stages, spans, QKV, memory, exchanges.
    firsts = [line.split(" | ")[0] for line in lines[2:]]
    assert (
        firsts.index("| stages, total")
        < firsts.index("| device span 1")
        < firsts.index("| QKV executions")
        < firsts.index("| exchange code per tile, min")
        < firsts.index("| allocated memory per tile, max")
        < firsts.index("| " + matched[0])
    )


def test_percentages_follow_the_inputs():
    # Each stage's change, computed here from the two files, against the table.
    a, b = load(A), load(B)
    _, rows = table(compare(A, B).text)
    for ka, kb in zip(a["kernels"], b["kernels"]):
        change = (kb["cycles"] - ka["cycles"]) * 100 / ka["cycles"]
        assert rows["stage: " + ka["stage"]] == [
            "kernel cycles",
            str(ka["cycles"]),
            "{} ({:+.1f}%)".format(kb["cycles"], change),
        ]


def test_without_a_clock_there_are_cycles_only():
    result = compare(A, B)
    assert result.code == 0, result
    assert " ms" not in result.text and "MHz" not in result.text
    assert "| device span 1 | cycles |" in result.text


def test_labels_and_three_recordings(tmp_path):
    c = load(B)
    c["kernels"] = [k for k in c["kernels"] if k["stage"] != "PV"]  # no PV stage here
    c["device_spans"] = [14000000]
    (tmp_path / "c.json").write_text(json.dumps(c, indent=2))
    result = compare(A, B, tmp_path / "c.json", "--label", "fp8 w", "-l", "fp8 | b")
    assert result.code == 0, result
    header, rows = table(result.text.replace("|---|---|---:|---:|---:|", "|---|---|---:|---:|"))
    # The third is named by its folder; a "|" in a label is escaped.
    assert header == "| | unit | fp8 w | fp8 \\| b | {} |".format(tmp_path.name)
    # (14000000 - 15987664) / 15987664 = -12.43 %
    assert rows["stage: PV"] == ["kernel cycles", "12900", "14190 (+10.0%)", "\u2014"]
    assert rows["device span 1"][:4] == [
        "cycles",
        "15987664",
        "14733907 (-7.8%)",
        "14000000 (-12.4%)",
    ]
    assert rows["device span 2"][:4] == ["cycles", "15987659", "14733915 (-7.8%)", "\u2014"]


def test_folders_of_summaries(tmp_path):
    # A batch output folder: summaries found below it, named by their folders.
    out = tmp_path / "out"
    for key, source in (("f8", A), ("f8/b", B)):
        (out / key).mkdir(parents=True)
        shutil.copy(str(source), str(out / key / "summary.json"))
    (out / "index.jsonl").write_text("{}\n")
    (out / "f8" / "steps.csv").write_text("step\r\n")
    result = compare(out)
    assert result.code == 0, result
    header, _ = table(result.text)
    assert header == "| | unit | f8 | f8/b |"

    # The same folder names under two arguments: their parents tell them apart.
    other = tmp_path / "other"
    (other / "f8").mkdir(parents=True)
    shutil.copy(str(B), str(other / "f8" / "summary.json"))
    header, _ = table(compare(out / "f8" / "summary.json", other / "f8" / "summary.json").text)
    assert header == "| | unit | out/f8 | other/f8 |"


def test_csv_format():
    result = compare(A, B, "--format", "csv", "--clock-mhz", "1850")
    assert result.code == 0, result
    assert result.text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(result.text, newline="")))
    # metric_name (the budget files' names) is added last, so the columns before it keep
    # their places.
    assert rows[0] == [
        "section",
        "metric",
        "unit",
        "vit-f8weight",
        "vit-f8weight-b",
        "vit-f8weight-b change %",
        "note",
        "metric_name",
    ]
    by_key = {(r[0], r[1], r[2]): r[3:-1] for r in rows[1:]}
    names = {(r[0], r[1], r[2]): r[-1] for r in rows[1:]}
    assert (
        names[("kernel stages", "fused QKV projection", "kernel cycles")]
        == "stage:fused QKV projection"
    )
    assert names[("kernel stages, total", "all stages", "kernel cycles")] == "stages:total"
    assert names[("device spans", "device span 2", "cycles")] == "device_span:2"
    assert names[("device spans", "device span 2", "ms at 1850 MHz")] == ""
    assert names[("QKV executions", "QKV executions", "count")] == "qkv_executions"
    assert (
        names[("allocated memory per tile", "allocated memory per tile, mean", "bytes")]
        == "allocated_memory:mean"
    )
    assert (
        names[("exchange code per tile", "exchange code per tile, min", "bytes")]
        == "exchange_memory:min"
    )
    qkv = by_key[("kernel stages", "fused QKV projection", "kernel cycles")]
    assert qkv[:2] == ["37277", "33541"] and qkv[3] == ""
    assert float(qkv[2]) == pytest.approx((33541 - 37277) * 100 / 37277, rel=1e-12)
    ms = by_key[("device spans", "device span 1", "ms at 1850 MHz")]
    assert float(ms[0]) == pytest.approx(15987664 / 1850e3) and ms[2] == ""
    assert by_key[("exchange code per tile", "exchange code per tile, mean", "bytes")][:2] == [
        "15602.703804347826",
        "15990.5",
    ]
    name = (
        "cs#_/visual/trunk/blocks/blocks.0/attn/qkv/MatMul/#/matmulGrouped/Conv_1/"
        "Convolve/ExchangePre"
    )
    assert by_key[("attention exchanges", name, "code bytes per tile, max")] == [
        "324",
        "292",
        "",
        "",
    ]
    assert by_key[("attention exchanges", name, "code bytes per tile, mean")] == [
        "171.89945652173913",
        "150.5",
        "",
        "",
    ]
    assert (
        names[("attention exchanges", name, "code bytes per tile, max")]
        == "attention_exchange:" + name
    )
    assert names[("attention exchanges", name, "code bytes per tile, mean")] == ""
    notes = [r[-2] for r in rows[1:] if r[0] == "attention exchanges"]
    assert notes.count("unmatched") == 4 and notes.count("") == 32  # two rows each


def test_json_format():
    result = compare(A, B, "-f", "json")
    assert result.code == 0, result
    data = json.loads(result.text)
    assert [r["label"] for r in data["recordings"]] == ["vit-f8weight", "vit-f8weight-b"]
    assert data["clock_mhz"] is None
    stages = {r["metric"]: r for r in data["rows"] if r["section"] == "kernel stages"}
    assert stages["MLP up"]["values"] == [48248, 41012]
    assert stages["MLP up"]["metric_name"] == "stage:MLP up"
    assert [r["metric_name"] for r in data["rows"] if r["section"] == "device spans"] == [
        "device_span:1",
        "device_span:2",
    ]
    assert "budgets" not in data  # only with --budget
    assert stages["MLP up"]["change_percent"][0] is None
    assert stages["MLP up"]["change_percent"][1] == pytest.approx(-7236 * 100 / 48248)
    assert not [r for r in data["rows"] if r["unit"].startswith("ms")]
    exchanges = data["attention_exchanges"]
    assert len(exchanges) == 18 and sum(not e["matched"] for e in exchanges) == 2
    first = exchanges[0]
    assert first["metric_name"] == "attention_exchange:" + first["name"]
    assert [v["name"] for v in first["values"]] == [
        load(A)["attention_exchanges"][0]["name"],
        load(B)["attention_exchanges"][0]["name"],
    ]


def test_a_recording_without_pva_facts(tmp_path):
    c = load(B)
    c["attention_exchanges"] = None
    for kernel in c["kernels"]:
        kernel["max_exchange_code_bytes"] = kernel["vertices"] = None
    (tmp_path / "no-pva").mkdir()
    (tmp_path / "no-pva" / "summary.json").write_text(json.dumps(c))
    result = compare(A, tmp_path / "no-pva" / "summary.json")
    assert result.code == 0, result
    _, rows = table(result.text)
    exchanges = {k: v for k, v in rows.items() if "attention exchange" in k}
    # Unknown is not unmatched: all 17 golden exchanges listed, none marked unmatched.
    assert len(exchanges) == 17 and all(k.startswith("attention exchange: ") for k in exchanges)
    assert all(v[2] == "no pva facts" for v in exchanges.values())


# ---- errors ------------------------------------------------------------------------


def test_not_a_summary(tmp_path):
    (tmp_path / "x.json").write_text("not json at all")
    error = one_line_error(compare(A, tmp_path / "x.json"))
    assert str(tmp_path / "x.json") in error and "not a summary" in error and "JSON" in error

    (tmp_path / "y.json").write_text(json.dumps({"profile": "p", "kernels": []}))
    error = one_line_error(compare(tmp_path / "y.json", A))
    assert "not a summary" in error and "'attention_exchanges'" in error

    broken = load(A)
    broken["kernels"][0]["cycles"] = "many"
    (tmp_path / "z.json").write_text(json.dumps(broken))
    assert "'kernels'" in one_line_error(compare(A, tmp_path / "z.json"))

    (tmp_path / "list.json").write_text("[1, 2]")
    assert "not a summary" in one_line_error(compare(A, tmp_path / "list.json"))


def test_nothing_in_common(tmp_path):
    other = load(B)
    for kernel in other["kernels"]:
        kernel["stage"] = "elsewhere " + kernel["stage"]
    for exchange in other["attention_exchanges"]:
        exchange["name"] = "cs1_/text/encoder" + exchange["name"]
    (tmp_path / "other.json").write_text(json.dumps(other))
    error = one_line_error(compare(A, tmp_path / "other.json"))
    assert "nothing in common" in error and str(tmp_path / "other.json") in error
    # One shared exchange is enough to compare.
    other["attention_exchanges"].append(load(A)["attention_exchanges"][3])
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert compare(A, tmp_path / "other.json").code == 0


def test_missing_inputs_and_empty_folders(tmp_path):
    assert "no such file" in one_line_error(compare(A, tmp_path / "nowhere.json"))
    (tmp_path / "empty").mkdir()
    assert "no summary.json" in one_line_error(compare(A, tmp_path / "empty"))


@pytest.mark.parametrize(
    "args, message",
    [
        ([A], "two or more"),
        ([A, B, "--label", "a", "--label", "b", "--label", "c"], "--label"),
        ([A, B, "--label", "same", "--label", "same"], "same"),
        ([A, B, "--clock-mhz", "0"], "--clock-mhz"),
        ([A, B, "--clock-mhz", "-1850"], "--clock-mhz"),
        ([A, B, "--chart", "out.png"], "SVG"),
    ],
)
def test_usage_errors(tmp_path, args, message):
    result = compare(*args, cwd=tmp_path)
    assert message in one_line_error(result, code=2)
    assert not list(tmp_path.iterdir())


def test_unknown_format_is_a_usage_error():
    result = compare(A, B, "--format", "xlsx")
    assert result.code == 2 and result.stdout == b""


def test_compare_is_listed_and_run_still_the_default(tmp_path):
    result = invoke_extract("--help")
    assert result.code == 0 and b"compare" in result.stdout
    result = invoke_extract("compare", "--help")
    assert result.code == 0 and b"--clock-mhz" in result.stdout and b"--chart" in result.stdout


# ---- the chart ---------------------------------------------------------------------


def parse_chart(path):
    root = ET.parse(str(path)).getroot()
    assert root.tag == SVG + "svg"
    bars = [
        (
            r.get("data-stage"),
            r.get("data-recording"),
            int(r.get("data-cycles")),
            float(r.get("x")),
            float(r.get("y")),
            float(r.get("width")),
            float(r.get("height")),
            r.get("fill"),
        )
        for r in root.iter(SVG + "rect")
        if r.get("class") == "bar"
    ]
    return root, bars


def texts(element, cls):
    return [
        "".join(t.itertext()).strip() for t in element.iter(SVG + "text") if t.get("class") == cls
    ]


def test_chart_of_the_two_fixture_recordings(tmp_path):
    chart = tmp_path / "charts" / "stages.svg"
    result = compare(A, B, "--chart", chart)
    assert result.code == 0, result
    assert result.text.startswith("| | unit |")  # the table still goes to stdout
    root, bars = parse_chart(chart)

    a, b = load(A), load(B)
    stages = [k["stage"] for k in a["kernels"]]
    expected = [
        (k["stage"], label, k["cycles"])
        for ka, kb in zip(a["kernels"], b["kernels"])
        for label, k in (("vit-f8weight", ka), ("vit-f8weight-b", kb))
    ]
    assert [bar[:3] for bar in bars] == expected  # grouped: stage by stage, A then B

    # Heights proportional to cycles; all bars stand on the same baseline.
    scale = bars[0][6] / bars[0][2]
    for _stage, _label, cycles, _x, y, _width, height, _fill in bars:
        assert height == pytest.approx(cycles * scale, rel=1e-3)
        assert y + height == pytest.approx(bars[0][4] + bars[0][6], abs=0.01)
    # One colour per recording, the same in every group.
    colours = {
        label: {bar[7] for bar in bars if bar[1] == label}
        for label in ("vit-f8weight", "vit-f8weight-b")
    }
    assert all(len(c) == 1 for c in colours.values())
    assert colours["vit-f8weight"] != colours["vit-f8weight-b"]
    # Groups left to right in stage order, bars not overlapping.
    xs = [bar[3] for bar in bars]
    assert xs == sorted(xs)
    assert all(x2 >= x1 + w1 for (x1, w1), x2 in zip([(b[3], b[5]) for b in bars], xs[1:]))

    # The legend names each recording with its bars' colour.
    legend = [g for g in root.iter(SVG + "g") if g.get("class") == "legend-entry"]
    assert [g.get("data-recording") for g in legend] == ["vit-f8weight", "vit-f8weight-b"]
    for entry in legend:
        swatch = entry.find(SVG + "rect")
        assert {swatch.get("fill")} == colours[entry.get("data-recording")]
        assert "".join(entry.find(SVG + "text").itertext()) == entry.get("data-recording")

    # The axis: its title says the unit; ticks rise from 0 past the tallest bar, and
    # sit where the bars' scale puts them.
    assert texts(root, "axis-title")[0] == "kernel cycles"
    ticks = [int(t.replace(",", "")) for t in texts(root, "tick")]
    assert ticks[0] == 0 and ticks == sorted(ticks) and ticks[-1] >= 52187
    tick_ys = [float(t.get("y")) for t in root.iter(SVG + "text") if t.get("class") == "tick"]
    baseline = bars[0][4] + bars[0][6]
    for value, ty in zip(ticks, tick_ys):
        assert baseline - ty == pytest.approx(value * scale, abs=0.2)
    labels = [" ".join(t.split()) for t in texts(root, "stage-label")]
    assert [line.replace(" ", "") for line in labels] == [s.replace(" ", "") for s in stages]


def test_chart_leaves_a_gap_for_a_missing_stage(tmp_path):
    c = load(B)
    c["kernels"] = [k for k in c["kernels"] if k["stage"] != "PV"]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "summary.json").write_text(json.dumps(c))
    chart = tmp_path / "x.svg"
    assert compare(A, B, tmp_path / "c" / "summary.json", "--chart", chart).code == 0
    _, bars = parse_chart(chart)
    assert len(bars) == 6 * 3 - 1
    assert [bar[1] for bar in bars if bar[0] == "PV"] == ["vit-f8weight", "vit-f8weight-b"]
