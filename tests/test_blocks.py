"""`extract blocks` (docs/formats/blocks.md) through the real CLI, held against hand-checked
files and against tests/support/blocks_oracle.py, an independent reading of the spec.

tests/expected_blocks/<case>.json were worked out by hand, not by running extract: the
step rows of each fixture listed with

    sqlite3 fixtures/edge/<case>/profile.pop "SELECT s.id, s.type, coalesce(nullif(c.name,
    ''), nullif(p.name, ''), ''), i.cycles FROM steps s JOIN steps_by_ipu i ON
    i.step_id = s.id LEFT JOIN programs p ON p.id = s.program LEFT JOIN compute_sets c ON
    c.compute_set = s.compute_set ORDER BY s.id, i.rowid"

(and fixtures/edge/README.md), then bodies cut, cycles summed and statistics computed on
paper (means and population deviations as fractions: e.g. no-output-begins' QKV
260, 270, 260 gives mean 790/3 and stdev sqrt(200/9)):

- multi-ipu: anchors 4 and 9, input delivered at 2, output begins at 10; two rows per
  step: body 0 = steps 4..8, QKV 260 + 250, MLP up 410 + 430 (4 kernel rows); body 1 =
  step 9, QKV 270 + 280.
- no-output-begins: anchors 4, 9, 15; inputs at 2 and 13; only step 10 begins an output,
  so body 2 (run 2) runs to the end of the trace (end_step null).
- one-anchor: anchor 4, cut at the output (step 10): the head at step 12 is in no body.
- no-anchors, compile-only: the empty result.
"""

import csv
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from support.blocks_oracle import oracle_blocks, same
from support.cases import NO_OUTPUT_RULES, generator, sha256, two_ipus
from support.checks import index_by, one_error
from support.cli import invoke_extract

REPO = Path(__file__).resolve().parent.parent
EDGE = REPO / "fixtures" / "edge"
EXPECTED = Path(__file__).resolve().parent / "expected_blocks"
GOLDEN = Path("fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop")
EDGE_NAMES = sorted(p.name for p in EDGE.iterdir() if (p / "profile.pop").exists())
HAND_CHECKED = sorted(p.stem for p in EXPECTED.glob("*.json"))


def _blocks(*args, cwd=REPO, pva=False):
    """`extract blocks ARGS` (without pva: it must not need it); (result, parsed JSON)."""
    result = invoke_extract("blocks", *args, cwd=cwd, pva=pva)
    assert result.code == 0, result.stderr
    return result, json.loads(result.stdout)


def _assert_summary_bytes(data: bytes) -> None:
    """The bytes are json.dumps(..., indent=2) + a newline, ASCII only."""
    text = data.decode("ascii")
    assert text == json.dumps(json.loads(text), indent=2) + "\n"


# ---- hand-checked and oracle-checked committed fixtures ----------------------------


@pytest.mark.parametrize("case", HAND_CHECKED)
def test_hand_checked_blocks(case):
    profile = "fixtures/edge/{}/profile.pop".format(case)
    result, got = _blocks(profile)
    want = json.loads((EXPECTED / "{}.json".format(case)).read_text(encoding="ascii"))
    same(got, want)
    _assert_summary_bytes(result.stdout)
    # The independent oracle agrees with the hand (the oracle is checked here too).
    same(oracle_blocks(REPO / profile, profile), want)


def test_enough_fixtures_are_hand_checked():
    assert {"multi-ipu", "no-output-begins", "one-anchor"} <= set(HAND_CHECKED)


@pytest.mark.parametrize("case", EDGE_NAMES + ["vit-f8weight"])
def test_committed_fixtures_match_the_oracle(case):
    profile = str(GOLDEN) if case == "vit-f8weight" else "fixtures/edge/{}/profile.pop".format(case)
    result, got = _blocks(profile)
    same(got, oracle_blocks(REPO / profile, profile))
    _assert_summary_bytes(result.stdout)


def test_golden_first_body_is_the_summarys_kernels():
    """The spec: when the first two anchors lie in one inference, body 0's kernel rows
    are exactly the summary's kernels."""
    _, got = _blocks(str(GOLDEN))
    summary = json.loads((REPO / "fixtures/vit-f8weight/expected.json").read_text())
    by_stage = {}
    for kernel in summary["kernels"]:
        by_stage[kernel["stage"]] = by_stage.get(kernel["stage"], 0) + kernel["cycles"]
    first = got["blocks"][0]
    assert first["kernels"] == len(summary["kernels"])
    assert first["cycles"] == by_stage
    assert len(got["blocks"]) == summary["qkv_executions"] == 54
    assert [b["run"] for b in got["blocks"]] == [1] * 27 + [2] * 27
    assert [b["block"] for b in got["blocks"]] == list(range(27)) * 2


# ---- the generator's kinds ---------------------------------------------------------


def _kind(name):
    generate = generator()
    if name == "several runs":
        return generate.vit_spec(blocks=4, runs=3, tiles=8, seed=3, detailed_blocks=(0, 3)), None
    if name == "multi-ipu":
        return two_ipus(generate.vit_spec(blocks=3, runs=2, tiles=8, seed=4)), None
    if name == "one anchor":
        return generate.vit_spec(blocks=1, runs=1, tiles=8, seed=5), None
    if name == "no output step":  # and rules with a repeated label and another fallback
        return generate.vit_spec(blocks=3, runs=2, tiles=8, seed=6), NO_OUTPUT_RULES
    raise AssertionError(name)


KINDS = ["several runs", "multi-ipu", "one anchor", "no output step"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    generate = generator()
    cases = {}
    for kind in KINDS:
        spec, rules = _kind(kind)
        folder = tmp_path_factory.mktemp(kind.replace(" ", "-"))
        profile = generate.write_case(spec, folder)
        rules_path = None
        if rules is not None:
            rules_path = folder / "rules.toml"
            rules_path.write_text(rules, encoding="utf-8")
        cases[kind] = (profile, rules_path)
    return cases


@pytest.mark.parametrize("kind", KINDS)
def test_generated_kinds_match_the_oracle(generated, kind, tmp_path):
    profile, rules = generated[kind]
    out = tmp_path / "out" / "blocks.json"
    args = [str(profile), "-o", str(out)] + (["--rules", str(rules)] if rules else [])
    before = sha256(profile)
    result = invoke_extract("blocks", *args, pva=False)
    assert result.code == 0, result.stderr
    assert result.stdout == b"" and result.stderr == ""
    data = out.read_bytes()
    _assert_summary_bytes(data)
    want = oracle_blocks(profile, str(profile), rules)
    same(json.loads(data), want)
    assert sha256(profile) == before  # the input is never written
    # What each kind is about, so the comparison above is not vacuous.
    runs = {b["run"] for b in want["blocks"]}
    if kind == "several runs":
        assert runs == {1, 2, 3} and len(want["blocks"]) == 12
    elif kind == "multi-ipu":
        assert all(b["kernels"] % 2 == 0 for b in want["blocks"]) and len(want["blocks"]) == 6
    elif kind == "one anchor":
        assert len(want["blocks"]) == 1 and want["blocks"][0]["end_step"] is not None
    else:
        assert want["stages"] == ["attention", 'mlp "\u2191"', "rest"]
        assert [b["end_step"] is None for b in want["blocks"]] == [False] * 5 + [True]
        # No output step: the last body of run 1 runs into run 2 up to its first anchor.
        assert want["blocks"][2]["end_step"] == want["blocks"][3]["first_step"]


# ---- formats -----------------------------------------------------------------------


def test_csv_is_one_line_per_body():
    profile = "fixtures/edge/no-output-begins/profile.pop"
    result = invoke_extract("blocks", profile, "--format", "csv", cwd=REPO, pva=False)
    assert result.code == 0, result.stderr
    want = oracle_blocks(REPO / profile, profile)
    text = result.stdout.decode("utf-8")
    assert not text.startswith("\ufeff") and text.endswith("\r\n")
    lines = list(csv.reader(io.StringIO(text, newline="")))
    assert lines[0] == ["run", "block", "first_step", "end_step", "kernels"] + want["stages"] + [
        "total"
    ]
    assert len(lines) == 1 + 3
    # Hand-checked (see the module's docstring): bodies 4..8, 9, 15..end.
    qkv, up = want["stages"].index("fused QKV projection"), want["stages"].index("MLP up")
    for line, (first, end, kernels, q, u, total) in zip(
        lines[1:],
        [
            ("4", "9", "2", "260", "410", "670"),
            ("9", "10", "1", "270", "", "270"),
            ("15", "", "1", "260", "", "260"),
        ],
    ):
        assert line[2:5] == [first, end, kernels]
        assert line[5 + qkv] == q and line[5 + up] == u and line[-1] == total
        assert [cell for i, cell in enumerate(line[5:-1]) if i not in (qkv, up)] == [""] * (
            len(want["stages"]) - 2
        )
    assert "\r\n".join(",".join(line) for line in lines) + "\r\n" == text


def test_markdown_table_of_the_statistics():
    result = invoke_extract(
        "blocks", "fixtures/edge/multi-ipu/profile.pop", "-f", "markdown", cwd=REPO, pva=False
    )
    assert result.code == 0, result.stderr
    lines = result.stdout.decode("utf-8").splitlines()
    # Hand-checked: see the module's docstring (multi-ipu). Two IPUs: a note follows
    # (tests/test_several_ipus.py).
    assert lines[5:] == ["", lines[6]] and lines[6].startswith("Several IPUs (2): ")
    assert lines[2:5] == [
        (
            "| fused QKV projection | 2 | 510 | 530.0 | 530.0 | 550 | 20.0 | run 1, block 0 "
            "| run 1, block 1 |"
        ),
        "| MLP up | 1 | 840 | 840 | 840.0 | 840 | 0.0 | run 1, block 0 | run 1, block 0 |",
        (
            "| **total** | 2 | 550 | 950.0 | 950.0 | 1350 | 400.0 | run 1, block 1 "
            "| run 1, block 0 |"
        ),
    ]
    assert lines[0].startswith(
        "| stage (kernel cycles) | blocks | min | median | mean | max | stdev"
    )
    assert lines[1].count("|") == lines[0].count("|")


# ---- warnings and errors -----------------------------------------------------------


@pytest.mark.parametrize("case", ["no-anchors", "compile-only"])
def test_warnings_are_the_summarys(case):
    profile = "fixtures/edge/{}/profile.pop".format(case)
    blocks = invoke_extract("blocks", profile, cwd=REPO, pva=False)
    summary = invoke_extract(profile, "--no-pva", cwd=REPO, pva=False)
    assert blocks.code == 0 and summary.code == 0
    warnings = blocks.stderr.splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("extract: warning: " + profile)
    assert warnings[0] in summary.stderr.splitlines()
    quiet = invoke_extract("blocks", profile, "-q", cwd=REPO, pva=False)
    assert quiet.code == 0 and quiet.stderr == ""


def _drop(source: Path, target: Path, table: str) -> Path:
    shutil.copyfile(str(source), str(target))
    db = sqlite3.connect(str(target))
    db.execute("DROP TABLE {}".format(table))
    db.commit()
    db.close()
    return target


def test_needs_only_the_step_tables(tmp_path):
    source = EDGE / "multi-ipu" / "profile.pop"
    profile = _drop(source, tmp_path / "profile.pop", "vars_info")
    db = sqlite3.connect(str(profile))
    db.execute("DROP TABLE memory_by_tile")
    db.execute("DROP TABLE var_categories")
    db.commit()
    db.close()
    _, got = _blocks(str(profile))
    want = json.loads((EXPECTED / "multi-ipu.json").read_text())
    want["profile"] = str(profile)
    same(got, want)


@pytest.mark.parametrize("table", ["steps", "steps_by_ipu", "programs", "compute_sets"])
def test_a_missing_step_table_is_one_line(tmp_path, table):
    profile = _drop(EDGE / "multi-ipu" / "profile.pop", tmp_path / "profile.pop", table)
    result = invoke_extract("blocks", profile, pva=False)
    assert result.code == 1 and result.stdout == b""
    assert (
        result.stderr
        == "extract: error: {}: no table {!r}: not a PopVision profile, "
        "or an unknown version\n".format(profile, table)
    )


def test_unreadable_and_usage_errors(tmp_path):
    missing = tmp_path / "nope.pop"
    result = invoke_extract("blocks", missing, pva=False)
    assert result.code == 1
    assert result.stderr == "extract: error: {}: no such file\n".format(missing)
    junk = tmp_path / "junk.pop"
    junk.write_bytes(b"x" * 200)
    result = invoke_extract("blocks", junk, pva=False)
    assert result.code == 1 and result.stderr.count("\n") == 1
    assert "not an SQLite database" in result.stderr
    result = invoke_extract("blocks", tmp_path, pva=False)
    assert (result.code, result.stderr) == (
        1,
        "extract: error: {}: is a directory, not a profile (for every profile below a "
        "folder: extract DIR -o OUTDIR --blocks)\n".format(tmp_path),
    )
    profile = tmp_path / "profile.pop"
    shutil.copyfile(str(EDGE / "multi-ipu" / "profile.pop"), str(profile))
    before = sha256(profile)
    result = invoke_extract("blocks", profile, "-o", profile, pva=False)
    assert result.code == 2 and "-o would write over an input of this command" in result.stderr
    bad_rules = tmp_path / "rules.toml"
    bad_rules.write_text("fallback = 3\n")
    result = invoke_extract("blocks", profile, "--rules", bad_rules, pva=False)
    assert result.code == 2 and result.stderr.count("\n") == 1
    result = invoke_extract("blocks", profile, "--format", "yaml", pva=False)
    assert result.code == 2
    assert sha256(profile) == before


def test_real_cycles_are_refused_in_one_line(tmp_path):
    profile = tmp_path / "profile.pop"
    shutil.copyfile(str(EDGE / "multi-ipu" / "profile.pop"), str(profile))
    db = sqlite3.connect(str(profile))
    db.execute("UPDATE steps_by_ipu SET cycles = 2.5 WHERE step_id = 9")
    db.commit()
    db.close()
    result = invoke_extract("blocks", profile, pva=False)
    assert result.code == 1 and result.stdout == b""
    assert result.stderr == (
        "extract: error: {}: step 9: steps_by_ipu.cycles is the real "
        "number 2.5, not a whole number\n".format(profile)
    )


# ---- a batch with --blocks ---------------------------------------------------------


def test_batch_blocks_beside_each_summary_from_the_same_pass(tmp_path):
    runs = tmp_path / "runs"
    for case in ("multi-ipu", "no-output-begins", "compile-only"):
        (runs / case).mkdir(parents=True)
        shutil.copyfile(str(EDGE / case / "profile.pop"), str(runs / case / "profile.pop"))
    plain, with_blocks = tmp_path / "plain", tmp_path / "with"
    for outdir, extra in ((plain, []), (with_blocks, ["--blocks"])):
        result = invoke_extract(runs, "-o", outdir, "--no-pva", "-j", "1", *extra, pva=False)
        assert result.code == 0, result.stderr
    index = index_by(with_blocks, "summary")
    for case in ("multi-ipu", "no-output-begins", "compile-only"):
        # The summary's bytes do not change.
        assert (with_blocks / case / "summary.json").read_bytes() == (
            plain / case / "summary.json"
        ).read_bytes()
        assert not (plain / case / "blocks.json").exists()
        data = (with_blocks / case / "blocks.json").read_bytes()
        label = str(runs / case / "profile.pop")
        same(json.loads(data), oracle_blocks(runs / case / "profile.pop", label))
        _assert_summary_bytes(data)
        entry = index["{}/summary.json".format(case)]
        assert entry["blocks"] is True and entry["blocks_sha256"] == sha256(
            with_blocks / case / "blocks.json"
        )
    # Hand-checked medians (see the module's docstring).
    assert index["multi-ipu/summary.json"]["median_stage_cycles"] == {
        "fused QKV projection": 530.0,
        "MLP up": 840,
    }
    assert index["no-output-begins/summary.json"]["median_stage_cycles"] == {
        "fused QKV projection": 260,
        "MLP up": 410,
    }
    assert index["compile-only/summary.json"]["median_stage_cycles"] == {}
    assert all(
        entry["blocks"] is False and "median_stage_cycles" not in entry
        for entry in index_by(plain, "summary").values()
    )

    def statuses(outdir, *extra):
        result = invoke_extract(runs, "-o", outdir, "--no-pva", "-j", "1", *extra, pva=False)
        assert result.code == 0, result.stderr
        return {key: entry["status"] for key, entry in index_by(outdir, "summary").items()}

    everything = {
        "multi-ipu/summary.json",
        "no-output-begins/summary.json",
        "compile-only/summary.json",
    }
    # Switching --blocks on re-extracts; the same choice again is up to date.
    assert set(statuses(plain, "--blocks").values()) == {"ok"}
    assert (plain / "multi-ipu" / "blocks.json").exists()
    assert set(statuses(plain, "--blocks").values()) == {"up to date"}
    # blocks.json gone or changed: that profile again.
    (plain / "multi-ipu" / "blocks.json").unlink()
    (plain / "compile-only" / "blocks.json").write_bytes(b"{}\n")
    got = statuses(plain, "--blocks")
    assert {k for k, v in got.items() if v == "ok"} == {
        "multi-ipu/summary.json",
        "compile-only/summary.json",
    }
    assert set(got) == everything


def test_summarize_with_blocks_reads_the_trace_once(monkeypatch):
    """The batch's blocks come from the summary's own pass: one read of the step rows,
    giving the summary unchanged and the same blocks as `extract blocks`."""
    from extractor.core.blocks import extract_blocks
    from extractor.core.profile import Profile
    from extractor.core.rules import load_rules
    from extractor.core.summary import summarize

    profile = REPO / "fixtures" / "edge" / "no-output-begins" / "profile.pop"
    rules = load_rules()
    reads = []
    original = Profile.step_row_batches

    def counted(self, *args, **kwargs):
        reads.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Profile, "step_row_batches", counted)
    both = summarize(profile, rules, use_pva=False, blocks=True)
    assert len(reads) == 1
    assert both.summary == summarize(profile, rules, use_pva=False).summary
    assert both.blocks.result() == extract_blocks(profile, rules, keep=True).bodies.result()
    want = json.loads((EXPECTED / "no-output-begins.json").read_text())
    want["profile"] = str(profile)
    same(both.blocks.result(), want)


def test_single_profile_blocks_beside_the_summary(tmp_path):
    profile = "fixtures/edge/multi-ipu/profile.pop"
    out = tmp_path / "out" / "summary.json"
    result = invoke_extract(
        profile, "-o", out, "--blocks", "--csv", "--no-pva", cwd=REPO, pva=False
    )
    assert result.code == 0, result.stderr
    plain = invoke_extract(profile, "--no-pva", cwd=REPO, pva=False)
    assert plain.code == 0 and out.read_bytes() == plain.stdout
    assert (out.parent / "steps.csv").exists()
    want = json.loads((EXPECTED / "multi-ipu.json").read_text())
    same(json.loads((out.parent / "blocks.json").read_bytes()), want)
    result = invoke_extract(profile, "--blocks", "--no-pva", cwd=REPO, pva=False)
    assert result.code == 2 and "--blocks" in result.stderr and result.stdout == b""


# ---- compare --stat ----------------------------------------------------------------
# two_recordings (tests/conftest.py): a of multi-ipu, b of no-output-begins.


def test_compare_stat_median_replaces_only_the_stage_rows(two_recordings):
    a, b = two_recordings
    first = invoke_extract("compare", a, b, "-f", "json")
    median = invoke_extract("compare", a, b, "-f", "json", "--stat", "median")
    assert first.code == 0 and median.code == 0, median.stderr
    first_rows, median_rows = (json.loads(r.stdout)["rows"] for r in (first, median))
    stage = [r for r in median_rows if r["section"].startswith("kernel stages")]
    # Hand-checked medians (see the module's docstring): QKV 510, 550 -> 530.0 and
    # 260, 270, 260 -> 260; MLP up 840 and 410; totals 1350, 550 -> 950.0 and
    # 670, 270, 260 -> 270.
    assert [(r["metric"], r["unit"], r["values"]) for r in stage] == [
        ("fused QKV projection", "kernel cycles, median over blocks", [530.0, 260]),
        ("MLP up", "kernel cycles, median over blocks", [840, 410]),
        ("all stages", "kernel cycles, median over blocks", [950.0, 270]),
    ]
    rest = [r for r in median_rows if not r["section"].startswith("kernel stages")]
    assert rest == [r for r in first_rows if not r["section"].startswith("kernel stages")]
    assert [r["values"] for r in first_rows[:3]] == [[510, 260], [840, 410], [1350, 670]]
    markdown = invoke_extract("compare", a, b, "--stat", "max")
    assert markdown.code == 0
    assert (
        "| stage: fused QKV projection | kernel cycles, max over blocks | 550 | 270 (-50.9%) |"
        in markdown.stdout.decode().splitlines()
    )


def test_compare_stat_first_is_todays_table(two_recordings):
    a, b = two_recordings
    today = invoke_extract("compare", a, b)
    (b / "blocks.json").unlink()  # not needed for `first`
    first = invoke_extract("compare", a, b, "--stat", "first")
    assert today.code == 0 and first.code == 0 and first.stdout == today.stdout
    assert b"over blocks" not in today.stdout


def test_compare_stat_without_blocks_is_a_usage_error(two_recordings):
    a, b = two_recordings
    (b / "blocks.json").unlink()
    result = invoke_extract("compare", a, b, "--stat", "mean")
    assert result.code == 2 and result.stdout == b""
    assert result.stderr.count("\n") == 1 and "--blocks" in result.stderr
    assert str(b / "summary.json") in result.stderr
    (b / "blocks.json").write_text("[1, 2]\n")
    result = invoke_extract("compare", a, b, "--stat", "mean")
    assert result.code == 1 and result.stdout == b""
    # The report's reader and compare's say the same of the same file (one reader).
    assert (
        result.stderr
        == "extract: error: {}: not a blocks file: a JSON list where it is an object\n".format(
            b / "blocks.json"
        )
    )
    (b / "blocks.json").write_text('{"stats": {"qkv": {"mean": "slow"}}, "total": null}\n')
    result = invoke_extract("compare", a, b, "--stat", "mean")
    assert result.code == 1 and result.stdout == b""
    assert (
        result.stderr
        == "extract: error: {}: not a blocks file: 'mean' of 'qkv' is not a number\n".format(
            b / "blocks.json"
        )
    )


# ---- random traces -----------------------------------------------------------------


def test_random_traces_agree_with_the_oracle():
    """Traces of every shape (test_pass's strategy: markers anywhere, several IPUs, rows
    stored out of step order so the pass falls back to sorted rows) against the oracle,
    through extract blocks' own pass and through the summary's."""
    from tempfile import TemporaryDirectory

    from hypothesis import given, settings
    from test_pass import _write, trace

    from extractor.core.summary import summarize

    @settings(max_examples=40, deadline=None)
    @given(trace)
    def check(case):
        steps, rng = case
        with TemporaryDirectory() as folder:
            _write(steps, rng, folder)
            profile = Path(folder) / "profile.pop"
            result = invoke_extract("blocks", profile, pva=False)
            assert result.code == 0, result.stderr
            want = oracle_blocks(profile, str(profile))
            same(json.loads(result.stdout), want)
            # The same bodies from the summary's own pass (what a batch's --blocks uses).
            riding = summarize(profile, use_pva=False, blocks=True).blocks.result()
            same(riding, want)

    check()


def test_cycles_beyond_32_bits_and_sums_beyond_64(tmp_path):
    """Sums that leave 4-byte storage (the statistics' arrays widen) are still exact: IPU
    rows of 2**61 cycles add up to 2**62 in one body. A sum beyond 64-bit integers
    (rows of 2**62: 2**63) is refused as the summary refuses one, since no reader of
    blocks.json (extract's own included) takes it: it used to be written."""
    profile = tmp_path / "profile.pop"
    shutil.copyfile(str(EDGE / "multi-ipu" / "profile.pop"), str(profile))

    def set_cycles(qkv):
        db = sqlite3.connect(str(profile))
        db.execute("UPDATE steps_by_ipu SET cycles = ? WHERE step_id = 4", (qkv,))
        db.execute("UPDATE steps_by_ipu SET cycles = ? WHERE step_id = 9", (2**33,))
        db.commit()
        db.close()

    set_cycles(2**61)
    _result, got = _blocks(str(profile))
    want = oracle_blocks(profile, str(profile))
    same(got, want)
    assert got["blocks"][0]["cycles"]["fused QKV projection"] == 2**62
    assert got["stats"]["fused QKV projection"]["max"] == 2**62
    assert got["stats"]["fused QKV projection"]["min"] == 2**34
    set_cycles(2**62)
    out = tmp_path / "blocks.json"
    for args in (["blocks", profile, "-o", out], ["blocks", profile, "-f", "csv"]):
        line = one_error(invoke_extract(*args, pva=False), 1, str(profile))
        assert line.endswith(
            "a sum overflows 64-bit integers: values too large for a real profile (damaged?)"
        ), line
    assert not out.exists()


def test_compare_stat_with_budget_checks_the_statistic(two_recordings, tmp_path):
    """With --stat, stage:<label> and stages:total are that statistic over the blocks,
    as the table shows them, and the budget holds them (--budget holds the stages as
    --stat shows them). Medians by hand (above): QKV 530.0 (a) and 260 (b), totals 950.0
    and 270; first-body values 510 and 260, 1350 and 670."""
    a, b = two_recordings
    budget = tmp_path / "budget.toml"
    budget.write_text(
        '[budgets]\n"stage:fused QKV projection" = "+1%"\n"stages:total" = "<= 1000"\n'
    )

    def checks(*args):
        result = invoke_extract("compare", b, a, "-f", "json", "--budget", budget, *args)
        return result, [
            (c["recording"], c["metric"], c["baseline"], c["value"], c["status"])
            for c in json.loads(result.stdout)["budgets"]
        ]

    result, median = checks("--stat", "median")
    assert result.code == 3, result
    assert median == [
        ("b", "stages:total", 270, 270, "ok"),
        ("a", "stage:fused QKV projection", 260, 530.0, "fail"),
        ("a", "stages:total", 270, 950.0, "ok"),
    ]
    # The budget's line, then (both profiles being there) the diff that explains the
    # failed stage: a median is no one block's, so the first bodies.
    assert result.stderr.splitlines()[-2] == "budget: 1 of 3 checks failed"
    assert result.stderr.splitlines()[-1].startswith(
        "why stage:fused QKV projection failed in a: extract diff "
    ), result.stderr
    assert "--block" not in result.stderr.splitlines()[-1]
    result, first = checks()
    assert result.code == 3, result
    assert first == [
        ("b", "stages:total", 670, 670, "ok"),
        ("a", "stage:fused QKV projection", 260, 510, "fail"),
        ("a", "stages:total", 670, 1350, "fail"),
    ]
    # The table marks the statistic's row.
    marked = invoke_extract("compare", b, a, "--stat", "median", "--budget", budget)
    row = [
        line
        for line in marked.stdout.decode().splitlines()
        if line.startswith("| stage: fused QKV projection |")
    ]
    assert row and "median over blocks" in row[0] and "\u274c" in row[0], marked.stdout


def test_blocks_leave_the_device_spans_as_they_are(tmp_path):
    """`--blocks` adds blocks.json and changes no byte of the summary, also where an
    inference's last device row is a plain kernel past the first body (once the walk
    adds plain kernels to the open block itself, their rows still widen the span)."""
    folder = tmp_path / "vit"
    shutil.copytree(str(REPO / "fixtures" / "vit-f8weight"), str(folder))
    profile = folder / GOLDEN.relative_to("fixtures/vit-f8weight")
    # Read off the fixture by hand (sqlite3): inference 1's device rows end with steps
    # 546 (OnTileExecute, /visual/trunk/norm/Add_1: a plain kernel after the last block,
    # ending at 613,259,501), 547 (OnTileExecute) and 548 (DoExchange, ending at
    # 613,319,575, the latest), then 549 (Sync) and 550 (StreamCopyBegin, output
    # begins). Step 546 made to end 5,000 cycles after 548 makes it the latest.
    db = sqlite3.connect(str(profile))
    with db:
        db.execute(
            "UPDATE steps_by_ipu SET active_cycles_to_max = active_cycles_to_max + ? "
            "WHERE step_id = 546",
            (613319575 - 613259501 + 5000,),
        )
    db.close()
    want = json.loads((folder / "expected.json").read_bytes())["device_spans"]
    want[0] += 5000
    out = tmp_path / "out" / "summary.json"
    result = invoke_extract(profile, "-o", out, "--blocks", "--no-pva", pva=False)
    assert result.code == 0, result.stderr
    plain = invoke_extract(profile, "--no-pva", pva=False)
    assert plain.code == 0, plain.stderr
    assert json.loads(plain.stdout)["device_spans"] == want
    assert out.read_bytes() == plain.stdout
