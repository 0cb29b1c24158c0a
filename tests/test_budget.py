"""`extract compare --budget FILE [--junit FILE]` (docs/formats/budget.md) through the real
CLI: every operator within and over its limit, missing and skipped metrics, three
recordings, overlapping patterns, exit codes, broken budget files, the markdown, CSV and
JSON marks, and the JUnit report read back with junitparser.

The summaries are copies of the reference summary (fixtures/vit-f8weight/expected.json)
with a few numbers edited here; every expected limit and status is worked out by hand
from those numbers in the comments, never copied from the command's output.
"""

import csv
import io
import json
import os
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml, Skipped

from support.checks import budget_file
from support.cli import invoke_extract
from support.paths import GOLDEN, REPO

REFERENCE = GOLDEN / "expected.json"
EXAMPLE = REPO / "examples" / "budget.toml"

# The reference's numbers used below (read off expected.json by hand):
# stages: fused QKV projection 37277, QK transpose 8488, PV 12900, output projection 14153,
# MLP up 48248, MLP down 52187 (one kernel each), total 173253; device spans 15987664 and
# 15987659 (max 15987664, mean 15987661.5); qkv_executions 54; exchange memory min 4436,
# mean 15602.703804347826, max 37092; allocated memory min 86179, mean 550544.296875,
# max 596494; 17 attention exchanges.


def reference() -> dict:
    return json.loads(REFERENCE.read_text())


def edit(data: dict, changes: dict) -> dict:
    """Set the summary's numbers that the metric names stand for (a restatement of the
    spec's table for the metrics these tests use). A value None removes it."""
    for name, value in changes.items():
        if name.startswith("stage:"):
            label = name[len("stage:") :]
            kernels = [k for k in data["kernels"] if k["stage"] == label]
            if value is None:
                data["kernels"] = [k for k in data["kernels"] if k["stage"] != label]
            elif kernels:
                kernels[0]["cycles"] = value
            else:  # a new stage: a copy of the first kernel under its label
                kernel = dict(data["kernels"][0], stage=label, cycles=value, step=999)
                data["kernels"].append(kernel)
        elif name == "device_spans":
            data["device_spans"] = value
        elif name.startswith("device_span:"):
            data["device_spans"][int(name.split(":")[1]) - 1] = value
        elif name == "qkv_executions":
            data["qkv_executions"] = value
        elif name.startswith("allocated_memory:"):
            field = {"min": "min(total)", "mean": "avg(total)", "max": "max(total)"}
            data["allocated_memory"][field[name.split(":")[1]]] = value
        elif name.startswith("exchange_memory:"):
            field = {"min": "min(b)", "mean": "avg(b)", "max": "max(b)"}
            data["exchange_memory_per_tile"][field[name.split(":")[1]]] = value
        elif name == "no pva":
            data["attention_exchanges"] = None
            for kernel in data["kernels"]:
                kernel["max_exchange_code_bytes"] = kernel["vertices"] = None
        else:
            raise AssertionError(name)
    return data


def summary_with(folder: Path, label: str, changes: dict) -> Path:
    path = folder / label / "summary.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(edit(reference(), changes), indent=2))
    return path


def gate(*args, **kwargs):
    result = invoke_extract("compare", *args, pva=False, **kwargs)
    result.text = result.stdout.decode("utf-8")
    result.lines = result.stderr.splitlines()
    return result


def checks_of(result) -> list:
    return json.loads(result.text)["budgets"]


def one_usage_error(result) -> str:
    assert result.code == 2, result
    assert result.stdout == b""
    assert result.stderr.startswith("extract: error: ") and result.stderr.count("\n") == 1, result
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr
    return result.stderr


# ---- every operator, within and over ------------------------------------------------

OPERATORS = [
    # key, budget, baseline changes, candidate changes, status, limit (by hand)
    # +X%: 12900 * 1.10 = 14190 exactly
    ("stage:PV", "+10%", {}, {"stage:PV": 14190}, "ok", 14190),
    ("stage:PV", "+10%", {}, {"stage:PV": 14191}, "fail", 14190),
    # +X%, exactly: 25 * 1.16 = 29, which floats make 28.999999999999996
    ("qkv_executions", "+16%", {"qkv_executions": 25}, {"qkv_executions": 29}, "ok", 29),
    ("qkv_executions", "+16%", {"qkv_executions": 25}, {"qkv_executions": 30}, "fail", 29),
    # +X% of a mean: 15602.703804347826 * 1.005 = 15680.717323369565...
    (
        "exchange_memory:mean",
        "+0.5%",
        {},
        {"exchange_memory:mean": 15680.7},
        "ok",
        pytest.approx(15680.717323369565, abs=1e-9),
    ),
    (
        "exchange_memory:mean",
        "+0.5%",
        {},
        {"exchange_memory:mean": 15680.8},
        "fail",
        pytest.approx(15680.717323369565, abs=1e-9),
    ),
    # +X: 54 + 2 = 56
    ("qkv_executions", "+2", {}, {"qkv_executions": 56}, "ok", 56),
    ("qkv_executions", "+2", {}, {"qkv_executions": 57}, "fail", 56),
    # +X with a fraction: 37092 + 0.5
    ("exchange_memory:max", "+0.5", {}, {"exchange_memory:max": 37092}, "ok", 37092.5),
    ("exchange_memory:max", "+0.5", {}, {"exchange_memory:max": 37093}, "fail", 37092.5),
    # <= X
    ("allocated_memory:max", "<= 600000", {}, {"allocated_memory:max": 600000}, "ok", 600000),
    ("allocated_memory:max", "<= 600000", {}, {"allocated_memory:max": 600001}, "fail", 600000),
    # >= X
    ("device_span:1", ">= 15000000", {}, {"device_span:1": 15000000}, "ok", 15000000),
    ("device_span:1", ">= 15000000", {}, {"device_span:1": 14999999}, "fail", 15000000),
    # =: the baseline's 54, over and under
    ("qkv_executions", "=", {}, {"qkv_executions": 54}, "ok", 54),
    ("qkv_executions", "=", {}, {"qkv_executions": 55}, "fail", 54),
    ("qkv_executions", "=", {}, {"qkv_executions": 53}, "fail", 54),
]


@pytest.mark.parametrize(
    "key, budget, base, cand, status, limit",
    OPERATORS,
    ids=["{}{}-{}".format(o[0], o[1], o[4]) for o in OPERATORS],
)
def test_every_operator_within_and_over(tmp_path, key, budget, base, cand, status, limit):
    baseline = summary_with(tmp_path, "base", base)
    candidate = summary_with(tmp_path, "cand", cand)
    result = gate(
        baseline,
        candidate,
        "-f",
        "json",
        "--budget",
        budget_file(tmp_path, '"{}" = "{}"\n'.format(key, budget)),
    )
    assert result.code == (0 if status == "ok" else 3), result
    checks = [c for c in checks_of(result) if c["recording"] == "cand"]
    assert len(checks) == 1
    check = checks[0]
    assert check["metric"] == key and check["pattern"] == key
    assert check["budget"] == budget.replace(" ", "")
    assert check["status"] == status and check["limit"] == limit
    value = cand[key]
    assert check["value"] == value
    if budget[0] in "<>":  # absolute: the baseline is checked too, and passes
        assert [c["recording"] for c in checks_of(result)] == ["base", "cand"]
        assert checks_of(result)[0]["status"] == "ok"
    else:
        assert len(checks_of(result)) == 1
    expected_line = (
        "budget: all 1 checks within" if status == "ok" else "budget: 1 of 1 checks failed"
    )
    if budget[0] in "<>":
        expected_line = (
            "budget: all 2 checks within" if status == "ok" else "budget: 1 of 2 checks failed"
        )
    assert result.lines[-1] == expected_line


def test_spaces_in_budgets_and_the_limits_of_each_form(tmp_path):
    baseline = summary_with(tmp_path, "base", {})
    candidate = summary_with(tmp_path, "cand", {"stage:MLP up": 49000, "qkv_executions": 54})
    text = (
        '"stage:MLP up" = ["  +  2 %  ", "\\t+1000", "<=49000", ">=  48000 "]\n'
        '"qkv_executions" = " = "\n'
    )
    result = gate(baseline, candidate, "-f", "json", "--budget", budget_file(tmp_path, text))
    assert result.code == 0, result
    by_budget = {c["budget"]: c for c in checks_of(result) if c["recording"] == "cand"}
    # 48248 * 1.02 = 49212.96; 48248 + 1000 = 49248.
    assert by_budget["+2%"]["limit"] == pytest.approx(49212.96, abs=1e-9)
    assert by_budget["+1000"]["limit"] == 49248
    assert by_budget["<=49000"]["limit"] == 49000 and by_budget[">=48000"]["limit"] == 48000
    assert by_budget["="]["limit"] == 54
    assert all(c["status"] == "ok" for c in checks_of(result))


# ---- missing and skipped ------------------------------------------------------------


def test_missing_and_skipped(tmp_path):
    baseline = summary_with(tmp_path, "base", {})
    # The candidate lost its PV stage and gained a "softmax" stage.
    candidate = summary_with(tmp_path, "cand", {"stage:PV": None, "stage:softmax": 900})
    result = gate(
        baseline,
        candidate,
        "-f",
        "json",
        "--budget",
        budget_file(tmp_path, '"stage:[Ps]*" = ["+2%", "<= 100000"]\n'),
    )
    assert result.code == 3, result  # missing fails the gate
    checks = checks_of(result)
    # The baseline: its absolute bound on its one matching metric (stage:PV).
    # The candidate: +2% on PV (missing) and softmax (skipped), then <= on softmax only
    # (absolute bounds check metrics the recording has).
    assert [(c["recording"], c["metric"], c["budget"], c["status"]) for c in checks] == [
        ("base", "stage:PV", "<=100000", "ok"),
        ("cand", "stage:PV", "+2%", "missing"),
        ("cand", "stage:softmax", "+2%", "skipped"),
        ("cand", "stage:softmax", "<=100000", "ok"),
    ]
    missing, skipped = checks[1], checks[2]
    assert missing["value"] is None and missing["limit"] is None and missing["baseline"] == 12900
    assert skipped["value"] == 900 and skipped["limit"] is None and skipped["baseline"] is None
    assert result.lines[-1] == "budget: 1 of 3 checks failed, 1 skipped"


def test_only_skipped_passes(tmp_path):
    baseline = summary_with(tmp_path, "base", {})
    candidate = summary_with(tmp_path, "cand", {"stage:softmax": 900})
    result = gate(
        baseline, candidate, "--budget", budget_file(tmp_path, '"stage:softmax" = "+2%"\n')
    )
    assert result.code == 0, result
    assert result.lines[-1] == "budget: all 0 checks within, 1 skipped"


def test_null_values_are_absent(tmp_path):
    # Spans gone from the candidate: device_span:1, 2, max and mean are missing there.
    baseline = summary_with(tmp_path, "base", {})
    candidate = summary_with(tmp_path, "cand", {"device_spans": []})
    result = gate(
        baseline,
        candidate,
        "-f",
        "json",
        "--budget",
        budget_file(tmp_path, '"device_span:*" = "+1%"\n'),
    )
    assert result.code == 3
    assert [(c["metric"], c["status"]) for c in checks_of(result)] == [
        ("device_span:1", "missing"),
        ("device_span:2", "missing"),
        ("device_span:max", "missing"),
        ("device_span:mean", "missing"),
    ]


def test_without_pva_attention_exchanges_are_missing(tmp_path):
    baseline = summary_with(tmp_path, "base", {})
    candidate = summary_with(tmp_path, "cand", {"no pva": True})
    result = gate(
        baseline,
        candidate,
        "-f",
        "json",
        "--budget",
        budget_file(tmp_path, '"attention_exchange:*" = "+10%"\n"stage:*" = "+0%"\n'),
    )
    assert result.code == 3
    statuses = [(c["metric"].split(":")[0], c["status"]) for c in checks_of(result)]
    assert statuses == [("attention_exchange", "missing")] * 17 + [("stage", "ok")] * 6


# ---- three recordings, overlapping patterns, order ----------------------------------


def test_three_recordings_overlapping_patterns_in_the_spec_order(tmp_path):
    a = summary_with(tmp_path, "a", {})
    # b: MLP down +4 % (52187 * 1.04 = 54274.48 -> 54274): over "stage:*" +2 % (limit
    # 53230.74), within "stage:MLP down" +5 % (limit 54796.35).
    b = summary_with(tmp_path, "b", {"stage:MLP down": 54274})
    # c: MLP down +6 % (55318): over both; MLP up 48248 unchanged.
    c = summary_with(tmp_path, "c", {"stage:MLP down": 55318})
    text = '"stage:MLP*" = "+2%"\n"stage:MLP down" = ["+5%", "<= 55000"]\n'
    result = gate(a, b, c, "-f", "json", "--budget", budget_file(tmp_path, text))
    assert result.code == 3, result
    got = [
        (c["recording"], c["metric"], c["pattern"], c["budget"], c["status"], c["limit"])
        for c in checks_of(result)
    ]
    assert got == [
        # the baseline: absolute bounds only
        ("a", "stage:MLP down", "stage:MLP down", "<=55000", "ok", 55000),
        # then each recording: budget file order, then row order (MLP up before MLP down)
        ("b", "stage:MLP up", "stage:MLP*", "+2%", "ok", pytest.approx(49212.96)),
        ("b", "stage:MLP down", "stage:MLP*", "+2%", "fail", pytest.approx(53230.74)),
        ("b", "stage:MLP down", "stage:MLP down", "+5%", "ok", pytest.approx(54796.35)),
        ("b", "stage:MLP down", "stage:MLP down", "<=55000", "ok", 55000),
        ("c", "stage:MLP up", "stage:MLP*", "+2%", "ok", pytest.approx(49212.96)),
        ("c", "stage:MLP down", "stage:MLP*", "+2%", "fail", pytest.approx(53230.74)),
        ("c", "stage:MLP down", "stage:MLP down", "+5%", "fail", pytest.approx(54796.35)),
        ("c", "stage:MLP down", "stage:MLP down", "<=55000", "fail", 55000),
    ]
    assert result.lines[-1] == "budget: 4 of 9 checks failed"


def test_row_order_across_recordings(tmp_path):
    # A stage only the second recording has comes after the baseline's stages, spans by
    # number, then max and mean, as the comparison's rows.
    a = summary_with(tmp_path, "a", {"device_spans": [100]})
    b = summary_with(tmp_path, "b", {"device_spans": [100, 90, 80], "stage:extra": 5})
    result = gate(a, b, "-f", "json", "--budget", budget_file(tmp_path, '"*" = "<= 100000000"\n'))
    assert result.code == 0, result
    metrics = [c["metric"] for c in checks_of(result) if c["recording"] == "b"]
    assert metrics[:8] == [
        "stage:fused QKV projection",
        "stage:QK transpose",
        "stage:PV",
        "stage:output projection",
        "stage:MLP up",
        "stage:MLP down",
        "stage:extra",
        "stages:total",
    ]
    assert metrics[8:13] == [
        "device_span:1",
        "device_span:2",
        "device_span:3",
        "device_span:max",
        "device_span:mean",
    ]
    assert metrics[13:20] == [
        "qkv_executions",
        "exchange_memory:min",
        "exchange_memory:mean",
        "exchange_memory:max",
        "allocated_memory:min",
        "allocated_memory:mean",
        "allocated_memory:max",
    ]
    assert len(metrics) == 20 + 17
    # The JSON rows name the same metrics (device span max and mean are rows now, as
    # they are checked); the CSV's metric_name column too.
    rows = json.loads(result.text)["rows"]
    names = [r["metric_name"] for r in rows] + [
        e["metric_name"] for e in json.loads(result.text)["attention_exchanges"]
    ]
    assert names == metrics


# ---- the outputs --------------------------------------------------------------------


def markdown_rows(text):
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| |"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0]] = cells[2:]
    return rows


def test_markdown_marks_each_checked_value(tmp_path):
    a = summary_with(tmp_path, "a", {})
    b = summary_with(
        tmp_path,
        "b",
        {
            "stage:PV": 14191,
            "stage:MLP up": 40000,
            "qkv_executions": 53,
            "allocated_memory:max": 700000,
        },
    )
    text = (
        '"stage:PV" = "+10%"\n"stage:MLP up" = "+2%"\n"qkv_executions" = "="\n'
        '"allocated_memory:max" = "<= 638976"\n"device_span:mean" = "+0%"\n'
    )
    result = gate(a, b, "--budget", budget_file(tmp_path, text))
    assert result.code == 3, result
    rows = markdown_rows(result.text)
    # PV: 14191 against 12900 * 1.1 = 14190: 1 over; +10.0 % change.
    assert rows["stage: PV"] == ["12900", "14191 (+10.0%) \u274c +10%: 1 over limit 14190"]
    assert rows["stage: MLP up"] == ["48248", "40000 (-17.1%) \u2705"]
    assert rows["QKV executions"] == ["54", "53 \u274c =: 1 under limit 54"]
    # 700000 - 638976 = 61024 over; the baseline's 596494 is within.
    assert rows["allocated memory per tile, max"] == [
        "596494 \u2705",
        "700000 \u274c <=638976: 61024 over limit 638976",
    ]
    assert rows["device span mean"] == ["15987661.5", "15987661.5 (+0.0%) \u2705"]
    # Unchecked values are unmarked.
    assert rows["stage: QK transpose"] == ["8488", "8488 (+0.0%)"]
    assert "device span max" not in rows  # no row for it: not checked
    lines = result.text.splitlines()
    assert lines[-2:] == ["", "budget: 3 of 6 checks failed"]
    assert result.lines[-1] == "budget: 3 of 6 checks failed"


def test_markdown_marks_missing_and_skipped(tmp_path):
    a = summary_with(tmp_path, "a", {})
    b = summary_with(tmp_path, "b", {"stage:PV": None, "stage:softmax": 900})
    result = gate(a, b, "--budget", budget_file(tmp_path, '"stage:*" = "+2%"\n'))
    rows = markdown_rows(result.text)
    assert rows["stage: PV"] == ["12900", "\u2014 \u274c +2%: missing"]
    assert rows["stage: softmax"] == ["\u2014", "900 (+2% skipped: no baseline)"]


def test_csv_budget_columns(tmp_path):
    a = summary_with(tmp_path, "a", {})
    b = summary_with(tmp_path, "b", {"stage:PV": 14191})
    result = gate(
        a,
        b,
        "-f",
        "csv",
        "--label",
        "base",
        "--label",
        "new",
        "--budget",
        budget_file(tmp_path, '"stage:PV" = ["+10%", "<= 20000"]\n"stages:total" = "+1%"\n'),
    )
    assert result.code == 3, result
    rows = list(csv.reader(io.StringIO(result.text, newline="")))
    assert rows[0] == [
        "section",
        "metric",
        "unit",
        "base",
        "base budget",
        "new",
        "new change %",
        "new budget",
        "note",
        "metric_name",
    ]
    by_name = {r[-1]: r for r in rows[1:] if r[-1]}
    pv = by_name["stage:PV"]
    assert pv[3:5] == ["12900", "ok <=20000"]
    assert pv[5] == "14191" and pv[7] == "fail +10%: 1 over limit 14190; ok <=20000"
    # total: 173253 + 1291 = 174544 <= 173253 * 1.01 = 174985.53
    total = by_name["stages:total"]
    assert total[4] == "" and total[5] == "174544" and total[7] == "ok +1%"
    assert by_name["stage:MLP up"][7] == ""


def test_json_budgets_objects(tmp_path):
    a = summary_with(tmp_path, "a", {})
    b = summary_with(tmp_path, "b", {"exchange_memory:max": 37700})
    result = gate(
        a, b, "-f", "json", "--budget", budget_file(tmp_path, '"exchange_memory:max" = " + 512"\n')
    )
    assert result.code == 3
    data = json.loads(result.text)
    # 37092 + 512 = 37604 < 37700.
    assert data["budgets"] == [
        {
            "recording": "b",
            "metric": "exchange_memory:max",
            "pattern": "exchange_memory:max",
            "budget": "+512",
            "baseline": 37092,
            "value": 37700,
            "limit": 37604,
            "status": "fail",
        }
    ]
    assert list(data) == ["recordings", "clock_mhz", "rows", "attention_exchanges", "budgets"]


def test_batch_output_folders_as_recordings(tmp_path):
    # Two batch output folders (summaries below them); the first folder's first summary
    # is the baseline.
    base, new = tmp_path / "base", tmp_path / "new"
    summary_with(base, "fp8", {})
    summary_with(new, "fp8", {"stage:PV": 13000})
    summary_with(new, "fp16", {"stage:PV": 20000})
    (base / "index.jsonl").write_text("{}\n")
    result = gate(
        base, new, "-f", "json", "--budget", budget_file(tmp_path, '"stage:PV" = "+1%"\n')
    )
    # 12900 * 1.01 = 13029: new/fp8 13000 ok, new/fp16 20000 fail. Folders sorted: fp16
    # before fp8.
    assert result.code == 3, result
    labels = [r["label"] for r in json.loads(result.text)["recordings"]]
    assert [(c["recording"], c["value"], c["status"]) for c in checks_of(result)] == [
        (labels[1], 20000, "fail"),
        (labels[2], 13000, "ok"),
    ]
    assert "fp16" in labels[1] and "fp8" in labels[2] and "fp8" in labels[0]


def test_with_chart_and_clock(tmp_path):
    a = summary_with(tmp_path, "a", {})
    b = summary_with(tmp_path, "b", {})
    chart = tmp_path / "c.svg"
    result = gate(
        a,
        b,
        "--clock-mhz",
        "1850",
        "--chart",
        chart,
        "--budget",
        budget_file(tmp_path, '"device_span:*" = "+0%"\n'),
    )
    assert result.code == 0, result
    assert chart.exists()
    rows = [line for line in result.text.splitlines() if "device span" in line]
    # The cycles rows are marked, the milliseconds rows not.
    assert all(("\u2705" in line) == ("| cycles |" in line) for line in rows)
    assert result.lines[-1] == "budget: all 4 checks within"


# ---- the example budget file ----------------------------------------------------------


def test_example_budget_passes_on_the_reference_against_itself(tmp_path):
    result = gate(
        REFERENCE, REFERENCE, "-f", "json", "--budget", EXAMPLE, "--junit", tmp_path / "report.xml"
    )
    assert result.code == 0, result
    checks = checks_of(result)
    assert checks and all(c["status"] == "ok" for c in checks)
    patterns = {c["pattern"] for c in checks}
    # Every key of the example matched something (else exit 2), and each kind is there.
    assert {
        "stage:*",
        "stages:total",
        "device_span:*",
        "qkv_executions",
        "allocated_memory:max",
        "exchange_memory:max",
        "attention_exchange:cs#_*",
    } <= patterns
    # The baseline's bound on allocated max; then 6 stages, total, 4 spans (2, max and
    # mean), qkv, 2 on allocated max, its mean, exchange max, the 11 cs# exchanges (of 17:
    # the other 6 are copies).
    assert result.lines[-1] == "budget: all {} checks within".format(len(checks))
    assert len(checks) == 1 + 6 + 1 + 4 + 1 + 2 + 1 + 1 + 11
    suites = list(JUnitXml.fromfile(str(tmp_path / "report.xml")))
    assert [s.tests for s in suites] == [1, len(checks) - 1]


def test_example_budget_on_the_readme_s_showcase_fails_as_the_readme_says(tmp_path):
    # The README's gate: the recompiled fixture against the golden summary. By hand
    # (fixtures/vit-f8weight-recompiled/README.md and the diff in the README): the QK
    # transpose's exchange grew 248 -> 400 code bytes (limit 248 * 1.1 = 272.8), the
    # attention Mul_1 exchange was fused away (missing), the weight cast's exchange is
    # new (skipped); every stage, span and memory is within. 28 checks: the baseline's
    # bound on allocated max, then 6 stages, total, 4 spans, qkv, 2 on allocated max, its
    # mean, exchange max and the golden summary's 11 cs# exchanges.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## A budget as a CI gate", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert (
        "extract compare fixtures/vit-f8weight/expected.json "
        "fixtures/vit-f8weight-recompiled/summary.json --budget examples/budget.toml" in block
    )
    assert "`budget: 2 of 28 checks failed, 1 skipped` and `exit code 3`" in section
    recompiled = tmp_path / "vit-f8weight-recompiled" / "summary.json"
    made = invoke_extract(
        "fixtures/vit-f8weight-recompiled/profile.pop", "-o", recompiled, cwd=REPO
    )
    assert made.code == 0, made
    result = gate(REFERENCE, recompiled, "-f", "json", "--budget", EXAMPLE)
    assert result.code == 3, result
    assert result.lines[-1] == "budget: 2 of 28 checks failed, 1 skipped"
    checks = checks_of(result)
    assert len([c for c in checks if c["status"] != "skipped"]) == 28
    exchange = "attention_exchange:cs#_/visual/trunk/blocks/blocks.0/attn/"
    not_ok = sorted(
        (c["status"], c["metric"], c["baseline"], c["value"], c["limit"])
        for c in checks
        if c["status"] != "ok"
    )
    assert not_ok == [
        ("fail", exchange + "MatMul/#/matmulGrouped/Conv_1/Convolve/ExchangePre", 248, 400, 272.8),
        ("missing", exchange + "Mul_1/#/Op/Multiply/ExchangePre", 16, None, None),
        (
            "skipped",
            exchange + "qkv/MatMul/#/matmulGrouped/Conv_1/castWeights/Cast/ExchangePre",
            None,
            96,
            None,
        ),
    ]


def test_example_budget_catches_the_b_variant():
    # vit-f8weight-b (see its README): PV +10 % and an exchange gone: fails the gate.
    b = GOLDEN.parent / "vit-f8weight-b" / "expected.json"
    result = gate(REFERENCE, b, "-f", "json", "--budget", EXAMPLE)
    assert result.code == 3, result
    failed = {(c["metric"], c["status"]) for c in checks_of(result) if c["status"] != "ok"}
    assert ("stage:PV", "fail") in failed
    assert (
        (
            "attention_exchange:cs#_/visual/trunk/blocks/blocks.0/attn/Mul_1/#/Op/Multiply/"
            "ExchangePre"
        ),
        "missing",
    ) in failed


# ---- JUnit --------------------------------------------------------------------------


def test_junit_report(tmp_path):
    a = summary_with(tmp_path, "a", {})
    b = summary_with(tmp_path, "b", {"stage:PV": None, "stage:softmax": 1, "qkv_executions": 60})
    c = summary_with(tmp_path, "c", {})
    report = tmp_path / "reports" / "budget.xml"  # its folder is made
    text = '"stage:*" = "+2%"\n"qkv_executions" = ["=", "<= 100"]\n'
    result = gate(a, b, c, "--budget", budget_file(tmp_path, text), "--junit", report)
    assert result.code == 3, result
    xml = JUnitXml.fromfile(str(report))
    suites = {s.name: s for s in xml}
    assert list(suites) == ["a", "b", "c"]
    # a: qkv <= 100 only. b: 7 stage checks (the 6 of a, PV missing, and softmax,
    # skipped), qkv = (fail), qkv <= 100 (ok). c: its 6 stages ok (no softmax on either
    # side), 2 qkv ok.
    counts = {name: (s.tests, s.failures, s.skipped, s.errors) for name, s in suites.items()}
    assert counts == {"a": (1, 0, 0, 0), "b": (9, 2, 1, 0), "c": (8, 0, 0, 0)}
    cases = {case.name: case for case in suites["b"]}
    assert len(cases) == 9
    missing = cases["stage:PV +2% [stage:*]"]
    assert [type(r) for r in missing.result] == [Failure]
    assert missing.result[0].type == "missing" and "12900" in missing.result[0].message
    equal = cases["qkv_executions ="]
    assert [type(r) for r in equal.result] == [Failure] and equal.result[0].type == "fail"
    # 60 against = 54: 6 over limit 54.
    assert "6 over limit 54" in equal.result[0].message
    assert [type(r) for r in cases["stage:softmax +2% [stage:*]"].result] == [Skipped]
    assert cases["qkv_executions <=100"].result == []
    assert all(case.classname == "b" for case in cases.values())
    # Each suite's counts are its cases'.
    for suite in xml:
        cases = list(suite)
        assert suite.tests == len(cases)
        assert suite.failures == sum(any(isinstance(r, Failure) for r in k.result) for k in cases)
        assert suite.skipped == sum(any(isinstance(r, Skipped) for r in k.result) for k in cases)


def test_junit_replaces_a_previous_report_atomically(tmp_path):
    a = summary_with(tmp_path, "a", {})
    report = tmp_path / "report.xml"
    report.write_text("old")
    link = tmp_path / "link.xml"
    os.symlink(str(report), str(link))
    result = gate(
        a, a, "--budget", budget_file(tmp_path, '"qkv_executions" = "="\n'), "--junit", link
    )
    assert result.code == 0, result
    assert link.is_symlink()  # the link stays, the file it names is replaced
    assert [s.tests for s in JUnitXml.fromfile(str(report))] == [1]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_junit_names_that_xml_cannot_hold(tmp_path):
    a = reference()
    a["kernels"][0]["stage"] = "odd\x01stage <&>"
    path = tmp_path / "a" / "summary.json"
    path.parent.mkdir()
    path.write_text(json.dumps(a))
    report = tmp_path / "r.xml"
    result = gate(
        path, path, "--budget", budget_file(tmp_path, '"stage:odd*" = "+0%"\n'), "--junit", report
    )
    assert result.code == 0, result
    (case,) = [case for suite in JUnitXml.fromfile(str(report)) for case in suite]
    assert case.name == "stage:odd\\x01stage <&> +0% [stage:odd*]"


def test_junit_to_a_folder_is_an_output_error(tmp_path):
    a = summary_with(tmp_path, "a", {})
    result = gate(
        a, a, "--budget", budget_file(tmp_path, '"qkv_executions" = "="\n'), "--junit", tmp_path
    )
    assert result.code == 1, result
    assert result.stderr.startswith("extract: error: {}".format(tmp_path))


# ---- exit codes -----------------------------------------------------------------------


def test_exit_codes(tmp_path):
    a = summary_with(tmp_path, "a", {})
    b = summary_with(tmp_path, "b", {"qkv_executions": 55})
    good = budget_file(tmp_path, '"qkv_executions" = "="\n', "good.toml")
    bad = budget_file(tmp_path, '"qkv_executions" = "=="\n', "bad.toml")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert gate(a, a, "--budget", good).code == 0
    assert gate(a, b, "--budget", good).code == 3
    # An unreadable summary: 1, with the budget line never printed.
    result = gate(a, broken, "--budget", good)
    assert result.code == 1 and "budget:" not in result.stderr
    # A usage error wins over an unreadable summary: the budget file is read first.
    result = gate(a, broken, "--budget", bad)
    assert result.code == 2 and str(bad) in result.stderr
    assert gate(a, tmp_path / "nowhere.json", "--budget", bad).code == 2
    # --junit without --budget: before anything is read or written.
    report = tmp_path / "r.xml"
    result = gate(a, broken, "--junit", report)
    assert "--junit" in one_usage_error(result) and not report.exists()
    # Without --budget nothing changes: exit 0, no budget line.
    result = gate(a, b)
    assert result.code == 0 and result.stderr == ""


def test_a_pattern_matching_nothing_is_a_usage_error_before_any_output(tmp_path):
    a = summary_with(tmp_path, "a", {})
    b = summary_with(tmp_path, "b", {"stage:PV": 99999})
    report, chart = tmp_path / "r.xml", tmp_path / "c.svg"
    for key in ("stage:attention", "Stage:PV", "attention_exchange:*"):
        bad = budget_file(tmp_path, '"stage:*" = "+2%"\n"{}" = "+2%"\n'.format(key))
        args = [a, b, "--budget", bad, "--junit", report, "--chart", chart]
        if key.startswith("attention"):  # none without pva facts
            args[1] = summary_with(tmp_path, "c", {"no pva": True})
            args[0] = summary_with(tmp_path, "d", {"no pva": True})
        error = one_usage_error(gate(*args))
        assert error.startswith(
            "extract: error: {}: key '{}': matches no metric".format(bad, key)
        ), error
        assert not report.exists() and not chart.exists()


# ---- broken budget files --------------------------------------------------------------

BROKEN = [
    # (id, the file's content: "!" = whole file, else the lines under [budgets]; what the
    # message must say)
    ("empty file", "!", "no [budgets] table"),
    ("not TOML", '!"stage:*" = +2%\n', "not valid TOML"),
    ("unclosed table", '![budgets\n"stage:*" = "+2%"\n', "not valid TOML"),
    ("duplicate key", '"stage:*" = "+2%"\n"stage:*" = "+3%"\n', "not valid TOML"),
    ("no [budgets]", '![budget]\n"stage:*" = "+2%"\n', "table ['budget'] outside"),
    ("empty [budgets]", "", "[budgets] is empty"),
    ("another table", '"stage:*" = "+2%"\n[limits]\nx = "+1%"\n', "table ['limits'] outside"),
    ("key outside", '!x = "+1%"\n[budgets]\n"stage:*" = "+2%"\n', "key 'x' outside"),
    ("budgets not a table", '!budgets = "+2%"\n', "must be the table [budgets], not a string"),
    ("a sub-table", '[budgets.stage]\nPV = "+2%"\n', "key 'stage': a budget is a string"),
    ("an integer", '"stage:*" = 2\n', "key 'stage:*': a budget is a string"),
    ("a float", '"stage:*" = 2.5\n', "not a float"),
    ("a date", '"stage:*" = 2026-11-30\n', "not a date"),
    ("a boolean", '"stage:*" = true\n', "not a boolean"),
    ("empty list", '"stage:*" = []\n', "key 'stage:*': an empty list"),
    ("number in a list", '"stage:*" = ["+2%", 3]\n', "key 'stage:*': a budget is a string"),
    ("nested list", '"stage:*" = [["+2%"]]\n', "not an array"),
    ("no operator", '"stage:*" = "2%"\n', "'2%' is not a budget"),
    ("a minus", '"stage:*" = "-2%"\n', "'-2%' is not a budget"),
    ("percent on a bound", '"stage:*" = "<= 5%"\n', "'<= 5%' is not a budget"),
    ("< alone", '"stage:*" = "< 5"\n', "'< 5' is not a budget"),
    ("split operator", '"stage:*" = "< = 5"\n', "is not a budget"),
    ("no whole part", '"stage:*" = "+.5%"\n', "'+.5%' is not a budget"),
    ("no fraction digits", '"stage:*" = "+2.%"\n', "is not a budget"),
    ("exponent", '"stage:*" = "<= 1e6"\n', "is not a budget"),
    ("two numbers", '"stage:*" = "+2%2"\n', "is not a budget"),
    ("= with a number", '"stage:*" = "= 54"\n', "is not a budget"),
    ("other digits", '"stage:*" = "+\uff12%"\n', "is not a budget"),
    ("empty string", '"stage:*" = ""\n', "'' is not a budget"),
    ("a number too large", '"stage:*" = "<= 1{}"\n'.format("0" * 400), "too large"),
]


@pytest.mark.parametrize("content, message", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_broken_budget_files(tmp_path, content, message):
    budget = budget_file(tmp_path, content)
    report = tmp_path / "r.xml"
    # The second summary does not exist: the budget file is reported first, exit 2.
    result = gate(REFERENCE, tmp_path / "nowhere.json", "--budget", budget, "--junit", report)
    error = one_usage_error(result)
    assert error.startswith("extract: error: {}: ".format(budget)), error
    assert message in error, error
    assert not report.exists()


def test_budget_files_that_are_not_files(tmp_path):
    cases = {
        "missing": (tmp_path / "nowhere.toml", "no such budget file"),
        "folder": (tmp_path, "is a folder"),
    }
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(str(fifo))  # refused without waiting for a writer
    cases["fifo"] = (fifo, "FIFO")
    binary = budget_file(tmp_path, b'[budgets]\n"stage:*" = "+2\xff%"\n', "bin.toml")
    cases["not UTF-8"] = (binary, "not UTF-8")
    for path, message in cases.values():
        error = one_usage_error(gate(REFERENCE, REFERENCE, "--budget", path))
        assert error.startswith("extract: error: {}: ".format(path)) and message in error, error


def test_a_byte_order_mark_is_allowed(tmp_path):
    budget = budget_file(tmp_path, '\ufeff[budgets]\n"qkv_executions" = "="\n'.encode())
    result = gate(REFERENCE, REFERENCE, "--budget", budget)
    assert result.code == 0, result


def test_deeply_nested_toml_is_one_line(tmp_path):
    budget = budget_file(tmp_path, '"stage:*" = {}{}\n'.format("[" * 5000, "]" * 5000))
    one_usage_error(gate(REFERENCE, REFERENCE, "--budget", budget))


def test_budget_file_is_not_modified(tmp_path):
    budget = budget_file(tmp_path, '"qkv_executions" = "="\n')
    before = budget.read_bytes(), os.stat(str(budget)).st_mtime_ns
    assert gate(REFERENCE, REFERENCE, "--budget", budget).code == 0
    assert (budget.read_bytes(), os.stat(str(budget)).st_mtime_ns) == before


def test_help_lists_the_options():
    result = invoke_extract("compare", "--help")
    assert result.code == 0 and b"--budget" in result.stdout and b"--junit" in result.stdout


def test_fixture_copies_are_hand_editable():
    # The reference these tests edit has the numbers the comments above read off it.
    data = reference()
    assert [(k["stage"], k["cycles"]) for k in data["kernels"]] == [
        ("fused QKV projection", 37277),
        ("QK transpose", 8488),
        ("PV", 12900),
        ("output projection", 14153),
        ("MLP up", 48248),
        ("MLP down", 52187),
    ]
    assert data["device_spans"] == [15987664, 15987659] and data["qkv_executions"] == 54
    assert data["allocated_memory"]["max(total)"] == 596494
    assert data["exchange_memory_per_tile"]["avg(b)"] == 15602.703804347826
    assert len(data["attention_exchanges"]) == 17


def test_the_ci_gate_as_the_readme_runs_it(golden_profile, tmp_path):
    # docs/commands/compare.md's CI job: extract the profile, then gate the new summary against the
    # committed baseline (the reference summary) with the example budget, JUnit out.
    summary = tmp_path / "summary.json"
    run = invoke_extract(golden_profile, "-o", summary)
    assert run.code == 0, run
    report = tmp_path / "budget-report.xml"
    result = gate(
        REFERENCE,
        summary,
        "--label",
        "baseline",
        "--label",
        "this-commit",
        "--budget",
        EXAMPLE,
        "--junit",
        report,
    )
    assert result.code == 0, result
    assert result.lines[-1] == "budget: all 28 checks within"  # counted in the test above
    suites = {s.name: (s.tests, s.failures) for s in JUnitXml.fromfile(str(report))}
    assert suites == {"baseline": (1, 0), "this-commit": (27, 0)}
    assert "\u274c" not in result.text and result.text.count("\u2705") >= 20
