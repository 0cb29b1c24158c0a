"""The start/end check, the step pass and the aggregate queries: one connection, in order.

Until the table scans were weighed (BENCHMARKS.md), the start/end check and the two
memory aggregates ran on a second connection in a thread, beside the pass
(profile.TableScans). Weighed on bench/size.py with and without it in the same runs, the
thread did not earn the 10% a thread must, and was removed. What it promised stays and
is held here: the start/end error before the pass's, the pass's before the aggregates',
no query left running and no thread left behind. (tests/support/badinput.py holds the
same orders among its bad-input cases.)"""

import re
import sqlite3
import threading

import pytest

from extractor.core.profile import Profile
from extractor.core.summary import summarize
from support.cases import copy_case, golden_case_folder
from support.cli import run_extract
from support.paths import EDGE


def _spoil(profile, *statements):
    db = sqlite3.connect(str(profile))
    with db:
        for statement in statements:
            db.execute(statement)
    db.close()


def _extract(tmp_path, profile):
    result = run_extract(profile, "-o", tmp_path / "summary.json", "--no-pva", pva=False)
    assert result.code == 1, result
    assert len(result.stderr.splitlines()) == 1, result
    assert not (tmp_path / "summary.json").exists()
    return result.stderr.strip()


START_END = (
    r"step \d+: steps_by_ipu\.cycles_base is text 'soon', not a number$",
    (
        "UPDATE steps_by_ipu SET cycles_base = 'soon' WHERE rowid = "
        "(SELECT max(rowid) FROM steps_by_ipu)"
    ),
)
PASS = (
    r"step \d+: steps_by_ipu\.cycles is text 'many', not a whole number$",
    "UPDATE steps_by_ipu SET cycles = 'many'",
)
AGGREGATE = (
    (
        r"table 'memory_by_tile', column 'total' holds text 'lots' where a whole "
        r"number belongs$"
    ),
    "UPDATE memory_by_tile SET total = 'lots' WHERE rowid = 1",
)


@pytest.mark.parametrize(
    "faults, reported",
    [
        ((START_END, PASS, AGGREGATE), START_END),
        ((START_END, AGGREGATE), START_END),
        ((PASS, AGGREGATE), PASS),
        ((AGGREGATE,), AGGREGATE),
    ],
    ids=["all three", "start/end and aggregate", "pass and aggregate", "aggregate"],
)
def test_the_first_fault_in_order_is_the_one_reported(tmp_path, faults, reported):
    # The start/end check, then the pass, then the aggregates: the first of them to
    # meet a fault is the one reported, whatever else is wrong with the file.
    profile = copy_case(golden_case_folder(), tmp_path / "p")
    _spoil(profile, *(statement for _, statement in faults))
    line = _extract(tmp_path, profile)
    assert re.match(r"extract: error: .*profile\.pop: " + reported[0], line), line


def test_no_thread_outlives_a_summary(tmp_path):
    before = set(threading.enumerate())
    profile = copy_case(golden_case_folder(), tmp_path / "ok")
    extraction = summarize(profile, use_pva=False)
    assert extraction.summary["allocated_memory"]["max(total)"] is not None
    assert set(threading.enumerate()) == before


def test_an_interrupt_in_the_pass_runs_no_aggregate(tmp_path, monkeypatch):
    # Ctrl-C during the pass ends the summary there: no query is left to stop.
    asked = []
    monkeypatch.setattr(
        Profile, "exchange_memory_per_tile", lambda self: asked.append("exchange memory")
    )
    monkeypatch.setattr(Profile, "allocated_memory", lambda self: asked.append("allocated memory"))
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "int")
    seen = []

    def sink(row, facts, in_body):
        seen.append(row)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        summarize(profile, use_pva=False, step_sink=sink)
    assert len(seen) == 1
    assert asked == []
