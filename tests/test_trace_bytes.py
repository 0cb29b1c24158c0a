"""`extract trace` on what its fast path does not write itself, and on a trace long
enough for its events to be written in several chunks (tests/test_trace.py has the
rest): counts stored as NULL or as real numbers, times beyond 10**15 cycles, and a
second pass over rows stored out of step order."""

import json
import sqlite3
from decimal import Decimal

import pytest
from test_trace import check_against_oracle

from support.cases import copy_case, generator
from support.cli import invoke_extract
from support.paths import EDGE
from support.trace_oracle import oracle_trace, strict_load, validate


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


@pytest.mark.parametrize("offset", [4 * 10**14, 3 * 10**15])
def test_null_counts_and_late_times(offset, tmp_path):
    """A NULL cycles or active_tiles is null (written outside the pass's fast path,
    ProfileEvents._step_event); times late in a trace are still exact decimals of whole
    nanoseconds, never an exponent. Below 2**49 ns after the shift (4e14) every number
    is the oracle's; past it (3e15 ns, where a double's unit in the last place of a
    time in microseconds is half a nanosecond) the file is still valid and no slice
    overlaps as viewers read it (validate), and every ts is exactly the oracle's."""
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    db = _unconstrained(profile)
    with db:
        (count,) = db.execute("SELECT count(*) FROM steps_by_ipu").fetchone()
        db.execute("UPDATE steps_by_ipu SET cycles = NULL WHERE rowid % 5 = 1")
        db.execute("UPDATE steps_by_ipu SET active_tiles = NULL WHERE rowid % 7 = 2")
        db.execute(
            "UPDATE steps_by_ipu SET cycles_base = cycles_base + ? WHERE rowid > ?",
            (offset, count // 2),
        )
    db.close()
    raw = traced(tmp_path, profile, "--all", "--no-pva")
    data = strict_load(raw)
    validate(data)
    if offset < 2**49:
        check_against_oracle(data, 1, profile, every=True)
    else:
        exact = json.loads(raw.decode("ascii"), parse_float=Decimal)
        starts = sorted(
            int(e["ts"] * 1000) for e in exact["traceEvents"] if e.get("cat") == "OnTileExecute"
        )
        want = oracle_trace(profile, every=True)["steps"]
        assert starts == sorted(s[3] for s in want if s[2] == "OnTileExecute")
    steps = [e for e in data["traceEvents"] if e["ph"] == "X" and "active_tiles" in e["args"]]
    assert any(e["args"]["cycles"] is None for e in steps)
    assert any(e["args"]["active_tiles"] is None for e in steps)
    assert max(e["ts"] for e in steps) > offset / 1000 - 1e6  # microseconds
    assert '"ts":{}'.format(offset // 10**9).encode() in raw
    assert b"e+" not in raw and b"E+" not in raw  # no exponent


@pytest.mark.parametrize(
    "column, where, words",
    [
        ("cycles", "s.type = 'OnTileExecute'", "steps_by_ipu.cycles is the real number"),
        ("cycles", "s.type != 'OnTileExecute'", "steps_by_ipu.cycles is the real number"),
        ("active_tiles", "1", "steps_by_ipu.active_tiles is the real number"),
        ("cycles_base", "1", "its start is the real number"),
        ("active_cycles_to_max", "1", "its end is the real number"),
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
