"""The baseline of `extract report` and `extract compare` (compare/baseline.py), the
report's stage columns in the stage rules' order, and its budget counts, through the real
CLI on batches of the committed fixtures.

By hand, from fixtures/edge/README.md and the summaries' kernels: in a batch of
fixtures/edge the recordings are read in path order, `edge/compile-only` first; it has no
steps, so no first-body kernels; `edge/empty-code-bytes` is the first with kernels (fused
QKV projection 260, MLP up 410). The stages the edge cases have are fused QKV projection,
MLP up (most), PV, MLP down and other (name-rules, one-anchor); stage_rules.toml lists PV,
then fused QKV projection, MLP up, MLP down, and `other` is the fallback, last.
"""

import pytest

from support.cli import invoke_extract
from support.paths import GOLDEN, REPO
from support.reportpage import parse, write_summary

LABELS = "golden/inference, recompiled/inference"
RULES_ORDER = ["PV", "fused QKV projection", "MLP up", "MLP down", "other"]


@pytest.fixture(scope="module")
def edge_batch(tmp_path_factory):
    """The fixtures/edge profiles extracted as one batch, with blocks.json (pva stand-in)."""
    out = tmp_path_factory.mktemp("edge") / "out"
    done = invoke_extract("fixtures/edge", "-o", out, "--blocks", "--quiet", cwd=REPO)
    assert done.code == 0, done
    return out


def report_page(tmp_path, *args):
    target = tmp_path / "report.html"
    result = invoke_extract("report", *(list(args) + ["-o", target]), pva=False)
    return result, (parse(target.read_bytes()) if target.exists() else None)


def baseline_row(page):
    rows = page.find("table", id="recordings").find("tbody").find_all("tr")
    return [r.find("th").attrs["data-s"] for r in rows if r.classes == ["baseline"]]


def headings(page):
    return [
        th.text()
        for th in page.find("table", id="recordings").find_all("th")
        if th.attrs.get("scope") == "col"
    ]


def test_a_folder_s_recording_without_kernels_is_passed_over(tmp_path, edge_batch):
    result, page = report_page(tmp_path, edge_batch)
    assert result.code == 0, result
    assert baseline_row(page) == ["empty-code-bytes"]
    meta = page.find("p", cls="meta").text()
    assert "Changes are against\nempty-code-bytes (the baseline)." in meta
    assert "Passed over as the baseline, having no first-body kernels:\ncompile-only." in meta
    assert result.stderr == (
        "extract: warning: {}: has no first-body kernels, so it is not the baseline: "
        "changes are against empty-code-bytes\n".format(
            edge_batch / "compile-only" / "summary.json"
        )
    )


def test_stage_columns_follow_the_rules_not_the_first_recording(tmp_path, edge_batch):
    result, page = report_page(tmp_path, edge_batch)
    assert result.code == 0, result
    assert headings(page)[1 : 1 + len(RULES_ORDER)] == RULES_ORDER
    assert headings(page)[1 + len(RULES_ORDER)] == "stages total"
    # The chart's legend keeps the same order. (A heat map's columns follow its own
    # first body's running order: tests/test_heat_map_order.py.)
    legend = [
        k.text().strip() for k in page.find("section", id="chart").find_all("span", cls="key")
    ]
    assert legend == RULES_ORDER


def test_a_summary_given_as_a_file_is_the_baseline_as_it_is(tmp_path, edge_batch):
    compile_only = edge_batch / "compile-only" / "summary.json"
    result, page = report_page(tmp_path, compile_only, edge_batch / "multi-ipu")
    assert result.code == 0, result
    assert baseline_row(page) == ["compile-only"]
    assert "Passed over" not in page.find("p", cls="meta").text()
    assert "not the baseline" not in result.stderr


@pytest.mark.parametrize(
    "wanted, baseline",
    [
        ("multi-ipu", "edge/multi-ipu"),  # a trailing folder name
        ("golden", "golden/inference"),  # a leading one
        ("golden/inference", "golden/inference"),  # the whole label
    ],
)
def test_baseline_takes_a_unique_run_of_folder_names(tmp_path, edge_batch, wanted, baseline):
    write_summary(tmp_path / "in" / "golden" / "inference", GOLDEN / "expected.json")
    write_summary(tmp_path / "in" / "edge" / "multi-ipu", edge_batch / "multi-ipu" / "summary.json")
    result, page = report_page(tmp_path, tmp_path / "in", "--baseline", wanted)
    assert result.code == 0, result
    assert baseline_row(page) == [baseline]


@pytest.mark.parametrize(
    "wanted, problem",
    [
        (
            "inference",
            (
                "2 recordings are labelled so (golden/inference, recompiled/inference): "
                "give more of the label"
            ),
        ),
        (
            "gold",
            "no recording is labelled so (the labels: golden/inference, recompiled/inference)",
        ),
    ],
)
def test_an_ambiguous_or_unknown_baseline_is_a_usage_error(tmp_path, wanted, problem):
    for name in ("golden", "recompiled"):
        write_summary(tmp_path / "in" / name / "inference", GOLDEN / "expected.json")
    result, page = report_page(tmp_path, tmp_path / "in", "--baseline", wanted)
    assert result.code == 2, result
    assert result.stderr == "extract: error: --baseline {}: {}\n".format(wanted, problem)
    assert page is None


def test_compare_takes_its_baseline_by_the_same_rule(edge_batch, tmp_path):
    folder = tmp_path / "three"
    for name in ("compile-only", "empty-code-bytes", "multi-ipu"):
        write_summary(folder / name, edge_batch / name / "summary.json")
    result = invoke_extract("compare", folder, pva=False)
    assert result.code == 0, result
    lines = result.stdout.decode().splitlines()
    # The baseline is the first column; the recording passed over keeps its place after it.
    assert lines[0] == "| | unit | empty-code-bytes | compile-only | multi-ipu |"
    # multi-ipu's fused QKV 260 + 250 = 510 against 260: +96.2 %
    assert lines[2] == "| stage: fused QKV projection | kernel cycles | 260 | — | 510 (+96.2%) |"
    assert result.stderr == (
        "extract: warning: {}: has no first-body kernels, so it is not the baseline: "
        "changes are against empty-code-bytes\n".format(folder / "compile-only" / "summary.json")
    )
    # Given as files, the first is the baseline, kernels or not.
    files = invoke_extract(
        "compare", folder / "compile-only" / "summary.json", folder / "multi-ipu", pva=False
    )
    assert files.code == 0, files
    assert files.stdout.decode().splitlines()[0] == "| | unit | compile-only | multi-ipu |"
    assert files.stderr == ""


def test_the_header_and_the_budget_section_count_alike(tmp_path, edge_batch):
    # The golden summary against the recompiled one, with the shipped budget: by hand
    # (tests/test_budget_example.py), 2 checks fail the gate: one `fail` (the QK
    # exchange's code, 248 -> 400 bytes, over +10%) and one `missing` (the exchange the
    # recompile fused away); the others are ok, one skipped.
    folder = tmp_path / "pair"
    write_summary(folder / "golden", GOLDEN / "expected.json")
    recompiled = invoke_extract(
        "fixtures/vit-f8weight-recompiled/profile.pop",
        "-o",
        folder / "recompiled" / "summary.json",
        cwd=REPO,
    )
    assert recompiled.code == 0, recompiled
    gate = invoke_extract(
        "compare", folder, "--budget", REPO / "examples" / "budget.toml", "-f", "json", pva=False
    )
    assert gate.code == 3, gate
    assert gate.stderr.endswith("budget: 2 of 28 checks failed, 1 skipped\n")
    result, page = report_page(tmp_path, folder, "--budget", REPO / "examples" / "budget.toml")
    assert result.code == 0, result
    counts = "1 failed, 1 missing, 26 ok, 1 skipped"
    assert page.find(id="count-budget").text() == counts
    assert page.find(id="budget-counts").text() == counts
    statuses = [
        tr.find_all("td")[0].text().split()[-1]
        for tr in page.find("table", id="checks").find("tbody").find_all("tr")
    ]
    assert sorted(statuses[:2]) == ["fail", "missing"]
    assert sorted(statuses[2:]) == ["ok"] * 26 + ["skipped"]
