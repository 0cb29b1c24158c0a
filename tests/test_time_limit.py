"""--timeout bounds a single run in the process that does the work, whatever it is doing
when time runs out: an SQL query running in SQLite, the Python pass (a stage rule that
backtracks catastrophically), or the writing of the output. Each time: exit 1, one line
naming the profile being read (all of the command's profiles once none is being read),
nothing on stdout, no temporary file, no folder the run made, the inputs unchanged, and
no fork. Only a pva whose calls are compiled code (the SDK's C++) keeps the watching
parent process: there the line names the profile the child was reading, too. A read
that no signal reaches (stuck in the kernel) is ended by the watchdog thread, GRACE
seconds past the limit, with the same line, and the two never both act (the orders
forced in-process below, the watchdog's grace made short).

Every run is a real `extract` process, held where the stage is by sitecustomize code
(support.timelimits, support.held): no timing guess decides which stage it is in."""

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from extractor import deadline
from support.cases import copy_case
from support.checks import partial_files
from support.cli import commands_taking, extract_command, run_extract
from support.held import children, killed_at_exit, start_held
from support.paths import EDGE
from support.timelimits import (
    FORKS,
    SLOW_SQL,
    STUCK_READ,
    TIMEOUT_COMMANDS,
    command_words,
    compiled_pva,
    evil_exchange_profile,
    evil_profile,
    evil_rules,
    evil_stage_rules,
    forks,
    hooked,
)

ENDS_WITHIN = 60
STAGES = ("sql", "python", "writing")


def test_every_command_with_a_timeout_is_tried():
    assert set(TIMEOUT_COMMANDS) == commands_taking("timeout")


def _digests(folder: Path) -> dict:
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _inputs(tmp_path: Path, stage: str, command: str = ""):
    """(profile, other, extra options): for the Python pass, the second profile has a
    name that backtracks under the rules given (for extract memory, an exchange's name,
    which its stage rules are searched in)."""
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "in" / "a")
    if stage == "python" and command == "memory":
        other = evil_exchange_profile(tmp_path / "in" / "b", EDGE / "multi-ipu")
        return profile, other, ["--rules", evil_stage_rules(tmp_path / "in")]
    if stage == "python":
        other = evil_profile(tmp_path / "in" / "b")
        return profile, other, ["--rules", evil_rules(tmp_path / "in")]
    return profile, copy_case(EDGE / "multi-ipu", tmp_path / "in" / "b"), []


def _named(command: str, stage: str, profile: Path, other: Path) -> str:
    """Who the error names: the profile being read; past the reading (the writing), all
    of the command's profiles."""
    several = "OTHER" in TIMEOUT_COMMANDS[command]
    if not several:
        return str(other if stage == "python" else profile)
    if stage == "sql":
        return str(profile)  # the first query is the first profile's
    if stage == "python":
        return str(other)
    return "{} and {}".format(profile, other)


def _held(tmp_path: Path, args, hooks_folder: Path) -> subprocess.CompletedProcess:
    run = start_held(
        tmp_path, args, hooks=FORKS, env={"EXTRACT_TEST_FORKS": str(hooks_folder / "forks")}
    )
    with killed_at_exit(run):
        stdout, stderr = run.communicate(timeout=ENDS_WITHIN)
    return subprocess.CompletedProcess(args, run.returncode, stdout, stderr.decode())


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("command", sorted(TIMEOUT_COMMANDS))
def test_the_time_limit_ends_a_run_at_each_stage(tmp_path, command, stage):
    profile, other, extra = _inputs(tmp_path, stage, command)
    if "OTHER" not in TIMEOUT_COMMANDS[command] and stage == "python":
        profile = other  # the one profile is the one that hangs
    out = tmp_path / "out" / "new" / "sub" / "result.out"
    (tmp_path / "out").mkdir()
    before = _digests(tmp_path / "in")
    hooks = tmp_path / "hooks"
    limit = "5" if stage == "writing" else "1"
    args = command_words(command, profile, other) + extra + ["-o", out, "--timeout", limit]
    if stage == "writing":  # held at its output's rename, its temporary file written
        hooks.mkdir()
        done = _held(tmp_path, args, hooks)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    else:
        env = hooked(hooks, SLOW_SQL if stage == "sql" else "")
        result = run_extract(*args, env=env, timeout=ENDS_WITHIN)
        code, stdout, stderr = result.code, result.stdout, result.stderr
    assert code == 1, stderr
    assert stderr == "extract: error: {}: took longer than {} s (--timeout): ended\n".format(
        _named(command, stage, profile, other), limit
    )
    assert stdout == b""
    assert list((tmp_path / "out").iterdir()) == []  # no folder the run made
    assert partial_files(tmp_path) == []
    assert _digests(tmp_path / "in") == before
    assert forks(hooks) == []  # the limit was kept without a second process


def test_a_run_with_the_python_pva_never_forks(tmp_path):
    # The default limit (600 s), a run that succeeds: extract alone, in one process.
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    for command in sorted(TIMEOUT_COMMANDS):
        hooks = tmp_path / "hooks-{}".format(command)
        out = tmp_path / "{}.out".format(command)
        args = command_words(command, profile, profile) + ["-o", out]
        result = run_extract(*args, env=hooked(hooks, ""), timeout=ENDS_WITHIN)
        assert result.code == 0, (command, result)
        assert forks(hooks) == [], command


# ---- a pva in compiled code: the watching parent stays -------------------------------


def test_a_compiled_pva_is_watched_from_a_second_process(tmp_path):
    # The same bytes as in one process; one fork, that of the watched child.
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    plain = run_extract(profile, "-o", "-")
    hooks = tmp_path / "hooks"
    watched = run_extract(profile, "-o", "-", env=hooked(hooks, "", pva=compiled_pva(tmp_path)))
    assert watched.code == plain.code == 0, watched
    assert watched.stdout == plain.stdout
    assert len(forks(hooks)) == 1
    # --no-pva, or blocks (SQL only), calls no pva: no fork.
    hooks = tmp_path / "hooks-no-pva"
    env = hooked(hooks, "", pva=compiled_pva(tmp_path))
    for args in ([profile, "--no-pva"], ["blocks", profile]):
        result = run_extract(*args, "-o", "-", env=env)
        assert result.code == 0, (args, result)
    assert forks(hooks) == []


@pytest.mark.parametrize("command", ["diff", "trace"])
def test_a_watched_child_past_its_limit_names_the_profile_it_was_reading(tmp_path, command):
    # The child reports each profile it starts reading to its parent: the second here.
    profile, other, extra = _inputs(tmp_path, "python")
    out = tmp_path / "out" / "new" / "result.out"
    (tmp_path / "out").mkdir()
    before = _digests(tmp_path / "in")
    hooks = tmp_path / "hooks"
    args = command_words(command, profile, other) + extra + ["-o", out, "--timeout", "2"]
    env = hooked(hooks, "", pva=compiled_pva(tmp_path))
    result = run_extract(*args, env=env, timeout=ENDS_WITHIN)
    assert result.code == 1, result
    assert result.stderr == "extract: error: {}: took longer than 2 s (--timeout): ended\n".format(
        other
    )
    assert len(forks(hooks)) == 1
    assert list((tmp_path / "out").iterdir()) == []
    assert partial_files(tmp_path) == []
    assert _digests(tmp_path / "in") == before


@pytest.mark.parametrize("command", sorted(commands_taking("no_pva") & set(TIMEOUT_COMMANDS)))
def test_a_killed_child_leaves_no_temporary_file_nor_folder(tmp_path, command):
    # As pva's C++ core crashing would, or the kernel's OOM killer: the watching parent
    # reports it, and sweeps what the child was writing (held at its rename). Only the
    # commands that read pva facts have one.
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    output = tmp_path / "new" / "sub" / "result.out"
    args = command_words(command, profile, profile) + ["-o", output]
    run = start_held(tmp_path, args, pva=compiled_pva(tmp_path / "pva"))
    with killed_at_exit(run):
        (child,) = children(run.pid)
        os.kill(child, signal.SIGKILL)
        _stdout, stderr = run.communicate(timeout=ENDS_WITHIN)
    assert run.returncode == 1, stderr
    assert stderr.decode() == (  # the profile given twice is named once
        "extract: error: {}: the process extracting it died (killed by SIGKILL)\n".format(profile)
    )
    assert partial_files(tmp_path) == []
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_during_a_query_ends_like_ctrl_c(tmp_path, signum):
    # The stop signal's handler runs inside SQLite's progress handler, where the sqlite3
    # module drops what it raises and aborts the query: the stop is raised again, not
    # taken for the profile's "SQLite: interrupted".
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    started = tmp_path / "started"
    env = dict(os.environ, **hooked(tmp_path / "hooks", SLOW_SQL))
    env["EXTRACT_TEST_SQL_STARTED"] = str(started)
    out = tmp_path / "out" / "summary.json"
    run = subprocess.Popen(
        extract_command() + [str(profile), "-o", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with killed_at_exit(run):
        end = time.monotonic() + ENDS_WITHIN
        while not started.exists():
            assert run.poll() is None and time.monotonic() < end, run.communicate()
            time.sleep(0.02)
        time.sleep(0.2)  # well inside the query: it counts for hours
        run.send_signal(signum)
        _stdout, stderr = run.communicate(timeout=ENDS_WITHIN)
    assert run.returncode == 128 + signum, stderr
    words = "interrupted" if signum == signal.SIGINT else "terminated by SIGTERM"
    assert stderr.decode() == "extract: error: {}\n".format(words)
    assert not (tmp_path / "out").exists()
    assert forks(tmp_path / "hooks") == []


# One command: every command's limit is run/single.bounded's, the watchdog's included
# (each run here waits out the limit and the grace, 11 s).
@pytest.mark.parametrize("command", ["run"])
def test_a_read_stuck_where_no_signal_reaches_is_ended_by_the_watchdog(tmp_path, command):
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "in" / "a")
    other = copy_case(EDGE / "multi-ipu", tmp_path / "in" / "b")
    before = _digests(tmp_path / "in")
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "new" / "result.out"
    hooks = tmp_path / "hooks"
    env = hooked(hooks, STUCK_READ)
    env["EXTRACT_TEST_STUCK"] = str(hooks / "stuck")
    no_pva = [] if command == "blocks" else ["--no-pva"]  # blocks reads SQL only
    args = command_words(command, profile, other) + no_pva + ["-o", out, "--timeout", "1"]
    started = time.monotonic()
    result = run_extract(*args, env=env, timeout=ENDS_WITHIN)
    took = time.monotonic() - started
    assert (hooks / "stuck").exists()  # it was stuck: the watchdog ended it
    assert result.code == 1, result.stderr
    assert result.stderr == (
        "extract: error: {}: took longer than 1 s (--timeout): ended\n".format(profile)
    )
    assert result.stdout == b""
    assert took >= 1 + deadline.GRACE
    assert list((tmp_path / "out").iterdir()) == []
    assert partial_files(tmp_path) == []
    assert _digests(tmp_path / "in") == before
    assert forks(hooks) == []


# The watchdog against the main thread, in-process, each order forced: the grace short.
WATCHDOG_ORDER = r"""
import signal, sys, threading, time
from extractor import deadline
from extractor.errors import ProfileError
deadline.GRACE = 0.3
order = sys.argv[1]
fired = threading.Event()
def stuck(line):
    print("watchdog: " + line, flush=True)
    fired.set()
    time.sleep(1.5)  # as the process ends: the main thread must not act meanwhile
    print("exit", flush=True)
    import os; os._exit(7)
try:
    with deadline.time_limit(0.3, ["p.pop"], [], on_stuck=stuck):
        if order == "watchdog-first":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            fired.wait(10)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})  # comes back now
            time.sleep(0.5)
        elif order == "alarm-first":
            time.sleep(5)  # Python: the alarm's handler runs at 0.3 s
        else:  # "ends-in-time"
            pass
    print("main: done", flush=True)
except ProfileError as exc:
    print("main: " + str(exc), flush=True)
time.sleep(0.3 + 0.3 + 0.5)  # past the watchdog's time
print("main: end", flush=True)
"""


@pytest.mark.parametrize(
    "order, lines, code",
    [
        # the watchdog fires; the main thread, back in Python meanwhile, waits on it
        (
            "watchdog-first",
            ["watchdog: p.pop: took longer than 0.3 s (--timeout): ended", "exit"],
            7,
        ),
        # the alarm's handler ends the run: the watchdog never acts
        ("alarm-first", ["main: p.pop: took longer than 0.3 s (--timeout): ended", "main: end"], 0),
        # the run ends before its limit: the watchdog never acts
        ("ends-in-time", ["main: done", "main: end"], 0),
    ],
)
def test_the_watchdog_and_the_main_thread_never_both_act(order, lines, code):
    import sys

    done = subprocess.run(
        [sys.executable, "-c", WATCHDOG_ORDER, order],
        check=False,
        capture_output=True,
        text=True,
        timeout=ENDS_WITHIN,
    )
    assert done.stdout.splitlines() == lines, done.stderr
    assert done.returncode == code, done.stderr


# The progress handler ends a query while a profile is read; the alarm's handler, which
# the same moment made pending, runs once that reading is over. Forced in-process.
BOTH_SEE_THE_END = r"""
import signal, time
from extractor import deadline
from extractor.errors import ProfileError
try:
    with deadline.time_limit(0.3, ["a.pop", "b.pop"], []):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # the alarm waits
        try:
            with deadline.reading("a.pop"):
                time.sleep(0.5)
                assert deadline._progress() == 1  # SQLite's handler: the query ends
                raise RuntimeError("the query's error, unwinding")
        except RuntimeError:
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})  # its handler runs
        time.sleep(1)
    print("not ended")
except ProfileError as exc:
    print(exc)
"""


def test_an_end_seen_twice_names_the_profile_read_when_time_ran_out():
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BOTH_SEE_THE_END],
        check=False,
        capture_output=True,
        text=True,
        timeout=ENDS_WITHIN,
    )
    assert done.stdout == "a.pop: took longer than 0.3 s (--timeout): ended\n", done.stderr
