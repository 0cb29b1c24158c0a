"""The table scans that run beside the step pass (profile.TableScans) end with it.

summarize runs the start/end check and the two memory aggregates on a second connection
in a thread. Whatever happens to the pass (success, a bad value, an interrupt), that
thread must be over, and its connection closed, when summarize returns or raises."""

import re
import sqlite3
import threading
import time

import pytest

from conftest import EDGE, copy_case, golden_case_folder, run_extract
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


# ---- forced interleavings, through the real CLI ------------------------------------------
#
# A hook (a sitecustomize module on the PYTHONPATH of `extract`) holds the scan thread at a
# chosen point until the main thread reaches another, with events: the bad orders are made
# every time, not waited for.

HOOKS = '''
import os, sys, threading
from extractor import profile, summary
from extractor.errors import ProfileError

pass_ended = threading.Event()   # the pass raised, in the main thread
main_waits = threading.Event()   # since then, the main thread waits for the scan thread
at_query = threading.Event()     # the scan thread is about to start a query

def _waiting(original):
    def wait(self, *args, **kwargs):
        if pass_ended.is_set() and threading.current_thread() is threading.main_thread():
            main_waits.set()
        return original(self, *args, **kwargs)
    return wait

threading.Event.wait = _waiting(threading.Event.wait)
threading.Thread.join = _waiting(threading.Thread.join)

_pass = summary._pass

def failing_pass(*args, **kwargs):
    try:
        if os.environ["HOOK"] == "cancel-before-a-query":
            at_query.wait()
            raise KeyboardInterrupt  # Ctrl-C during the pass
        return _pass(*args, **kwargs)
    finally:
        pass_ended.set()

summary._pass = failing_pass

if os.environ["HOOK"] == "thread-late":
    # The scan thread starts its work only once the pass has failed and the main
    # thread waits for it.
    _run = profile.TableScans._run

    def late_run(self):
        main_waits.wait()
        _run(self)

    profile.TableScans._run = late_run

if os.environ["HOOK"] == "cancel-before-a-query":
    # The scan thread has decided to run its next query; the cancel comes (and the main
    # thread waits) before the query starts.
    def slow_aggregate(self):
        at_query.set()
        main_waits.wait()
        try:
            self._one_row({long_query!r})
            outcome = "ran to its end"
        except ProfileError as exc:
            outcome = "stopped: " + str(exc)
        with open(os.environ["HOOK_OUT"], "w") as out:
            out.write(outcome)
        return {{}}

    profile.Profile.exchange_memory_per_tile = slow_aggregate
'''

# Long enough that running it to its end shows (seconds on a slow machine), short enough
# that a test that fails does not hang.
COUNT_QUERY = LONG_QUERY.replace("200000000", "3000000")


def _hooked_extract(tmp_path, hook, profile, *args):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HOOKS.format(long_query=COUNT_QUERY))
    out = tmp_path / "hook-out.txt"
    result = run_extract(profile, "-o", tmp_path / "summary.json", "--no-pva", *args,
                         pva=False, env={"PYTHONPATH": str(hooks), "HOOK": hook,
                                         "HOOK_OUT": str(out)})
    return result, (out.read_text() if out.exists() else None)


def _spoil(profile, *statements):
    db = sqlite3.connect(str(profile))
    with db:
        for statement in statements:
            db.execute(statement)
    db.close()


def test_the_start_end_error_comes_first_even_when_the_thread_starts_late(tmp_path):
    # Two faults: a start/end ingredient that is text (the check's error, which comes
    # first) and cycles that are text (the pass's error). The scan thread is held until
    # the pass has failed and the main thread waits for the check: the check must still
    # run, and its error be the one reported.
    profile = copy_case(golden_case_folder(), tmp_path / "both")
    _spoil(profile, "UPDATE steps_by_ipu SET cycles = 'many'",
           "UPDATE steps_by_ipu SET cycles_base = 'soon' WHERE rowid = "
           "(SELECT max(rowid) FROM steps_by_ipu)")
    result, _ = _hooked_extract(tmp_path, "thread-late", profile)
    assert result.code == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result
    assert re.match(r"extract: error: .*profile\.pop: step \d+: steps_by_ipu\.cycles_base "
                    r"is text 'soon', not a number$", lines[0]), result
    assert not (tmp_path / "summary.json").exists()


def test_the_pass_error_when_the_check_finds_nothing_and_the_thread_starts_late(tmp_path):
    # The same late thread with only the pass's fault: its error is reported (the check
    # ran and found nothing), and the command ends.
    profile = copy_case(golden_case_folder(), tmp_path / "one")
    _spoil(profile, "UPDATE steps_by_ipu SET cycles = 'many'")
    result, _ = _hooked_extract(tmp_path, "thread-late", profile)
    assert result.code == 1, result
    assert re.match(r"extract: error: .*profile\.pop: step \d+: steps_by_ipu\.cycles is "
                    r"text 'many', not a whole number$", result.stderr.strip()), result


def test_a_cancel_just_before_a_query_starts_still_stops_it(tmp_path):
    # Ctrl-C during the pass lands after the scan thread decided to run a query and
    # before SQLite started it (an interrupt then is ignored): the query must stop at
    # once all the same, not run to its end.
    profile = copy_case(golden_case_folder(), tmp_path / "int")
    result, outcome = _hooked_extract(tmp_path, "cancel-before-a-query", profile)
    assert result.code == 130, result
    assert outcome is not None and outcome.startswith("stopped: "), outcome
    assert outcome.endswith("profile.pop: SQLite: interrupted"), outcome
    assert not (tmp_path / "summary.json").exists()
