"""`extract ... --csv`: steps.csv and first-body.csv beside each summary.json.

Expected values come from the fixture profiles themselves, read here with plain SQL and
the spec's default selectors, never from the extractor's own output.
"""

import csv
import io
import json
import re
import sqlite3
import sys
import tracemalloc
from pathlib import Path

from support.cases import copy_case
from support.checks import index_lines
from support.cli import invoke_extract, pva_double
from support.paths import EDGE, FIXTURES, GOLDEN, GOLDEN_PROFILE_ARG

sys.path.insert(0, str(FIXTURES))
import generate

# The spec's column order, typed out here rather than imported.
COLUMNS = [
    "step",
    "kind",
    "stage",
    "name",
    "cycles",
    "active_tiles",
    "start",
    "end",
    "max_exchange_code_bytes",
    "vertices",
]
KERNEL = re.compile(r"/Convolve$")
ANCHOR = re.compile(r"/attn/qkv/")


def read_csv(path: Path):
    """(header, rows) of a CSV file, checking the bytes are UTF-8 with CRLF line ends."""
    raw = path.read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf"), "no byte-order mark"
    text = raw.decode("utf-8")
    assert text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows[0], rows[1:]


def sql_step_rows(profile: Path):
    """(step, kind, name, cycles, start, end) per steps_by_ipu row, in spec order."""
    db = sqlite3.connect("file:{}?mode=ro".format(profile), uri=True)
    try:
        return db.execute("""
            SELECT s.id, s.type,
                   CASE WHEN cs.name IS NOT NULL AND cs.name != '' THEN cs.name
                        WHEN p.name IS NOT NULL THEN p.name ELSE '' END,
                   i.cycles, i.cycles_base + i.active_cycles_from_min,
                   i.cycles_base + i.active_cycles_to_max
            FROM steps s JOIN steps_by_ipu i ON i.step_id = s.id
            LEFT JOIN compute_sets cs ON cs.compute_set = s.compute_set
            LEFT JOIN programs p ON p.id = s.program
            ORDER BY s.id, i.rowid""").fetchall()
    finally:
        db.close()


def anchors(rows):
    """The distinct steps with a kernel row whose name matches the anchor selector."""
    found = []
    for step, _, name, *_ in rows:
        if KERNEL.search(name) and ANCHOR.search(name) and step not in found:
            found.append(step)
    return found


def extract_golden_with_csv(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    profile = copy_case(
        GOLDEN / "poprt" / "profile_logs_f8weight" / "inference",
        tmp_path / "poprt" / "profile_logs_f8weight" / "inference",
    )
    result = invoke_extract(GOLDEN_PROFILE_ARG, "-o", "out/summary.json", "--csv", cwd=work)
    assert result.code == 0, result
    return profile, work / "out"


def test_golden_step_tables(tmp_path):
    profile, out = extract_golden_with_csv(tmp_path)
    # The summary is the same, byte for byte, as without --csv.
    assert (out / "summary.json").read_bytes() == (GOLDEN / "expected.json").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["first-body.csv", "steps.csv", "summary.json"]

    header, steps = read_csv(out / "steps.csv")
    assert header == COLUMNS
    expected = sql_step_rows(profile)
    assert len(steps) == len(expected) > 1000
    db = sqlite3.connect(str(profile))
    assert len(steps) == db.execute("SELECT count(*) FROM steps_by_ipu").fetchone()[0]
    db.close()
    for row, (step, kind, name, cycles, start, end) in zip(steps, expected):
        assert row[:2] == [str(step), kind]
        assert row[3:5] == [name, str(cycles)]
        assert row[6:8] == [str(start), str(end)]

    # Names with commas and braces (the copies' programs) come back whole.
    copies = [row[3] for row in steps if row[3].startswith("copy617_Copy_{")]
    assert copies and all("," in name and "}_to_{" in name for name in copies)

    first = anchors(expected)[:2]
    assert len(first) == 2
    header, body = read_csv(out / "first-body.csv")
    assert header == COLUMNS
    assert body == [row for row in steps if first[0] <= int(row[0]) < first[1]]
    assert int(body[0][0]) == first[0] and int(body[-1][0]) < first[1]

    # The summary's kernels are the first body's kernel rows, every field alike.
    summary = json.loads((out / "summary.json").read_text())
    kernels = [row for row in body if KERNEL.search(row[3])]
    assert kernels == [[str(k[c]) for c in COLUMNS] for k in summary["kernels"]]


def test_no_pva_leaves_the_pva_columns_empty(tmp_path):
    profile = copy_case(EDGE / "name-rules", tmp_path / "case")
    result = invoke_extract(
        profile, "-o", tmp_path / "out" / "s.json", "--csv", "--no-pva", pva=False
    )
    assert result.code == 0, result
    _, steps = read_csv(tmp_path / "out" / "steps.csv")
    assert len(steps) == len(sql_step_rows(profile)) == 11
    assert all(row[8] == "" and row[9] == "" for row in steps)


def test_pva_columns_on_an_edge_case(tmp_path):
    # name-rules, checked by hand from fixtures/generate.py: step 6 runs exchange
    # program 42 (codeBytesByTile [40, 8, 0, 4]); step 8 has three vertex types.
    profile = copy_case(EDGE / "name-rules", tmp_path / "case")
    result = invoke_extract(profile, "-o", tmp_path / "out" / "summary.json", "--csv")
    assert result.code == 0, result
    _, steps = read_csv(tmp_path / "out" / "steps.csv")
    by_step = {row[0]: row for row in steps}
    assert by_step["6"][8] == "40" and by_step["6"][9] == ""
    assert by_step["3"][8] == "12"  # program 30: [8, 0, 4, 12]
    assert by_step["8"][9] == (
        "poplin::ConvPartial1x1Out<half,half,true,false,16,4,false>; "
        "poplin::Transpose2d<half>; popops::Zero<half>"
    )
    assert by_step["5"][2] == "PV"
    assert by_step["5"][3] == "/m/blocks/blocks.0/attn/MatMul_1/Convolve"
    # The first body: steps 4 (first anchor) to 8 (the second anchor is step 9).
    _, body = read_csv(tmp_path / "out" / "first-body.csv")
    assert [row[0] for row in body] == ["4", "5", "6", "7", "8"]


def test_awkward_names_round_trip(tmp_path):
    spec, _ = generate.edge_cases()["name-rules"]
    awkward = 'x,{"a,b"}_to_{c}\nsecond line \u00e9 '
    for compute_set in spec.compute_sets:
        compute_set.name = awkward + compute_set.name if compute_set.name else ""
    for program in spec.programs:
        if program.type == "DoExchange":
            program.name = '"quoted", ' + program.name
    profile = generate.write_case(spec, tmp_path / "case")
    out = tmp_path / "out"
    result = invoke_extract(profile, "-o", out / "summary.json", "--csv")
    assert result.code == 0, result
    _, steps = read_csv(out / "steps.csv")
    assert [row[3] for row in steps] == [name for _, _, name, *_ in sql_step_rows(profile)]
    names = {row[3] for row in steps}
    assert awkward + "/m/blocks/blocks.0/attn/qkv/Convolve" in names
    assert '"quoted", cs1_/m/blocks/blocks.0/attn/qkv/Convolve/ExchangePre' in names
    raw = (out / "steps.csv").read_bytes().decode("utf-8")
    # RFC 4180: a field with quotes is quoted and its quotes doubled; the line break
    # inside a field stays a bare "\n" while records end with "\r\n".
    assert '"""quoted"", cs1_/m/blocks/blocks.0/attn/qkv/Convolve/ExchangePre"' in raw
    assert '"x,{""a,b""}_to_{c}\nsecond line \u00e9 /m/blocks/blocks.0/attn/qkv/Convolve"' in raw
    # Anchors still found (names still end in /Convolve): the body is steps 4..8.
    _, body = read_csv(out / "first-body.csv")
    assert sorted({int(row[0]) for row in body}) == [4, 5, 6, 7, 8]


def test_csv_needs_a_summary_file(tmp_path):
    profile = copy_case(EDGE / "one-anchor", tmp_path / "case")
    for extra in (["-o", "-"], []):
        result = invoke_extract(profile, "--csv", *extra, cwd=tmp_path)
        assert result.code == 2, result
        assert result.stderr.count("\n") == 1 and "--csv" in result.stderr
        assert not (tmp_path / "steps.csv").exists()


def test_one_anchor_body_runs_to_the_end(tmp_path):
    profile = copy_case(EDGE / "one-anchor", tmp_path / "case")
    result = invoke_extract(profile, "-o", tmp_path / "summary.json", "--csv")
    assert result.code == 0, result
    _, steps = read_csv(tmp_path / "steps.csv")
    _, body = read_csv(tmp_path / "first-body.csv")
    assert body == [row for row in steps if int(row[0]) >= 4] and body[-1][0] == "12"


def test_no_anchor_gives_an_empty_first_body(tmp_path):
    profile = copy_case(EDGE / "no-anchors", tmp_path / "case")
    result = invoke_extract(profile, "-o", tmp_path / "summary.json", "--csv")
    assert result.code == 0, result
    header, body = read_csv(tmp_path / "first-body.csv")
    assert header == COLUMNS and body == []
    _, steps = read_csv(tmp_path / "steps.csv")
    assert len(steps) == 11


def test_a_failure_leaves_no_table_and_keeps_earlier_ones(tmp_path):
    # Step 5's program is not in the pva report: the summary alone never asks about it
    # (it is no kernel), but the step tables need its facts for every row.
    spec, _ = generate.edge_cases()["one-anchor"]
    profile = generate.write_case(spec, tmp_path / "case")
    pva_json = tmp_path / "case" / "pva-double.json"
    data = json.loads(pva_json.read_text())
    data["programs"] = [p for p in data["programs"] if p["id"] != 32]
    pva_json.write_text(json.dumps(data))
    out = tmp_path / "out"
    out.mkdir()
    for name in ("steps.csv", "first-body.csv", "summary.json"):
        (out / name).write_text("earlier\n")
    assert invoke_extract(profile, "-o", tmp_path / "alone.json").code == 0
    result = invoke_extract(profile, "-o", out / "summary.json", "--csv")
    assert result.code == 1, result
    assert result.stderr.startswith("extract: error: ") and result.stderr.count("\n") == 1
    assert "program 32" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["first-body.csv", "steps.csv", "summary.json"]
    assert all(
        (out / n).read_text() == "earlier\n"
        for n in ("steps.csv", "first-body.csv", "summary.json")
    )


def batch_tree(tmp_path):
    inputs = tmp_path / "in"
    copy_case(EDGE / "one-anchor", inputs / "a")
    copy_case(EDGE / "name-rules", inputs / "b" / "c")
    return inputs, tmp_path / "out"


def counts(result):
    return result.stderr.strip().splitlines()[-1]


def test_batch_writes_tables_beside_each_summary_and_tracks_them(tmp_path):
    inputs, out = batch_tree(tmp_path)
    result = invoke_extract(inputs, "-o", out, "-j", "2")
    assert result.code == 0, result
    assert not list(out.rglob("*.csv"))

    # Extracted without tables: not up to date for a --csv run.
    result = invoke_extract(inputs, "-o", out, "-j", "2", "--csv")
    assert result.code == 0, result
    assert counts(result) == "2 extracted, 0 up to date, 0 failed"
    for folder, profile in (
        (out / "a", inputs / "a" / "profile.pop"),
        (out / "b" / "c", inputs / "b" / "c" / "profile.pop"),
    ):
        _, steps = read_csv(folder / "steps.csv")
        assert len(steps) == len(sql_step_rows(profile))
        assert (folder / "first-body.csv").exists()
    entries = index_lines(out)
    assert all(e["csv"] is True for e in entries)

    result = invoke_extract(inputs, "-o", out, "--csv")
    assert counts(result) == "0 extracted, 2 up to date, 0 failed"
    # Without --csv the summaries are up to date whether or not tables are there.
    result = invoke_extract(inputs, "-o", out)
    assert counts(result) == "0 extracted, 2 up to date, 0 failed"

    # A table gone or changed: that profile is done again.
    (out / "a" / "steps.csv").unlink()
    with (out / "b" / "c" / "first-body.csv").open("a") as handle:
        handle.write("extra\r\n")
    result = invoke_extract(inputs, "-o", out, "--csv")
    assert counts(result) == "2 extracted, 0 up to date, 0 failed"
    assert (out / "a" / "steps.csv").exists()
    assert not list(out.rglob("*.partial"))


# ---- streaming ---------------------------------------------------------------------


def _peak_memory(profile: Path, out: Path) -> int:
    """tracemalloc's peak while extracting `profile` with its step tables, in-process."""
    pva = pva_double()
    from extractor.core.steptables import step_tables
    from extractor.core.summary import summarize

    tracemalloc.start()
    try:
        with step_tables(out) as tables:
            summarize(profile, pva=pva, step_sink=tables)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_steps(tmp_path):
    # The same model recorded for 10 and for 100 inference runs: ten times the step rows,
    # the same programs and names. Keeping every row (a list of ~12,000 row tuples) would
    # add megabytes; streaming keeps the peak where it was.
    peaks, rows = [], []
    for runs in (10, 100):
        spec = generate.vit_spec(blocks=2, runs=runs, tiles=8, code_bytes="none")
        profile = generate.write_case(spec, tmp_path / "r{}".format(runs))
        _peak_memory(profile, tmp_path / "warm-up")  # imports, rule and regex caches
        peaks.append(_peak_memory(profile, tmp_path / "out{}".format(runs)))
        rows.append(len(spec.steps_by_ipu))
        _, steps = read_csv(tmp_path / "out{}".format(runs) / "steps.csv")
        assert len(steps) == rows[-1]
    assert rows[1] >= 10 * rows[0] > 1000
    assert peaks[1] < peaks[0] * 1.5, peaks
