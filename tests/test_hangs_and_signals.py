"""Hostile input that hangs or races:
FIFOs and devices where a profile or rules file belongs, a rules pattern that backtracks
catastrophically (--timeout), two batches on one index, SIGTERM and SIGHUP, workers
whose parent is gone. Every extract here runs as a user runs it, in a subprocess."""

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import badinput as bad
from support.checks import index_by, no_partial_files, the_error_line
from support.cli import extract_command, run_extract
from support.held import children, killed_at_exit
from support.paths import PVA_DOUBLE
from support.timelimits import evil_profile, evil_rules

# Generous limits for a process that must end by itself: only "it ended" is asserted.
ENDS_WITHIN = 60


# ---- a profile whose name makes a pattern backtrack catastrophically -----------------
# (support.timelimits: evil_rules, evil_profile)


def batch_of(root: Path, evil=("b",), good=("a", "c")) -> Path:
    for label in good:
        bad.write_base(root / label)
    for label in evil:
        evil_profile(root / label)
    return root


# ---- only regular files are profiles or rules -------------------------------


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo" / "profile.pop"
    path.parent.mkdir()
    os.mkfifo(str(path))
    return path


def test_a_fifo_profile_is_refused_at_once(fifo, tmp_path):
    result = run_extract(fifo, "-o", tmp_path / "s.json", timeout=ENDS_WITHIN)
    assert result.code == 1, result
    the_error_line(result, "profile.pop: is a FIFO (named pipe), not a regular file")
    assert not (tmp_path / "s.json").exists()
    for command in ("inspect", "stages"):
        result = run_extract(command, fifo, timeout=ENDS_WITHIN)
        assert result.code == 1, result
        the_error_line(result, "is a FIFO (named pipe), not a regular file")


def test_a_symlink_to_a_device_is_not_a_profile(tmp_path):
    # /dev/zero reads as endless zero bytes: inspect used to call it "0 bytes, SQLite".
    link = tmp_path / "profile.pop"
    link.symlink_to("/dev/zero")
    for args in (["inspect", link], ["stages", link], [link, "-o", tmp_path / "s.json"]):
        result = run_extract(*args, timeout=ENDS_WITHIN)
        assert result.code == 1, (args, result)
        the_error_line(result, "is a character device, not a regular file")


def test_a_fifo_rules_file_is_a_usage_error(tmp_path):
    rules = tmp_path / "rules.toml"
    os.mkfifo(str(rules))
    profile = bad.write_base(tmp_path / "case")
    for args in ([profile, "--rules", rules], ["stages", profile, "--rules", rules]):
        result = run_extract(*args, timeout=ENDS_WITHIN)
        assert result.code == 2, (args, result)
        the_error_line(result, "rules.toml: is a FIFO (named pipe), not a regular file")


def test_a_fifo_in_a_batch_fails_alone(tmp_path):
    root = batch_of(tmp_path / "in", evil=())
    (root / "f").mkdir()
    os.mkfifo(str(root / "f" / "profile.pop"))
    out = tmp_path / "out"
    result = run_extract(root, "-o", out, "-j", "2", timeout=ENDS_WITHIN)
    assert result.code == 1, result
    index = index_by(out, "profile")
    assert sorted(index) == [str(root / n / "profile.pop") for n in ("a", "c", "f")]
    assert [index[str(root / n / "profile.pop")]["status"] for n in "acf"] == ["ok", "ok", "failed"]
    assert index[str(root / "f" / "profile.pop")]["reason"].endswith(
        "is a FIFO (named pipe), not a regular file"
    )
    assert "1 failed" in result.stderr.splitlines()[-1]


def test_a_fifo_index_is_refused_at_once(tmp_path):
    root = batch_of(tmp_path / "in", evil=())
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(str(out / "index.jsonl"))
    result = run_extract(root, "-o", out, timeout=ENDS_WITHIN)
    assert result.code == 1, result
    the_error_line(result, "index.jsonl: is a FIFO (named pipe), not a regular file")
    assert not (out / "a").exists()


def test_a_fifo_in_place_of_a_summary_does_not_hold_up_the_next_batch(tmp_path):
    # The up-to-date check reads the summary to hash it: a FIFO there never ended.
    root = batch_of(tmp_path / "in", evil=())
    out = tmp_path / "out"
    assert run_extract(root, "-o", out).code == 0
    (out / "a" / "summary.json").unlink()
    os.mkfifo(str(out / "a" / "summary.json"))
    result = run_extract(root, "-o", out, timeout=ENDS_WITHIN)
    # It ends; and a FIFO in OUTDIR is never replaced (test_output_targets.py): that one fails.
    assert result.stderr.splitlines()[-1] == "0 extracted, 1 up to date, 1 failed", result
    assert stat.S_ISFIFO(os.lstat(str(out / "a" / "summary.json")).st_mode)


# ---- --timeout ---------------------------------------------------------------


# extract blocks classifies every step name too, and extract diff (the profile against
# itself): the same hang, the same limit.
@pytest.mark.parametrize(
    "command, name",
    [([], "summary.json"), (["blocks"], "blocks.json"), (["diff", "PROFILE"], "diff.md")],
    ids=["extract", "blocks", "diff"],
)
def test_a_single_run_past_its_time_limit_ends_in_one_line(tmp_path, command, name):
    profile = evil_profile(tmp_path / "case")
    command = [profile if word == "PROFILE" else word for word in command]
    rules = evil_rules(tmp_path)
    out = tmp_path / "out" / name
    for target in (out, "-"):
        result = run_extract(
            *command, profile, "--rules", rules, "--timeout", "1", "-o", target, timeout=ENDS_WITHIN
        )
        assert result.code == 1, result
        assert (
            result.stderr
            == "extract: error: {}: took longer than 1 s (--timeout): ended\n".format(profile)
        )
        assert result.stdout == b""
    assert not out.parent.exists() or list(out.parent.iterdir()) == []
    no_partial_files(tmp_path)
    bad = run_extract(*command, profile, "--timeout", "-1")
    assert bad.code == 2 and bad.stderr == (
        "extract: error: --timeout -1.0: give a number of seconds (0: no limit)\n"
    ), bad


def test_a_batch_fails_the_profile_past_its_time_limit_and_goes_on(tmp_path):
    # 3 s: a and c take a tenth of that, even on a busy machine.
    root = batch_of(tmp_path / "in")
    rules = evil_rules(tmp_path)
    out = tmp_path / "out"
    result = run_extract(
        root, "-o", out, "--rules", rules, "--timeout", "3", "-j", "2", timeout=ENDS_WITHIN
    )
    assert result.code == 1, result
    index = index_by(out, "profile")
    assert [index[str(root / n / "profile.pop")]["status"] for n in "abc"] == ["ok", "failed", "ok"]
    assert index[str(root / "b" / "profile.pop")][
        "reason"
    ] == "{}: took longer than 3 s (--timeout): ended".format(root / "b" / "profile.pop")
    the_error_line(result, "b/profile.pop: took longer than 3 s (--timeout): ended")
    assert result.stderr.splitlines()[-1] == "2 extracted, 0 up to date, 1 failed"
    assert not (out / "b").exists()
    no_partial_files(out)


def test_timeout_zero_is_no_limit(tmp_path):
    # A pattern that backtracks for a while (2**22 ways) but ends, matching nothing:
    # with no limit, the summary of the installed rules; the default limit (600 s) does
    # not end it either.
    profile = evil_profile(tmp_path / "case", name="a" * 22 + "!")
    rules = evil_rules(tmp_path)
    expected = run_extract(profile, "-o", "-")
    assert expected.code == 0, expected
    for extra in (["--timeout", "0"], []):
        result = run_extract(profile, "--rules", rules, "-o", "-", *extra, timeout=ENDS_WITHIN)
        assert result.code == 0, result
        assert result.stdout == expected.stdout


@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("inf", "inf"), ("-1", "-1.0")])
def test_a_timeout_that_is_not_a_number_of_seconds_is_a_usage_error(tmp_path, value, shown):
    profile = bad.write_base(tmp_path / "case")
    result = run_extract(profile, "--timeout", value, timeout=ENDS_WITHIN)
    assert result.code == 2, result
    assert (
        result.stderr
        == "extract: error: --timeout {}: give a number of seconds (0: no limit)\n".format(shown)
    )


# ---- SIGTERM and SIGHUP ------------------------------------------------------


def _start(args, **kwargs):
    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE))
    return subprocess.Popen(
        extract_command() + [str(a) for a in args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


def _read_until(stream, count: int, needle: bytes) -> list:
    """Lines of `stream` up to the count-th containing `needle` (the batch's progress)."""
    lines, seen = [], 0
    while seen < count:
        line = stream.readline()
        assert line, b"".join(lines)
        lines.append(line)
        seen += needle in line
    return lines


@pytest.mark.parametrize(
    "signum, group", [(signal.SIGTERM, False), (signal.SIGTERM, True), (signal.SIGHUP, True)]
)
def test_a_stopped_batch_ends_like_ctrl_c(tmp_path, signum, group):
    # a and c are done; b does not end in the default time limit (600 s): the stop finds
    # a worker at work.
    # `group`: to every process of the batch, workers too, as a hang-up or `kill -- -PGID`
    # does; they used to print BrokenPipeError tracebacks.
    root = batch_of(tmp_path / "in")
    rules = evil_rules(tmp_path)
    out = tmp_path / "out"
    batch = _start([root, "-o", out, "--rules", rules, "-j", "2"], start_new_session=True)
    try:
        lines = _read_until(batch.stderr, 2, b"] ok: ")
        if group:
            os.killpg(batch.pid, signum)
        else:
            batch.send_signal(signum)
        rest = batch.communicate(timeout=ENDS_WITHIN)[1]
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
            batch.wait()
    stderr = b"".join(lines).decode() + rest.decode()
    assert batch.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr and "Error" not in stderr.replace("extract: error: ", ""), (
        stderr
    )
    assert stderr.splitlines()[-2:] == [
        "2 extracted, 0 up to date, 0 failed",
        "extract: error: terminated by {}: the index lists every profile finished so far".format(
            signal.Signals(signum).name
        ),
    ]
    index = index_by(out, "profile")
    assert sorted(index) == [str(root / n / "profile.pop") for n in "ac"]
    assert all(entry["status"] == "ok" for entry in index.values())
    no_partial_files(out)


def _catches(pid: int, signum: int) -> bool:
    try:
        status = Path("/proc/{}/status".format(pid)).read_text()
    except OSError:
        return False
    mask = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask.split()[1], 16) >> (signum - 1) & 1)


def _wait_for(condition, what: str) -> None:
    # /proc has no event to wait on: poll it, with a generous bound.
    end = time.monotonic() + ENDS_WITHIN
    while not condition():
        assert time.monotonic() < end, what
        time.sleep(0.02)


@pytest.mark.parametrize("diff", [False, True], ids=["extract", "diff"])
@pytest.mark.parametrize(
    "signum, timeout", [(signal.SIGTERM, None), (signal.SIGHUP, None), (signal.SIGTERM, "0")]
)
def test_a_stopped_single_run_ends_like_ctrl_c(tmp_path, signum, timeout, diff):
    # With a time limit (the default) or without, extract extracts in one process (the
    # pva stand-in is Python: no watching parent); it is stopped while its stage rule
    # backtracks. extract diff (a profile against itself) is stopped the same way.
    profile = evil_profile(tmp_path / "case")
    rules = evil_rules(tmp_path)
    out = tmp_path / "out" / "summary.json"
    limit = [] if timeout is None else ["--timeout", timeout]
    command = ["diff", profile] if diff else []
    run = _start(command + [profile, "--rules", rules, "-o", out] + limit)
    with killed_at_exit(run):

        def ready():
            return children(run.pid) == [] and _catches(run.pid, signum)

        _wait_for(ready, "extract never got ready for the signal")
        run.send_signal(signum)
        _stdout, stderr = run.communicate(timeout=ENDS_WITHIN)
    assert run.returncode == 128 + signum, stderr
    assert stderr.decode() == "extract: error: terminated by {}\n".format(
        signal.Signals(signum).name
    )
    assert not out.exists()
    no_partial_files(tmp_path)


# ---- a worker never prints a traceback ----------------------------


def test_a_worker_whose_batch_was_killed_ends_quietly(tmp_path):
    # The batch is killed (SIGKILL: no clean-up) while a worker extracts b, which takes
    # a while (2**23 ways to fail). The worker's answer finds no one: it used to die with
    # a BrokenPipeError traceback. stderr reaches its end when the last worker has ended.
    root = batch_of(tmp_path / "in", evil=(), good=("a",))
    evil_profile(root / "b", name="a" * 23 + "!")
    rules = evil_rules(tmp_path)
    batch = _start([root, "-o", tmp_path / "out", "--rules", rules, "-j", "1"])
    try:
        # With one worker, b is handed to it before a's line is printed.
        lines = _read_until(batch.stderr, 1, b"] ok: ")
        batch.kill()
        rest = batch.communicate(timeout=ENDS_WITHIN)[1]
    finally:
        if batch.poll() is None:
            batch.kill()
            batch.wait()
    stderr = b"".join(lines).decode() + rest.decode()
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    no_partial_files(tmp_path / "out")


# ---- one writer per index file ----------------------------------------------

HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("holding", flush=True)
sys.stdin.read()
"""


def _hold(lock_file: Path):
    """Another process holding `lock_file`'s lock, as a running batch does, until its
    standard input is closed."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert holder.stdout.readline() == b"holding\n"
    return holder


def _release(holder) -> None:
    holder.stdin.close()
    holder.wait(timeout=ENDS_WITHIN)


def test_a_second_batch_on_a_busy_index_is_refused(tmp_path):
    root = batch_of(tmp_path / "in", evil=())
    out = tmp_path / "out"
    assert run_extract(root, "-o", out).code == 0
    before = (out / "index.jsonl").read_bytes()
    holder = _hold(out / ".index.jsonl.lock")
    try:
        for args in ([root, "-o", out, "--force"], ["merge", out]):
            result = run_extract(*args, timeout=ENDS_WITHIN)
            assert result.code == 1, (args, result)
            the_error_line(
                result,
                "{}: another extract (a batch or a merge) is writing this index now".format(
                    out / "index.jsonl"
                ),
            )
            assert (out / "index.jsonl").read_bytes() == before
        # Its shards have index files of their own: they run.
        result = run_extract(root, "-o", out, "--shard", "1/2", timeout=ENDS_WITHIN)
        assert result.code == 0, result
    finally:
        _release(holder)
    result = run_extract(root, "-o", out, "--force", timeout=ENDS_WITHIN)
    assert result.code == 0, result
    assert sorted(index_by(out, "profile")) == [str(root / n / "profile.pop") for n in "ac"]


def test_two_real_batches_on_one_outdir(tmp_path):
    # The first batch is held up by b (within the default time limit); the second is
    # refused and the first, stopped, leaves a whole index.
    root = batch_of(tmp_path / "in")
    rules = evil_rules(tmp_path)
    out = tmp_path / "out"
    first = _start([root, "-o", out, "--rules", rules, "-j", "2"])
    try:
        _read_until(first.stderr, 2, b"] ok: ")
        second = run_extract(root, "-o", out, "--rules", rules, timeout=ENDS_WITHIN)
        assert second.code == 1, second
        the_error_line(second, "another extract (a batch or a merge) is writing")
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=ENDS_WITHIN)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 130
    index = index_by(out, "profile")
    assert sorted(index) == [str(root / n / "profile.pop") for n in "ac"]


def test_a_shard_in_progress_holds_off_a_merge(tmp_path):
    root = batch_of(tmp_path / "in", evil=())
    out = tmp_path / "out"
    for shard in ("1/2", "2/2"):
        assert run_extract(root, "-o", out, "--shard", shard).code == 0
    holder = _hold(out / ".index-shard-2-of-2.jsonl.lock")
    try:
        result = run_extract("merge", out, timeout=ENDS_WITHIN)
        assert result.code == 1, result
        the_error_line(result, "index-shard-2-of-2.jsonl: another extract")
        assert not (out / "index.jsonl").exists()
        # The other shard runs again meanwhile.
        result = run_extract(root, "-o", out, "--shard", "1/2", "--force", timeout=ENDS_WITHIN)
        assert result.code == 0, result
    finally:
        _release(holder)
    result = run_extract("merge", out, timeout=ENDS_WITHIN)
    assert result.code == 0, result
    assert sorted(index_by(out, "profile")) == [str(root / n / "profile.pop") for n in "ac"]


def test_the_lock_file_is_never_followed_through_a_symlink(tmp_path):
    root = batch_of(tmp_path / "in", evil=())
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "elsewhere"
    (out / ".index.jsonl.lock").symlink_to(target)
    result = run_extract(root, "-o", out, timeout=ENDS_WITHIN)
    assert result.code == 1, result
    the_error_line(result, ".index.jsonl.lock: is a symbolic link")
    assert not target.exists()


def _spawned_workers(pid: int) -> list:
    workers = []
    for child in children(pid):
        try:
            command = Path("/proc/{}/cmdline".format(child)).read_bytes()
        except OSError:
            continue
        if b"extractor.run.batch.worker import serve" in command:
            workers.append(child)
    return workers


def test_ctrl_c_while_workers_start_prints_no_traceback(tmp_path):
    # Ctrl-C reaches every process of the terminal's group, workers still importing
    # extract too: they used to die of it with a KeyboardInterrupt traceback.
    root = batch_of(tmp_path / "in", evil=())
    batch = _start([root, "-o", tmp_path / "out", "-j", "2"], start_new_session=True)
    try:
        # A worker whose Python has its Ctrl-C handler and is still importing extract
        # (_worker_main has not yet set Ctrl-C aside).
        _wait_for(
            lambda: any(_catches(pid, signal.SIGINT) for pid in _spawned_workers(batch.pid)),
            "no worker started",
        )
        os.killpg(batch.pid, signal.SIGINT)
        stderr = batch.communicate(timeout=ENDS_WITHIN)[1].decode()
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
            batch.wait()
    assert batch.returncode in (0, 130), stderr  # it may have finished first
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


def test_an_answer_that_cannot_be_pickled_still_reaches_the_index():
    # No real input makes an entry that does not pickle (its values are JSON's), so the
    # worker's guard is checked on its own, over a real pipe: the parent gets a failed
    # entry of plain text, not a worker dead of a PicklingError traceback.
    import multiprocessing

    from extractor.run.batch.discover import BatchItem
    from extractor.run.batch.worker import _answer

    parent, child = multiprocessing.Pipe()
    item = BatchItem(Path("in/p/profile.pop"), "in/p/profile.pop", "p")
    entry = {
        "profile": item.label,
        "output": "out/p/summary.json",
        "status": "ok",
        "size": 1,
        "warnings": [lambda: None],
    }
    assert _answer(child, entry, item)
    got = parent.recv()
    assert got["status"] == "failed" and got["profile"] == item.label
    assert got["reason"].startswith(
        "in/p/profile.pop: unexpected failure: its index entry could not be sent: "
    )
    parent.close()
    assert not _answer(child, entry, item)  # the parent is gone: nothing to tell, quietly


def test_compare_refuses_a_fifo_summary_at_once(tmp_path):
    # A summary is read whole: a FIFO given as one (or found as a folder's summary.json)
    # would block compare forever.
    from support.paths import GOLDEN

    fifo = tmp_path / "a" / "summary.json"
    fifo.parent.mkdir()
    os.mkfifo(str(fifo))
    for argument in (fifo, fifo.parent):
        result = run_extract("compare", GOLDEN / "expected.json", argument, timeout=ENDS_WITHIN)
        assert result.code == 1, result
        the_error_line(result, "summary.json: is a FIFO (named pipe), not a regular file")
        assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode)
