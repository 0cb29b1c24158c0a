"""`extract trace` on what its fast path does not write itself, and on a trace long
enough for its events to be written in several chunks (tests/test_trace.py has the
rest): counts stored as NULL or as real numbers, times beyond 10**15 cycles, and a
second pass over rows stored out of step order."""

import sqlite3

import pytest
from test_trace import check_against_oracle

from support.cases import copy_case, generator
from support.cli import invoke_extract
from support.paths import EDGE
from support.trace_oracle import strict_load, validate


@pytest.fixture(scope="module")
def long_profile(tmp_path_factory):
    """A one-IPU trace of 10,350 step rows: more than two chunks of 4,096 step events."""
    generate = generator()
    spec = generate.vit_spec(blocks=27, runs=25, tiles=8, seed=5)
    return generate.write_case(spec, tmp_path_factory.mktemp("long"))


def traced(tmp_path, profile, *options, name="trace.json"):
    out = tmp_path / name
    result = invoke_extract("trace", profile, *options, "-o", out, pva=False)
    assert result.code == 0, result
    return out.read_bytes()


def _unconstrained(profile):
    """steps_by_ipu as a table without NOT NULL (its rows in the same order)."""
    db = sqlite3.connect(str(profile))
    with db:
        db.execute("CREATE TABLE copied AS SELECT * FROM steps_by_ipu ORDER BY rowid")
        db.execute("DROP TABLE steps_by_ipu")
        db.execute("ALTER TABLE copied RENAME TO steps_by_ipu")
    return db


def test_rows_read_twice_give_the_same_bytes(long_profile, tmp_path):
    """Rows stored out of step order: the first pass, on the stored order, stops at the
    first batch out of order, after writing some chunks of events (and holding more);
    the second, on SQLite's sorted rows, writes the profile's events again from where
    they began. The file is the one an in-order table gives, byte for byte."""
    profile = copy_case(long_profile.parent, tmp_path / "case")
    before = traced(tmp_path, profile, "--all", "--no-pva", name="before.json")
    db = sqlite3.connect(str(profile))
    with db:
        rows = list(db.execute("SELECT * FROM steps_by_ipu ORDER BY rowid"))
        db.execute("DELETE FROM steps_by_ipu")
        marks = ",".join("?" * len(rows[0]))
        # the stored order's pass reads 5,200 rows in order, then one out of order: it
        # has written a chunk of 4,096 step events and holds two pieces of 512 more
        for row in rows[-5200:] + rows[:-5200]:
            db.execute("INSERT INTO steps_by_ipu VALUES ({})".format(marks), row)
    db.close()
    assert traced(tmp_path, profile, "--all", "--no-pva", name="after.json") == before
    data = strict_load(before)
    validate(data)
    check_against_oracle(data, 1, profile, every=True)


def test_null_counts_and_times_beyond_exact_integers(tmp_path):
    """A NULL cycles or active_tiles is null; a time of 10**15 cycles or more after the
    shift is a float's repr, as at a clock: both are written outside the pass's fast
    path (ProfileEvents._step_event)."""
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    db = _unconstrained(profile)
    with db:
        (count,) = db.execute("SELECT count(*) FROM steps_by_ipu").fetchone()
        db.execute("UPDATE steps_by_ipu SET cycles = NULL WHERE rowid % 5 = 1")
        db.execute("UPDATE steps_by_ipu SET active_tiles = NULL WHERE rowid % 7 = 2")
        db.execute(
            "UPDATE steps_by_ipu SET cycles_base = cycles_base + 3 * 1000000000000000 "
            "WHERE rowid > ?",
            (count // 2,),
        )
    db.close()
    raw = traced(tmp_path, profile, "--all", "--no-pva")
    data = strict_load(raw)
    validate(data)
    check_against_oracle(data, 1, profile, every=True)
    steps = [e for e in data["traceEvents"] if e["ph"] == "X" and "active_tiles" in e["args"]]
    assert any(e["args"]["cycles"] is None for e in steps)
    assert any(e["args"]["active_tiles"] is None for e in steps)
    assert max(e["ts"] for e in steps) > 3e12  # microseconds
    assert b'"ts":3000000' in raw  # a float's repr, no exponent


@pytest.mark.parametrize(
    "column, where, words",
    [
        ("cycles", "s.type = 'OnTileExecute'", "steps_by_ipu.cycles is the real number"),
        ("cycles", "s.type != 'OnTileExecute'", "steps_by_ipu.cycles is float"),
        ("active_tiles", "1", "steps_by_ipu.active_tiles is float"),
        ("cycles_base", "1", "its start is float"),
        ("active_cycles_to_max", "1", "its end is float"),
    ],
)
def test_a_count_or_time_that_is_not_whole_is_refused(column, where, words, tmp_path):
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    db = sqlite3.connect(str(profile))
    with db:
        (rowid,) = db.execute(
            "SELECT max(i.rowid) FROM steps_by_ipu AS i JOIN steps AS s ON s.id = i.step_id "
            "WHERE {}".format(where)
        ).fetchone()
        db.execute(
            "UPDATE steps_by_ipu SET {0} = {0} + 0.5 WHERE rowid = ?".format(column), (rowid,)
        )
    db.close()
    out = tmp_path / "t.json"
    result = invoke_extract("trace", profile, "--all", "--no-pva", "-o", out, pva=False)
    assert result.code == 1, result
    assert words in result.stderr and "not a whole number" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
