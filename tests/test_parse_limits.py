"""Hostile input: inputs that used to end in "unexpected failure", a traceback-free but
wrong exit code, non-finite numbers written as JSON, or minutes of CPU; each must get one
clear line (or, where the input is readable, an answer).

Every test runs the real CLI, except the renderers' guard, which no CLI input reaches
once the inputs are refused (that is its point)."""

import json
import math
import re
import sqlite3
from pathlib import Path

import pytest
from test_bad_input import check_error_line

from support import badinput as bad
from support.cases import sha256
from support.cli import invoke_extract
from support.paths import GOLDEN, REPO

SUMMARY_A = GOLDEN / "expected.json"  # the golden recording (the reference summary)
RULES = REPO / "stage_rules.toml"


def no_surprise(result) -> None:
    assert "Traceback" not in result.stderr, result
    assert "unexpected failure" not in result.stderr, result


# ---- rules files (and a byte-order mark) --------------------------------


def _rules_with_pattern(pattern: str) -> str:
    """The installed rules with a first rule of `pattern` (a TOML literal string)."""
    text = RULES.read_text(encoding="utf-8")
    first = text.index("[[rules]]")
    return (
        text[:first]
        + "[[rules]]\npattern = '{}'\nlabel = 'deep'\n\n".format(pattern)
        + text[first:]
    )


@pytest.mark.parametrize(
    "name, text",
    [
        ("arrays", "fallback = 'x'\nv = " + "[" * 5000 + "]" * 5000 + "\n"),
        ("inline tables", "fallback = 'x'\nv = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n"),
    ],
)
def test_rules_file_nested_too_deep_is_a_usage_error(tmp_path, name, text):
    rules = tmp_path / "deep.toml"
    rules.write_text(text, encoding="utf-8")
    profile = bad.write_base(tmp_path / "case")
    result = invoke_extract(
        "--rules", rules, "--no-pva", profile, "-o", tmp_path / "s.json", pva=False
    )
    no_surprise(result)
    assert result.code == 2, result
    check_error_line(result.stderr, str(rules), r"^not valid TOML: .*nested too deeply")
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize(
    "pattern", ["(" * 2000 + "a" + ")" * 2000, "(?:" * 2000 + "a" + ")" * 2000]
)
def test_rules_regex_nested_too_deep_is_a_usage_error(tmp_path, pattern):
    rules = tmp_path / "deep.toml"
    rules.write_text(_rules_with_pattern(pattern), encoding="utf-8")
    profile = bad.write_base(tmp_path / "case")
    for command in (["--no-pva", profile, "-o", tmp_path / "s.json"], ["stages", profile]):
        result = invoke_extract(*(command + ["--rules", rules]), pva=False)
        no_surprise(result)
        assert result.code == 2, result
        check_error_line(
            result.stderr,
            str(rules),
            r"^rule 1: pattern is not a valid regular expression .*nested too "
            r"deeply",
        )
    assert not (tmp_path / "s.json").exists()


def stages_refuses_rules(tmp_path, rules: Path, problem: str) -> None:
    """`extract stages` with these rules is a usage error whose one line names them."""
    result = invoke_extract(
        "stages", bad.write_base(tmp_path / "case"), "--rules", rules, pva=False
    )
    no_surprise(result)
    assert result.code == 2, result
    check_error_line(result.stderr, str(rules), problem)


def test_rules_regex_repeat_too_large_is_a_usage_error(tmp_path):
    rules = tmp_path / "huge.toml"
    rules.write_text(_rules_with_pattern("a{4294967296}"), encoding="utf-8")
    stages_refuses_rules(
        tmp_path,
        rules,
        r"^rule 1: pattern is not a valid regular "
        r"expression \('a\{4294967296\}': the repetition number is too "
        r"large\)$",
    )


def test_rules_selector_nested_too_deep_is_a_usage_error(tmp_path):
    text = RULES.read_text(encoding="utf-8")
    start = text.index("anchor = ", text.index("[selectors]"))
    end = text.index("\n", start)
    rules = tmp_path / "deep.toml"
    rules.write_text(
        text[:start] + "anchor = '{}'".format("(" * 3000 + ")" * 3000) + text[end:],
        encoding="utf-8",
    )
    stages_refuses_rules(
        tmp_path,
        rules,
        r"^selector 'anchor' is not a valid regular "
        r"expression .*nested too deeply",
    )


def test_rules_file_with_a_byte_order_mark_is_read(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    marked = tmp_path / "marked.toml"
    marked.write_bytes(b"\xef\xbb\xbf" + RULES.read_bytes())
    plain = invoke_extract("--no-pva", profile, "-o", "-", "--rules", RULES, pva=False)
    assert plain.code == 0, plain
    result = invoke_extract("--no-pva", profile, "-o", "-", "--rules", marked, pva=False)
    assert result.code == 0, result
    assert result.stdout == plain.stdout
    assert result.stderr == plain.stderr
    # A mark is not a licence for a second one, nor for one inside the text.
    twice = tmp_path / "twice.toml"
    twice.write_bytes(b"\xef\xbb\xbf" * 2 + RULES.read_bytes())
    result = invoke_extract("--no-pva", profile, "-o", "-", "--rules", twice, pva=False)
    assert result.code == 2, result
    check_error_line(result.stderr, str(twice), r"^not valid TOML: ")


# ---- --shard slurm -----------------------------------------------------------


def _slurm(tmp_path, **variables):
    (tmp_path / "runs" / "a").mkdir(parents=True, exist_ok=True)
    bad.write_base(tmp_path / "runs" / "a")
    env = {
        "SLURM_ARRAY_TASK_ID": "4",
        "SLURM_ARRAY_TASK_COUNT": "3",
        "SLURM_ARRAY_TASK_MIN": "4",
        "SLURM_ARRAY_TASK_STEP": "1",
    }
    env.update(variables)
    return invoke_extract(
        "runs", "-o", "out", "--shard", "slurm", "--no-pva", cwd=tmp_path, env=env, pva=False
    )


@pytest.mark.parametrize(
    "variables, pattern",
    [
        ({"SLURM_ARRAY_TASK_STEP": "0"}, r"^SLURM_ARRAY_TASK_STEP=0: .*1 or more"),
        ({"SLURM_ARRAY_TASK_STEP": "-2"}, r"^SLURM_ARRAY_TASK_STEP=-2: .*1 or more"),
        ({"SLURM_ARRAY_TASK_STEP": "two"}, r"^SLURM_ARRAY_TASK_STEP='two': not a whole number"),
        ({"SLURM_ARRAY_TASK_ID": "4.0"}, r"^SLURM_ARRAY_TASK_ID='4.0': not a whole number"),
        ({"SLURM_ARRAY_TASK_ID": "\u0664"}, r"^SLURM_ARRAY_TASK_ID='.': not a whole number"),
        ({"SLURM_ARRAY_TASK_ID": "1_0"}, r"^SLURM_ARRAY_TASK_ID='1_0': not a whole number"),
        (
            {"SLURM_ARRAY_TASK_ID": "9" * 5000},
            (
                r"^SLURM_ARRAY_TASK_ID='9+\.\.\.': not a whole "
                r"number"
            ),
        ),
        ({"SLURM_ARRAY_TASK_COUNT": "0"}, r"^SLURM_ARRAY_TASK_COUNT=0: .*1 or more"),
        ({"SLURM_ARRAY_TASK_ID": "3"}, r"^SLURM array task 3 is below SLURM_ARRAY_TASK_MIN=4"),
        ({"SLURM_ARRAY_TASK_ID": "7"}, r"^SLURM array task 7 is outside its 3 tasks"),
        ({"SLURM_ARRAY_TASK_MIN": "-1"}, r"^SLURM_ARRAY_TASK_MIN=-1: .*0 or more"),
    ],
)
def test_slurm_variables_that_make_no_shard_are_a_usage_error(tmp_path, variables, pattern):
    result = _slurm(tmp_path, **variables)
    no_surprise(result)
    assert result.code == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result
    assert lines[0].startswith("extract: error: "), result
    assert re.search(pattern, lines[0][len("extract: error: ") :]), lines[0]
    assert not (tmp_path / "out").exists()


def test_slurm_step_is_still_honoured(tmp_path):
    # --array=4-8:2: tasks 4, 6, 8 are shards 1, 2, 3.
    for task, shard in (("4", 1), ("6", 2), ("8", 3)):
        result = _slurm(tmp_path, SLURM_ARRAY_TASK_ID=task, SLURM_ARRAY_TASK_STEP="2")
        assert result.code == 0, result
        assert (tmp_path / "out" / "index-shard-{}-of-3.jsonl".format(shard)).exists()
    # An empty step (SLURM leaves it so for a list of tasks) is a step of 1.
    result = _slurm(tmp_path, SLURM_ARRAY_TASK_ID="5", SLURM_ARRAY_TASK_STEP="")
    assert result.code == 0, result


# ---- compare: summaries that are not -----------------------------------


def _summary_with(tmp_path, change, name="b") -> Path:
    data = json.loads(SUMMARY_A.read_text())
    change(data)
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "summary.json"
    text = json.dumps(data, indent=2)
    path.write_text(text + "\n", encoding="ascii")
    return path


def _with_text(tmp_path, old: str, new: str, name="b") -> Path:
    """The golden summary with the first `old` replaced by `new` in its text."""
    text = SUMMARY_A.read_text()
    assert old in text
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "summary.json"
    path.write_text(text.replace(old, new, 1), encoding="ascii")
    return path


def compare(*args):
    return invoke_extract("compare", *args, pva=False)


def _first_kernel_cycles() -> str:
    return '"cycles": {}'.format(json.loads(SUMMARY_A.read_text())["kernels"][0]["cycles"])


@pytest.mark.parametrize("fmt", ["markdown", "csv", "json"])
def test_compare_refuses_a_whole_number_no_summary_can_hold(tmp_path, fmt):
    path = _with_text(tmp_path, _first_kernel_cycles(), '"cycles": 1' + "0" * 4000)
    result = compare(SUMMARY_A, path, "--format", fmt)
    no_surprise(result)
    assert result.code == 1, result
    assert result.stdout == b""
    check_error_line(result.stderr, str(path), r"^not a summary: .*number .*digits")


def test_compare_refuses_huge_whole_numbers_anywhere(tmp_path):
    # An unused key is read too: JSON is parsed whole.
    path = _summary_with(tmp_path, lambda s: s.update(extra=10**30))
    result = compare(SUMMARY_A, path, "--format", "json")
    no_surprise(result)
    assert result.code == 1, result
    check_error_line(result.stderr, str(path), r"^not a summary: .*number")


def test_compare_reads_every_whole_number_extract_writes(tmp_path):
    # A device span is end - start of two 64-bit sums: up to 2**64 - 1; a start is
    # down to -2**63.
    def change(summary):
        summary["device_spans"] = [2**64 - 1, -(2**63)]

    path = _summary_with(tmp_path, change)
    result = compare(SUMMARY_A, path, "--format", "json")
    assert result.code == 0, result
    rows = json.loads(result.stdout)["rows"]
    spans = [row["values"][1] for row in rows if row["section"] == "device spans"]
    assert spans == [2**64 - 1, -(2**63)]


@pytest.mark.parametrize(
    "document",
    [
        "[" * 100000 + "]" * 100000,
        '{"kernels": ' + '{"a": ' * 100000 + "1" + "}" * 100000 + "}",
    ],
    ids=["arrays", "objects"],
)  # short ids: pytest puts the id in PYTEST_CURRENT_TEST,
# which every subprocess inherits, and 200 kB there is more than one variable may hold
def test_compare_refuses_deeply_nested_json(tmp_path, document):
    folder = tmp_path / "b"
    folder.mkdir()
    path = folder / "summary.json"
    path.write_text(document)
    result = compare(SUMMARY_A, path)
    no_surprise(result)
    assert result.code == 1, result
    check_error_line(result.stderr, str(path), r"^not a summary: .*nested too deeply")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"])
@pytest.mark.parametrize("where", ["exchange mean", "allocated avg", "unused key"])
def test_compare_refuses_non_finite_numbers(tmp_path, literal, where):
    text = SUMMARY_A.read_text()
    data = json.loads(text)
    if where == "exchange mean":
        old = '"mean": {!r}'.format(data["attention_exchanges"][0]["mean"])
        new = '"mean": ' + literal
    elif where == "allocated avg":
        old = '"avg(total)": {!r}'.format(data["allocated_memory"]["avg(total)"])
        new = '"avg(total)": ' + literal
    else:
        old = '"qkv_executions"'
        new = '"extra": {}, "qkv_executions"'.format(literal)
    path = _with_text(tmp_path, old, new)
    for fmt in ("markdown", "csv", "json"):
        result = compare(SUMMARY_A, path, "--format", fmt)
        no_surprise(result)
        assert result.code == 1, result
        assert result.stdout == b""
        check_error_line(
            result.stderr,
            str(path),
            r"^not a summary: .*(NaN|Infinity|"
            r"beyond what a float holds)",
        )
        assert "Infinity" not in result.stdout.decode("utf-8", "replace")


@pytest.mark.parametrize(
    "clock", ["1e-320", "1e-9", "0.0001", "1e300", "2e6", "inf", "nan", "0", "-5"]
)
def test_compare_refuses_absurd_clocks(tmp_path, clock):
    b = _summary_with(tmp_path, lambda s: None)
    result = compare(SUMMARY_A, b, "--clock-mhz", clock, "--format", "json")
    no_surprise(result)
    assert result.code == 2, result
    assert result.stdout == b""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("extract: error: --clock-mhz "), result


@pytest.mark.parametrize("clock", ["0.001", "1330", "1000000"])
def test_compare_clock_range_edges_are_accepted(tmp_path, clock):
    b = _summary_with(tmp_path, lambda s: None)
    result = compare(SUMMARY_A, b, "--clock-mhz", clock, "--format", "json")
    assert result.code == 0, result
    for row in json.loads(result.stdout)["rows"]:
        for value in row["values"]:
            assert value is None or math.isfinite(value)


def _lone_surrogates(summary):
    summary["kernels"][0]["stage"] = "stage \ud800 half"
    summary["attention_exchanges"][0]["name"] = "cs1_/x/\udfff/ExchangePre"


@pytest.mark.parametrize("fmt", ["markdown", "csv", "json"])
def test_compare_reads_lone_surrogates_and_writes_them_escaped(tmp_path, fmt):
    # A summary may hold one: extract writes names as json.dumps does (a lone surrogate
    # from pva becomes \udXXX). It is readable JSON, so compare reads it and its output
    # is never refused: the markdown and CSV show the code point as \udXXX.
    a = _summary_with(tmp_path, _lone_surrogates, name="a")
    b = _summary_with(tmp_path, _lone_surrogates, name="b")
    assert b"\\ud800" in b.read_bytes()
    chart = tmp_path / "chart.svg"
    result = compare(a, b, "--format", fmt, "--chart", chart)
    no_surprise(result)
    assert result.code == 0, result
    text = result.stdout.decode("utf-8")  # strict: valid UTF-8
    if fmt == "json":
        data = json.loads(text)
        assert "stage \ud800 half" in [row["metric"] for row in data["rows"]]
    else:
        assert "stage \\ud800 half" in text
        assert "\\udfff" in text
    svg = chart.read_bytes().decode("utf-8")
    assert "stage \\ud800 half" in svg
    import xml.etree.ElementTree as ET

    ET.fromstring(svg)  # still well-formed XML


def test_renderers_refuse_non_finite_numbers():
    # The guard: whatever a future path puts into a comparison, neither the JSON nor the
    # CSV renderer writes NaN or Infinity (strict JSON parsers reject them).
    from extractor.compare.comparison import Comparison, Recording, Row
    from extractor.compare.formats import to_csv, to_json
    from extractor.core.model import Summary

    recordings = [
        Recording("a", Path("a"), Summary({"attention_exchanges": None})),
        Recording("b", Path("b"), Summary({"attention_exchanges": None})),
    ]
    for bad_value in (math.nan, math.inf, -math.inf):
        for values, change in (((1, bad_value), None), ((1, 2), (None, bad_value))):
            comparison = Comparison(
                recordings,
                None,
                [Row("device spans", "device span 1", "cycles", values, change)],
                [],
            )
            for render in (to_json, to_csv):
                with pytest.raises(ValueError, match="non-finite"):
                    render(comparison)


# ---- views where the spec's tables belong ----------------------------------

RECURSIVE_PROGRAMS = [
    "ALTER TABLE programs RENAME TO programs_stored",
    (
        "CREATE VIEW programs AS WITH RECURSIVE r(id, name) AS (SELECT 1, 'x' UNION ALL "
        "SELECT id + 1, name FROM r) SELECT id, name FROM r"
    ),
]
OVERFLOWING_PROGRAMS = [
    "ALTER TABLE programs RENAME TO programs_stored",
    ("CREATE VIEW programs AS SELECT id + 9223372036854775807 AS id, name FROM programs_stored"),
]
OVERFLOWING_MEMORY = [
    "ALTER TABLE memory_by_tile RENAME TO memory_stored",
    (
        "CREATE VIEW memory_by_tile AS SELECT total * 9223372036854775807 AS total "
        "FROM memory_stored"
    ),
]
GENEROUS = 120  # seconds: the old code ran for minutes on the recursive view


def _viewed(tmp_path, statements, name="case") -> Path:
    profile = bad.write_base(tmp_path / name)
    bad.sql(*statements)(profile.parent)
    return profile


@pytest.mark.parametrize(
    "statements, table",
    [
        (RECURSIVE_PROGRAMS, "programs"),
        (OVERFLOWING_PROGRAMS, "programs"),
        (OVERFLOWING_MEMORY, "memory_by_tile"),
    ],
    ids=["recursive", "overflow", "memory"],
)
def test_a_view_where_a_table_belongs_is_refused(tmp_path, statements, table):
    profile = _viewed(tmp_path, statements)
    before = sha256(profile)
    out = tmp_path / "summary.json"
    for args in ((profile, "-o", out), ("stages", profile)):
        result = invoke_extract(*args, timeout=GENEROUS)
        no_surprise(result)
        assert result.code == 1, result
        check_error_line(
            result.stderr,
            str(profile),
            r"^{!r} is a view, not a table: not a PopVision profile".format(table),
        )
    assert not out.exists()
    assert sha256(profile) == before


def test_a_view_where_a_table_belongs_fails_only_its_profile_in_a_batch(tmp_path):
    _viewed(tmp_path, RECURSIVE_PROGRAMS, name="runs/recursive")
    _viewed(tmp_path, OVERFLOWING_PROGRAMS, name="runs/overflow")
    bad.write_base(tmp_path / "runs" / "good")
    result = invoke_extract("runs", "-o", "out", "-q", cwd=tmp_path, timeout=GENEROUS)
    assert result.code == 1, result
    entries = {}
    for line in (tmp_path / "out" / "index.jsonl").read_text().splitlines():
        entry = json.loads(line)
        entries[entry["profile"]] = entry
    assert entries["runs/good/profile.pop"]["status"] == "ok"
    for name in ("recursive", "overflow"):
        entry = entries["runs/{}/profile.pop".format(name)]
        assert entry["status"] == "failed"
        assert "'programs' is a view, not a table" in entry["reason"], entry


def test_a_virtual_table_where_a_table_belongs_is_refused(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    db = sqlite3.connect(str(profile))
    db.executescript(
        "ALTER TABLE programs RENAME TO programs_stored;"
        "CREATE VIRTUAL TABLE programs USING fts5(id, name);"
        "INSERT INTO programs SELECT id, name FROM programs_stored;"
    )
    db.close()
    result = invoke_extract(profile, "-o", "-", timeout=GENEROUS)
    no_surprise(result)
    assert result.code == 1, result
    check_error_line(
        result.stderr,
        str(profile),
        r"^'programs' is a virtual table, not a stored table: not a PopVision "
        r"profile",
    )
    answer = invoke_extract("inspect", profile, "--no-pva", "--json", timeout=GENEROUS)
    assert answer.code == 0, answer
    required = json.loads(answer.stdout)["required"]
    assert "'programs' is a virtual table, not a stored table" in required["problems"]
    assert not required["ok"]


@pytest.mark.parametrize("as_json", [False, True])
def test_inspect_reports_a_view_without_running_it(tmp_path, as_json):
    profile = _viewed(tmp_path, RECURSIVE_PROGRAMS)
    args = ["inspect", profile, "--no-pva", "--exact"] + (["--json"] if as_json else [])
    result = invoke_extract(*args, timeout=GENEROUS)
    assert result.code == 0, result
    problem = "'programs' is a view, not a table"
    if as_json:
        answer = json.loads(result.stdout)
        assert problem in answer["required"]["problems"]
        assert not answer["required"]["ok"]
        assert "programs" not in [t["name"] for t in answer["tables"]]
    else:
        assert problem in result.stdout.decode("utf-8")


def test_a_pattern_nested_deeper_than_any_real_one_is_refused_before_it_is_parsed(tmp_path):
    # re's parser recurses once per group: where the recursion limit is raised (a test
    # framework may), 3000 groups overflowed the C stack on Python 3.8 instead of raising
    # RecursionError. The depth is checked first, whatever the limit.
    import sys

    rules = tmp_path / "deep.toml"
    rules.write_text(_rules_with_pattern("(" * 150 + "x" + ")" * 150), encoding="utf-8")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    try:
        stages_refuses_rules(tmp_path, rules, r"nested too deeply")
    finally:
        sys.setrecursionlimit(limit)
    shallow = tmp_path / "shallow.toml"
    shallow.write_text(_rules_with_pattern("(" * 100 + "x" + ")" * 100), encoding="utf-8")
    result = invoke_extract(
        "stages", bad.write_base(tmp_path / "ok"), "--rules", shallow, pva=False
    )
    assert result.code == 0, result
