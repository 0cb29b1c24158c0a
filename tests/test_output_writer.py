"""The writer of every command's output and its clean-up look in one place: a run
ended mid-write (--timeout; a killed child: test_time_limit.py) leaves no temporary
file, also when -o is a symbolic link (the temporary file is beside the file the link
points to); a run that fails leaves none of the folders it would have made for its
output; and -o onto a device that is not there says what it is.

A run is held, through an audit hook, at the moment its output is about to be renamed
into place (its temporary file written whole), so that it is always ended mid-write:
no timing guess (test_stop_signals.py does the same)."""

import os
import subprocess
from pathlib import Path

import pytest

from support import badinput as bad
from support.cases import copy_case
from support.checks import one_error, partial_files
from support.cli import invoke_extract, run_extract
from support.held import killed_at_exit, start_held
from support.paths import EDGE
from support.timelimits import TIMEOUT_COMMANDS, command_words

ENDS_WITHIN = 60

#: The commands that take -o and --timeout (test_time_limit.py checks the list).
COMMANDS = TIMEOUT_COMMANDS


def _command(name: str, profile: Path) -> list:
    return command_words(name, profile, profile)


def held_run(tmp_path: Path, args, on_hold) -> subprocess.CompletedProcess:
    """Run extract ARGS held at its output's rename (support.held), call
    `on_hold(process)` there, and wait for it to end."""
    run = start_held(tmp_path, args)
    with killed_at_exit(run):
        on_hold(run)
        stdout, stderr = run.communicate(timeout=ENDS_WITHIN)
    return subprocess.CompletedProcess(args, run.returncode, stdout, stderr.decode())


@pytest.fixture
def linked_output(tmp_path):
    """-o as a symbolic link in out/ to a file in real/ (written before)."""
    real = tmp_path / "real" / "target.out"
    real.parent.mkdir()
    real.write_bytes(b"what was there before\n")
    link = tmp_path / "out" / "link.out"
    link.parent.mkdir()
    link.symlink_to(real)
    return link, real


def _partials_beside(path: Path) -> list:
    return [p for p in partial_files(path.parent) if Path(p).name.startswith("." + path.name)]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_timeout_mid_write_through_a_link_leaves_no_temporary_file(
    tmp_path, linked_output, command
):
    link, real = linked_output
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    seen = []

    def on_hold(run):  # the temporary file is there, beside the link's target
        seen.extend(_partials_beside(real))

    # Held at its rename, the run passes its time limit there (SIGALRM).
    args = _command(command, profile) + ["-o", link, "--timeout", "5"]
    done = held_run(tmp_path, args, on_hold)
    assert len(seen) == 1, seen
    assert done.returncode == 1, done
    assert done.stderr == "extract: error: {}: took longer than 5 s (--timeout): ended\n".format(
        profile
    )
    assert partial_files(tmp_path) == []
    assert real.read_bytes() == b"what was there before\n"
    assert os.readlink(str(link)) == str(real)


# ---- a failed run makes no folder ----------------------------------------------------


def _not_a_profile(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "profile.pop").write_bytes(b"not a profile " * 50)
    return folder / "profile.pop"


def _bad_cycles(folder: Path) -> Path:
    # Read well enough to start writing a trace; the row that fails comes later.
    profile = bad.write_base(folder)
    bad._step_column(7, "cycles", "'abc'")(folder)
    return profile


FAILING = {
    "extract: not a profile": lambda p: [_not_a_profile(p / "case"), "-o", "OUT"],
    "blocks: not a profile": lambda p: ["blocks", _not_a_profile(p / "case"), "-o", "OUT"],
    "trace: not a profile": lambda p: ["trace", _not_a_profile(p / "case"), "-o", "OUT"],
    "trace: a bad row": lambda p: ["trace", _bad_cycles(p / "case"), "-o", "OUT"],
    "trace: no such run": lambda p: [
        "trace",
        copy_case(EDGE / "multi-ipu", p / "case"),
        "--run",
        "99",
        "-o",
        "OUT",
    ],
    "trace --timeout 0: a bad row": lambda p: [
        "trace",
        _bad_cycles(p / "case"),
        "--timeout",
        "0",
        "-o",
        "OUT",
    ],
    "diff: not a profile": lambda p: ["diff", _not_a_profile(p / "case"), "-o", "OUT"],
    "table: not a summary": lambda p: ["table", _not_a_profile(p / "case"), "-o", "OUT"],
    "report: not a summary": lambda p: ["report", _not_a_profile(p / "case"), "-o", "OUT"],
    "compare --chart: not a summary": lambda p: [
        "compare",
        _not_a_profile(p / "case"),
        _not_a_profile(p / "other"),
        "--chart",
        "OUT.svg",
    ],
    "a batch: no such folder": lambda p: [p / "missing", "-o", "OUT"],
}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_failed_run_leaves_no_folder_made_for_its_output(tmp_path, case):
    args = FAILING[case](tmp_path)
    out = tmp_path / "new" / "sub" / "result"
    args = [str(out) + a[3:] if str(a).startswith("OUT") else a for a in args]
    result = run_extract(*args, timeout=ENDS_WITHIN)
    assert result.code in (1, 2), result
    assert not (tmp_path / "new").exists(), result
    assert partial_files(tmp_path) == []


def test_a_failed_write_keeps_a_folder_that_was_there(tmp_path):
    # The folders removed are only those the writer made: new/ was there, new/sub/ not.
    (tmp_path / "new").mkdir()
    profile = _bad_cycles(tmp_path / "case")
    result = invoke_extract("trace", profile, "-o", tmp_path / "new" / "sub" / "t.json")
    assert result.code == 1, result
    assert sorted(os.listdir(str(tmp_path / "new"))) == []


# ---- a device with nothing behind it -------------------------------------------------


def test_dev_tty_without_a_terminal_is_said_to_be_a_device(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    for command in ([], ["blocks"], ["diff", profile]):
        # A new session has no controlling terminal: /dev/tty cannot be opened (ENXIO).
        result = run_extract(
            *command,
            profile,
            "-o",
            "/dev/tty",
            timeout=ENDS_WITHIN,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        one_error(
            result,
            1,
            "/dev/tty: is a character device with no device behind it (No such device or "
            "address; /dev/tty: this process has no controlling terminal): write elsewhere",
        )
