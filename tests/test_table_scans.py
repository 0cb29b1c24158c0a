"""The table scans that run beside the step pass (profile.TableScans) end with it.

summarize runs the start/end check and the two memory aggregates on a second connection
in a thread. Whatever happens to the pass (success, a bad value, an interrupt), that
thread must be over, and its connection closed, when summarize returns or raises."""

import sqlite3
import threading
import time

import pytest

from conftest import EDGE, copy_case, golden_case_folder
from extractor.errors import ProfileError
from extractor.profile import Profile
from extractor.summary import summarize

# A query of many seconds that only an interrupt ends early (SQLite counts to 2e8).
LONG_QUERY = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
              "WHERE x < 200000000) SELECT count(*) FROM c")


def _scan_threads():
    return [t for t in threading.enumerate() if t.name == "extractor-table-scans"]


def test_no_scan_thread_outlives_a_summary(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "ok")
    extraction = summarize(profile, use_pva=False)
    assert extraction.summary["allocated_memory"]["max(total)"] is not None
    assert _scan_threads() == []


@pytest.fixture
def slow_scans(monkeypatch):
    """The memory aggregate made a long query: only an interrupt can end it soon."""
    monkeypatch.setattr(Profile, "exchange_memory_per_tile",
                        lambda self: self._one_row(LONG_QUERY))


def test_no_scan_thread_outlives_a_failed_pass(tmp_path, slow_scans):
    profile = copy_case(golden_case_folder(), tmp_path / "bad")
    start = time.monotonic()

    def sink(row, facts, in_body):
        raise RuntimeError("the pass failed at step {}".format(row.step))
    with pytest.raises(RuntimeError, match="the pass failed"):
        summarize(profile, use_pva=False, step_sink=sink)
    assert _scan_threads() == []
    assert time.monotonic() - start < 3  # the long query was interrupted, not waited for


def test_the_start_end_check_is_reported_before_a_failed_pass(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "both")
    db = sqlite3.connect(str(profile))
    with db:
        db.execute("UPDATE steps_by_ipu SET cycles_base = 'soon' WHERE rowid = "
                   "(SELECT max(rowid) FROM steps_by_ipu)")
    db.close()

    def sink(row, facts, in_body):
        raise RuntimeError("the pass failed")
    with pytest.raises(ProfileError, match="cycles_base is text 'soon', not a number"):
        summarize(profile, use_pva=False, step_sink=sink)
    assert _scan_threads() == []


def test_an_interrupt_stops_the_scans(tmp_path, slow_scans):
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "int")
    seen = []
    start = time.monotonic()

    def sink(row, facts, in_body):
        seen.append(row)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        summarize(profile, use_pva=False, step_sink=sink)
    assert len(seen) == 1
    assert _scan_threads() == []
    assert time.monotonic() - start < 3
