"""What compare, table and report trust: a summary is what its batch last wrote, and a
blocks.json belongs to the summary beside it (extractor/readback/provenance.py), through the
real CLI. The batch here is real (`extract runs -o out --blocks`); a profile is made
slower or truncated between two runs, as a user's would be.
"""

import sqlite3
from pathlib import Path

from support.cases import copy_case
from support.checks import index_by, one_error
from support.cli import invoke_extract
from support.paths import EDGE
from support.reportpage import parse

GATE = '[budgets]\n"stage:*" = "+2%"\n"stages:total" = "+1%"\n'


def slower_qkv(profile: Path, factor: int = 4) -> None:
    """Every QKV kernel row of the profile takes `factor` times the cycles."""
    with sqlite3.connect(str(profile)) as db:
        db.execute(
            "UPDATE steps_by_ipu SET cycles = cycles * ? WHERE step_id IN ("
            "SELECT s.id FROM steps s JOIN compute_sets c "
            "ON c.compute_set = s.compute_set WHERE c.name LIKE '%/attn/qkv/%')",
            (factor,),
        )
    db.close()


def batch(tmp_path, *options):
    """runs/base and runs/cand (copies of the multi-IPU fixture) extracted to out/."""
    for name in ("base", "cand"):
        if not (tmp_path / "runs" / name).exists():
            copy_case(EDGE / "multi-ipu", tmp_path / "runs" / name)
    return invoke_extract("runs", "-o", "out", "-j", "1", *options, cwd=tmp_path)


def compare(tmp_path, *args):
    budget = tmp_path / "gate.toml"
    budget.write_text(GATE)
    return invoke_extract(
        "compare",
        "out/base",
        "out/cand",
        *[budget if a == "GATE" else a for a in args],
        cwd=tmp_path,
        pva=False,
    )


# ---- a stale blocks.json ---------------------------------------------------------------


def test_a_stale_blocks_json_never_passes_the_gate(tmp_path):
    assert batch(tmp_path, "--blocks").code == 0
    ok = compare(tmp_path, "--stat", "median", "--budget", "GATE")
    assert ok.code == 0, ok  # the same profile twice: within
    slower_qkv(tmp_path / "runs" / "cand" / "profile.pop")
    assert batch(tmp_path).code == 0  # re-extracted, without --blocks this time
    assert index_by(tmp_path / "out", "summary")["cand/summary.json"]["blocks"] is False
    first = compare(tmp_path, "--budget", "GATE")
    assert first.code == 3, first  # the summary's own numbers fail the gate
    median = compare(tmp_path, "--stat", "median", "--budget", "GATE")
    one_error(
        median,
        1,
        "out/cand/blocks.json: does not belong to out/cand/summary.json",
        "made without --blocks",
        "--blocks",
    )
    # Without a budget too: the table never shows the old blocks as current.
    one_error(compare(tmp_path, "--stat", "max"), 1, "does not belong")
    # Extracted again with --blocks, it belongs again: the slower QKV fails the gate.
    assert batch(tmp_path, "--blocks").code == 0
    assert compare(tmp_path, "--stat", "median", "--budget", "GATE").code == 3


def test_a_blocks_json_changed_by_hand_does_not_belong(tmp_path):
    assert batch(tmp_path, "--blocks").code == 0
    blocks = tmp_path / "out" / "cand" / "blocks.json"
    blocks.write_bytes(blocks.read_bytes().replace(b'"blocks": [', b'"blocks":  ['))
    one_error(compare(tmp_path, "--stat", "mean"), 1, "has changed since", "out/index.jsonl")


def test_the_report_does_not_draw_a_stale_heat_map(tmp_path):
    assert batch(tmp_path, "--blocks").code == 0
    slower_qkv(tmp_path / "runs" / "cand" / "profile.pop")
    assert batch(tmp_path).code == 0
    target = tmp_path / "report.html"
    result = invoke_extract("report", "out", "-o", target, cwd=tmp_path, pva=False)
    assert result.code == 0, result
    page = parse(target.read_bytes())
    maps = page.find("section", id="heat-maps").find_all("details")
    assert [m.find("summary").text().split(":")[0] for m in maps] == ["base"]
    assert page.find(id="count-untrusted").text() == "1"
    rows = page.find("table", cls="untrusted").find("tbody").find_all("tr")
    assert [[td.text() for td in row.find_all("td")][:2] for row in rows] == [
        ["cand", "out/cand/blocks.json"]
    ]
    assert "made without --blocks" in rows[0].text()
    assert "warning: " in result.stderr and "cand/blocks.json" in result.stderr


# ---- a failed re-extraction --------------------------------------------------------------


def failed_again(tmp_path) -> None:
    assert batch(tmp_path).code == 0
    profile = tmp_path / "runs" / "cand" / "profile.pop"
    profile.write_bytes(profile.read_bytes()[:2048])  # truncated
    assert batch(tmp_path).code == 1
    assert index_by(tmp_path / "out", "summary")["cand/summary.json"]["status"] == "failed"
    assert (tmp_path / "out" / "cand" / "summary.json").exists()  # kept, as designed


def test_a_failed_re_extraction_is_told_and_fails_the_gate(tmp_path):
    failed_again(tmp_path)
    shown = compare(tmp_path)
    assert shown.code == 0 and shown.stdout
    warning = [
        line
        for line in shown.stderr.splitlines()
        if line.startswith(
            "extract: warning: out/cand/summary.json: the batch's last extraction of it failed"
        )
    ]
    assert len(warning) == 1 and "earlier extraction's numbers" in warning[0]
    one_error(
        compare(tmp_path, "--budget", "GATE"),
        1,
        "out/cand/summary.json",
        "last extraction of it failed",
        "the budget gate does not pass on it",
    )
    table = invoke_extract("table", "out", cwd=tmp_path, pva=False)
    assert table.code == 0 and table.stdout
    assert "out/cand/summary.json: the batch's last extraction of it failed" in table.stderr
    page = invoke_extract("report", "out", cwd=tmp_path, pva=False)
    assert page.code == 0
    assert b'id="count-untrusted">1<' in page.stdout
    assert b"earlier extraction&#39;s numbers" in page.stdout


def test_a_summary_changed_since_the_batch_is_told(tmp_path):
    assert batch(tmp_path).code == 0
    summary = tmp_path / "out" / "cand" / "summary.json"
    summary.write_bytes(summary.read_bytes() + b"\n")
    shown = compare(tmp_path)
    assert shown.code == 0
    assert "out/cand/summary.json: not the file the batch wrote" in shown.stderr
    one_error(compare(tmp_path, "--budget", "GATE"), 1, "not the file the batch wrote")


def test_a_current_batch_gives_no_warning(tmp_path):
    assert batch(tmp_path, "--blocks").code == 0
    for args in ([], ["--stat", "median"], ["--budget", "GATE"]):
        result = compare(tmp_path, *args)
        assert result.code == 0 and "warning" not in result.stderr, (args, result)
    # A summary given by its path is placed in its batch too.
    result = invoke_extract(
        "compare",
        "out/base/summary.json",
        "out/cand/summary.json",
        "--stat",
        "min",
        cwd=tmp_path,
        pva=False,
    )
    assert result.code == 0 and result.stderr == "", result


def test_a_summary_the_index_does_not_know_is_told(tmp_path):
    assert batch(tmp_path).code == 0
    copy = tmp_path / "out" / "copied"
    copy.mkdir()
    (copy / "summary.json").write_bytes((tmp_path / "out" / "base" / "summary.json").read_bytes())
    result = invoke_extract("compare", "out/base", "out/copied", cwd=tmp_path, pva=False)
    assert result.code == 0
    assert "out/copied/summary.json: not in its batch's index" in result.stderr


# ---- outside a batch: the two files must agree ---------------------------------------------


def test_a_single_run_blocks_json_must_agree_with_its_summary(tmp_path):
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "p")
    other = copy_case(EDGE / "multi-ipu", tmp_path / "q")
    for name, source in (("a", profile), ("b", other)):
        made = invoke_extract(
            source, "-o", tmp_path / name / "summary.json", "--blocks", "--no-pva", pva=False
        )
        assert made.code == 0, made
    args = ("compare", tmp_path / "a", tmp_path / "b", "--stat", "median")
    assert invoke_extract(*args, pva=False).code == 0
    slower_qkv(other)
    again = invoke_extract(other, "-o", tmp_path / "b" / "summary.json", "--no-pva", pva=False)
    assert again.code == 0
    one_error(
        invoke_extract(*args, pva=False),
        1,
        "b/blocks.json: does not belong",
        "first body's kernels",
    )


# ---- an output is never an input ---------------------------------------------------------


def test_outputs_never_replace_inputs(tmp_path):
    assert batch(tmp_path, "--blocks").code == 0
    out = tmp_path / "out"
    budget = tmp_path / "gate.toml"
    budget.write_text(GATE)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cases = [
        ("table", "out", "-o", "out/base/summary.json"),
        ("table", "out", "-o", "out/cand/blocks.json"),
        ("table", "out/base", "out/cand", "-o", "out/index.jsonl"),
        ("report", "out", "-o", "out/index.jsonl"),
        ("report", "out", "-o", "out/new/summary.json"),
        ("compare", "out/base", "out/cand", "--budget", budget, "--junit", "out/base/summary.json"),
        ("compare", "out/base", "out/cand", "--budget", budget, "--junit", budget),
        (
            "compare",
            "out/base",
            "out/cand",
            "--chart",
            "out/cand/summary.svg",
            "--budget",
            budget,
            "--junit",
            "out/cand/summary.svg",
        ),
    ]
    for case in cases:
        result = invoke_extract(*case, cwd=tmp_path, pva=False)
        one_error(result, 2)
        assert "write it elsewhere" in result.stderr or "name the same file" in result.stderr
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before, case
    assert budget.read_text() == GATE
    assert not (out / "new").exists()


def test_a_symbolic_link_to_an_input_is_the_input(tmp_path):
    assert batch(tmp_path).code == 0
    link = tmp_path / "table.csv"
    link.symlink_to(tmp_path / "out" / "base" / "summary.json")
    before = (tmp_path / "out" / "base" / "summary.json").read_bytes()
    one_error(
        invoke_extract("table", "out", "-o", link, cwd=tmp_path, pva=False),
        2,
        "would write over an input",
    )
    assert (tmp_path / "out" / "base" / "summary.json").read_bytes() == before


def test_every_target_is_checked_before_any_is_written(tmp_path):
    assert batch(tmp_path).code == 0
    (tmp_path / "somedir").mkdir()
    result = compare(tmp_path, "--chart", "c.svg", "--budget", "GATE", "--junit", "somedir/")
    one_error(result, 1, "somedir", "folder")
    assert not (tmp_path / "c.svg").exists()
    (tmp_path / "file").write_text("x")
    result = compare(tmp_path, "--chart", "c.svg", "--budget", "GATE", "--junit", "file/j.xml")
    one_error(result, 1, "is a file, not a folder")
    assert not (tmp_path / "c.svg").exists()
