"""`extract trace` on hostile values, through the real CLI: clocks out of range (given
or read from pva), a start that is not a number extract can use, a path that is not
UTF-8, values named as every command names them."""

import json
import os
import sqlite3

import pytest
from test_trace import process_name, trace

from support.cases import copy_case
from support.cli import invoke_extract
from support.paths import EDGE

ONE_ANCHOR = EDGE / "one-anchor" / "profile.pop"


def _one_line_error(result, code):
    assert result.code == code, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("extract: error: "), result.stderr
    assert "unexpected failure" not in result.stderr and "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize("clock", ["1e-320", "0.0009", "1000001", "inf", "-1", "nan"])
@pytest.mark.parametrize("command", ["trace", "compare"])
def test_a_clock_option_out_of_range_is_one_usage_error(command, clock, tmp_path):
    """trace once took 1e-320 MHz and wrote "dur": inf (not JSON); both commands now
    bound the clock alike."""
    out = tmp_path / "out.json"
    if command == "trace":
        args = ["trace", ONE_ANCHOR, "-o", out]
    else:
        summary = tmp_path / "summary.json"
        assert invoke_extract(ONE_ANCHOR, "--no-pva", "-o", summary, pva=False).code == 0
        out = tmp_path / "out.svg"
        args = ["compare", summary, summary, "--chart", out]
    result = invoke_extract(*args, "--clock-mhz", clock)
    line = _one_line_error(result, 2)
    assert (
        "--clock-mhz {}: the clock must be a positive number of MHz, from 0.001".format(
            float(clock)
        )
        in line
    ), line
    assert not out.exists()


@pytest.mark.parametrize("clock", ["0.001", "1e6"])
def test_the_bounds_of_the_clock_are_taken(clock, tmp_path):
    data, _ = trace(tmp_path, ONE_ANCHOR, "--all", "--clock-mhz", clock)
    assert data["otherData"]["clock_mhz"] == float(clock)


@pytest.mark.parametrize("hz", [1e-300, 5e-324, 1e16])
def test_a_pva_clock_out_of_range_names_the_file(hz, tmp_path):
    profile = copy_case(EDGE / "one-anchor", tmp_path / "clocked")
    double = tmp_path / "clocked" / "pva-double.json"
    data = json.loads(double.read_text(encoding="utf-8"))
    data["target"] = {"clockFrequency": hz}
    double.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "t.json"
    line = _one_line_error(invoke_extract("trace", profile, "-o", out), 1)
    assert "{}: pva gives a clock (target.clockFrequency) of {!r} Hz".format(profile, hz) in line
    assert not out.exists()
    # given a clock, or without pva, the same profile is traced
    trace(tmp_path, profile, "--clock-mhz", "1850", name="given.json")
    trace(tmp_path, profile, "--no-pva", name="none.json")
    # and doctor, which tells what trace will make of the clock, says it is refused
    result = invoke_extract("doctor", profile, "--json")
    (clock,) = [c for c in json.loads(result.stdout)["checks"] if c["name"] == "clock"]
    assert clock["status"] == "warn", clock
    assert "outside 1 kHz to 1 THz" in clock["detail"] and "refuses" in clock["means"]


@pytest.mark.parametrize("start", ["-9e999", "9e999", "1.5", "'abc'"])
def test_a_start_that_is_not_whole_names_the_file(start, tmp_path):
    """A -Infinity start (cycles_base = -9e999) was "unexpected failure: OverflowError"
    with no file named (the window's earliest start)."""
    profile = copy_case(EDGE / "one-anchor", tmp_path / "case")
    db = sqlite3.connect(str(profile))
    with db:
        db.execute(
            "UPDATE steps_by_ipu SET cycles_base = {} "
            "WHERE rowid = (SELECT min(rowid) FROM steps_by_ipu)".format(start)
        )
    db.close()
    out = tmp_path / "t.json"
    result = invoke_extract("trace", profile, "--all", "--no-pva", "-o", out, pva=False)
    line = _one_line_error(result, 1)
    assert line.startswith("extract: error: {}: ".format(profile)), line
    assert "not a whole number" in line or "not a number" in line
    words = {"-9e999": "the real number -inf", "9e999": "the real number inf"}
    assert words.get(start, "") in line
    assert not out.exists()


@pytest.mark.parametrize(
    "column, words",
    [("cycles", "steps_by_ipu.cycles is text 'abc'"), ("active_tiles", "is the real number 1.5")],
)
def test_bad_counts_are_named_as_every_command_names_them(column, words, tmp_path):
    """trace said `steps_by_ipu.cycles is str` / `is float`; run and diff, and the
    docs, say `is text 'abc'` / `is the real number 1.5`."""
    profile = copy_case(EDGE / "one-anchor", tmp_path / "case")
    db = sqlite3.connect(str(profile))
    with db:
        db.execute("CREATE TABLE copied AS SELECT * FROM steps_by_ipu ORDER BY rowid")
        db.execute("DROP TABLE steps_by_ipu")
        db.execute("ALTER TABLE copied RENAME TO steps_by_ipu")
        value = "'abc'" if column == "cycles" else "1.5"
        db.execute(
            "UPDATE steps_by_ipu SET {} = {} WHERE rowid = (SELECT max(i.rowid) FROM "
            "steps_by_ipu AS i JOIN steps AS s ON s.id = i.step_id "
            "WHERE s.type = 'StreamCopyBegin')".format(column, value)
        )
    db.close()
    out = tmp_path / "t.json"
    result = invoke_extract("trace", profile, "--all", "--no-pva", "-o", out, pva=False)
    line = _one_line_error(result, 1)
    assert words in line and "not a whole number" in line, line


@pytest.mark.skipif(os.name != "posix", reason="POSIX paths are bytes")
def test_a_path_that_is_not_utf8_is_shown_as_its_bytes(tmp_path):
    """The process name once held a lone surrogate (no UTF-8 text can); it is shown as
    every command shows such a path: the byte as `\\xff`."""
    folder = os.path.join(os.fsencode(str(tmp_path)), b"odd\xffname")
    os.mkdir(folder)
    for name in (b"profile.pop", b"pva-double.json"):
        with open(os.path.join(os.fsencode(str(EDGE / "one-anchor")), name), "rb") as source:
            with open(os.path.join(folder, name), "wb") as copy:
                copy.write(source.read())
    profile = os.fsdecode(os.path.join(folder, b"profile.pop"))
    data, _ = trace(tmp_path, profile)
    name = process_name(data, 1)
    assert name.startswith(str(tmp_path) + "/odd\\xffname/profile.pop"), name
    name.encode("utf-8")  # no lone surrogate
