"""Bad input that needs more than a damaged file: writers holding locks, journals beside
the profile, permissions, full disks, hostile names in a batch, odd rules files."""

import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_bad_input import check_error_line, folder_state

from support import badinput as bad
from support.cases import copy_case, sha256
from support.checks import index_by, index_lines, json_bytes
from support.cli import invoke_extract, run_extract, without_root_privileges
from support.paths import EDGE, REPO


def base_bytes(label: str) -> bytes:
    return json_bytes(bad.base_summary(label))


# ---- writers, journals, WAL -----------------------------------------------------------

WRITER = r"""
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN " + sys.argv[2])
db.execute("UPDATE steps_by_ipu SET cycles = cycles + 1")   # uncommitted
print("holding", flush=True)
time.sleep(60)
"""


def _hold_lock(profile: Path, how: str):
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(profile), how], stdout=subprocess.PIPE
    )
    assert writer.stdout.readline() == b"holding\n"
    return writer


def test_profile_with_an_open_write_transaction_gives_the_committed_summary(tmp_path):
    # A writer holding a RESERVED lock (BEGIN IMMEDIATE, changes not committed) lets
    # readers read the committed data: that is a complete profile, so it is extracted.
    profile = bad.write_base(tmp_path / "case")
    writer = _hold_lock(profile, "IMMEDIATE")
    try:
        before = sha256(profile)
        result = invoke_extract(profile, "-o", "-")
        assert result.code == 0, result
        assert result.stdout == base_bytes(str(profile))
        assert sha256(profile) == before
    finally:
        writer.kill()
        writer.wait()


def test_profile_locked_exclusively_says_locked_without_hanging(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    writer = _hold_lock(profile, "EXCLUSIVE")
    try:
        out = tmp_path / "summary.json"
        started = time.monotonic()
        result = run_extract(profile, "-o", out, timeout=30)
        took = time.monotonic() - started
        assert result.code == 1, result
        check_error_line(result.stderr, str(profile), r"^locked: another process is writing")
        assert took < 10
        assert not out.exists()
    finally:
        writer.kill()
        writer.wait()


CRASHING_WRITER = r"""
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size = 1")          # spill changed pages into the file
db.execute("BEGIN")
db.execute("UPDATE steps SET type = 'X'")
db.execute("INSERT INTO vars_info SELECT * FROM vars_info")
db.execute("INSERT INTO steps_by_ipu SELECT * FROM steps_by_ipu")
os._exit(0)                                  # die mid-transaction: a hot journal stays
"""


def test_hot_journal_is_an_error_and_both_files_stay_as_they_are(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(profile)], check=True)
    journal = Path(str(profile) + "-journal")
    assert journal.exists() and journal.stat().st_size > 0
    before = folder_state(profile.parent)
    result = invoke_extract(profile, "-o", tmp_path / "s.json")
    assert result.code == 1, result
    check_error_line(result.stderr, str(profile), r"^a hot journal \(profile.pop-journal\)")
    assert folder_state(profile.parent) == before
    # In a batch it is skipped with a note (a journal beside it: still being written).
    result = invoke_extract(tmp_path / "case", "-o", tmp_path / "out")
    assert "profile.pop-journal beside it: still being written, skipped" in result.stderr
    assert folder_state(profile.parent) == before


def _to_wal(profile: Path) -> None:
    db = sqlite3.connect(str(profile))
    assert db.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    db.close()
    assert sorted(p.name for p in profile.parent.iterdir()) == ["profile.pop", "pva-double.json"]


def test_wal_profile_in_a_read_only_folder_leaves_nothing_beside_it(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    _to_wal(profile)
    before = folder_state(profile.parent)
    profile.chmod(0o444)
    profile.parent.chmod(0o555)
    try:
        result = invoke_extract(profile, "-o", tmp_path / "s.json")
        assert result.code == 0, result
        assert (tmp_path / "s.json").read_bytes() == base_bytes(str(profile))
        assert folder_state(profile.parent) == before  # no -wal, no -shm
    finally:
        profile.parent.chmod(0o755)
    # In a writable folder too (where SQLite would otherwise create -wal and -shm).
    result = invoke_extract(profile, "-o", tmp_path / "s.json")
    assert result.code == 0, result
    assert folder_state(profile.parent) == before


def test_wal_profile_with_its_log_beside_it_is_an_error(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    _to_wal(profile)
    # Commit into the log and leave it there (a writer that has not checkpointed).
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            r"""
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA wal_autocheckpoint = 0")
db.execute("UPDATE memory_by_tile SET total = total + 1")
print("committed", flush=True)
time.sleep(60)
""",
            str(profile),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout.readline() == b"committed\n"
        before = folder_state(profile.parent)
        assert "profile.pop-wal" in before
        result = invoke_extract(profile, "-o", tmp_path / "s.json")
        assert result.code == 1, result
        check_error_line(result.stderr, str(profile), r"^a write-ahead log \(profile.pop-wal\)")
        assert folder_state(profile.parent) == before
    finally:
        writer.kill()
        writer.wait()


# ---- permissions, folders, links ----------------------------------------------------


def _require_permissions():
    """The command prefix under which permissions are enforced; skips the test without."""
    prefix = without_root_privileges()
    if prefix is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    return prefix


def _run_without_root(prefix, args, cwd=None):
    """Run extract ARGS under `prefix` with the pva stand-in: (exit code, stderr)."""
    done = run_extract(*args, cwd=cwd, prefix=prefix)
    return done.code, done.stderr


def test_unreadable_profile_is_permission_denied(tmp_path):
    prefix = _require_permissions()
    profile = bad.write_base(tmp_path / "case")
    profile.chmod(0)
    try:
        code, stderr = _run_without_root(prefix, [profile, "-o", tmp_path / "s.json"])
    finally:
        profile.chmod(0o644)
    assert code == 1, stderr
    check_error_line(stderr, str(profile), r"^permission denied$")
    assert not (tmp_path / "s.json").exists()


def test_directory_named_profile_pop(tmp_path):
    folder = tmp_path / "run" / "profile.pop"
    folder.mkdir(parents=True)
    result = invoke_extract(folder, "-o", tmp_path / "s.json")
    assert result.code == 1, result
    check_error_line(result.stderr, str(folder), r"^is a directory, not a profile$")
    assert not (tmp_path / "s.json").exists()


def test_symlink_loop_profile(tmp_path):
    link = tmp_path / "profile.pop"
    link.symlink_to("profile.pop")
    result = invoke_extract(link, "-o", tmp_path / "s.json")
    assert result.code == 1, result
    check_error_line(result.stderr, str(link), r"^symbolic link loop$")


# ---- writes -------------------------------------------------------------------------


def _limit_file_size(limit: int):
    def apply():
        # Writes past `limit` bytes fail with EFBIG instead of killing the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _run_limited(args, limit, cwd=None):
    done = run_extract(*args, cwd=cwd, preexec_fn=_limit_file_size(limit))
    return done.code, done.stderr


def test_full_disk_keeps_the_previous_summary(tmp_path):
    # A golden summary is ~5 kB: a 1 kB file size limit makes its write fail (EFBIG),
    # as a full disk fails it (ENOSPC) -- the same OSError path.
    case = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    out = tmp_path / "out" / "summary.json"
    out.parent.mkdir()
    out.write_bytes(b"previous\n")
    code, stderr = _run_limited([case, "-o", out], 1024)
    assert code == 1, stderr
    check_error_line(stderr, str(out), r"^cannot write: File too large$")
    assert out.read_bytes() == b"previous\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["summary.json"]


def test_full_disk_in_a_batch_keeps_previous_outputs_and_the_index(tmp_path):
    for name in ("a", "b", "c"):
        copy_case(EDGE / "multi-ipu", tmp_path / "runs" / name)
    first = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert first.code == 0, first
    out = tmp_path / "out"
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    index_before = (out / "index.jsonl").read_bytes()
    code, stderr = _run_limited(["runs", "-o", "out", "--force"], 1024, cwd=tmp_path)
    assert code == 1, stderr
    assert "Traceback" not in stderr
    # The first summary cannot be written, nor its index line: the batch stops, saying so.
    errors = [line for line in stderr.splitlines() if line.startswith("extract: error: ")]
    assert errors == ["extract: error: out/index.jsonl: cannot write: File too large"], stderr
    assert (out / "index.jsonl").read_bytes() == index_before
    for path in out.rglob("summary.json"):
        assert json.loads(path.read_bytes())["qkv_executions"] == 2
    assert {p.name: p.read_bytes() for p in out.rglob("summary.json")} == {
        k: v for k, v in before.items() if k == "summary.json"
    }
    assert [p for p in out.rglob("*partial*")] == []
    # A rerun with room again finds every profile up to date.
    again = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert again.stderr.splitlines()[-1] == "0 extracted, 3 up to date, 0 failed", again


def _tiny_tmpfs(where: Path):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(where)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    return done.returncode == 0


def test_a_really_full_disk(tmp_path):
    disk = tmp_path / "disk"
    if not _tiny_tmpfs(disk):
        pytest.skip("cannot mount a tmpfs here (needs root): covered by the file size limit")
    try:
        (disk / "filler").write_bytes(b"x" * 4096)
        out = disk / "summary.json"
        out.write_bytes(b"previous\n")
        while True:  # fill the rest of the disk
            try:
                with open(str(disk / "more"), "ab") as handle:
                    handle.write(b"x" * 1024)
            except OSError:
                break
        case = copy_case(EDGE / "multi-ipu", tmp_path / "case")
        result = invoke_extract(case, "-o", out)
        assert result.code == 1, result
        check_error_line(result.stderr, str(out), r"^cannot write: No space left on device$")
        assert out.read_bytes() == b"previous\n"
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "more", "summary.json"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)


HOSTILE_FOLDERS = [
    "...",
    "-o",
    "a\nb",
    " lead",
    "tab\there",
    "\u00e9t\u00e9",
    "x" * 200,
    ".hidden",
    "a;rm -rf x",
    "$(touch pwned)",
]


def test_hostile_folder_names_stay_inside_the_output_folder(tmp_path):
    runs = tmp_path / "runs"
    for name in HOSTILE_FOLDERS:
        copy_case(EDGE / "one-anchor", runs / name / "in")
    result = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert result.code == 0, result
    out = tmp_path / "out"
    real_out = os.path.realpath(str(out))
    written = sorted(out.rglob("summary.json"))
    assert len(written) == len(HOSTILE_FOLDERS)
    for path in written:
        assert os.path.realpath(str(path)).startswith(real_out + os.sep)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "runs"]
    entries = index_lines(out)
    assert sorted(e["output"] for e in entries) == sorted(
        "out/{}/in/summary.json".format(n) for n in HOSTILE_FOLDERS
    )


def test_index_symlink_is_not_written_through(tmp_path):
    copy_case(EDGE / "one-anchor", tmp_path / "runs" / "a")
    (tmp_path / "out").mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me\n")
    (tmp_path / "out" / "index.jsonl").symlink_to(victim)
    result = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert result.code == 1, result
    assert "extract: error: out/index.jsonl: is a symbolic link" in result.stderr
    assert victim.read_bytes() == b"keep me\n"


# ---- rules files the existing tests do not cover -------------------------------------


@pytest.mark.parametrize("case", ["not utf-8", "a folder", "empty"])
def test_odd_rules_files(tmp_path, case):
    rules = tmp_path / "rules.toml"
    if case == "not utf-8":
        rules.write_bytes(b'fallback = "\xff"\n')
        pattern = r"not UTF-8 text"
    elif case == "a folder":
        rules.mkdir()
        pattern = r"cannot read: Is a directory"
    else:
        rules.write_bytes(b"")
        pattern = r"missing key 'fallback'"
    profile = bad.write_base(tmp_path / "case")
    result = invoke_extract(profile, "-o", tmp_path / "s.json", "--rules", rules)
    assert result.code == 2, result
    check_error_line(result.stderr, str(rules), pattern)
    assert not (tmp_path / "s.json").exists()


def test_bad_rules_stop_a_batch_before_anything_is_written(tmp_path):
    copy_case(EDGE / "one-anchor", tmp_path / "runs" / "a")
    rules = tmp_path / "rules.toml"
    rules.write_text(
        (REPO / "stage_rules.toml")
        .read_text()
        .replace('kernel = "/Convolve$"', 'kernel = "(/Convolve$"')
    )
    result = invoke_extract("runs", "-o", "out", "--rules", rules, cwd=tmp_path)
    assert result.code == 2, result
    check_error_line(result.stderr, str(rules), r"selector 'kernel' is not a valid regular")
    assert not (tmp_path / "out").exists()


def test_unwritable_output_folder_keeps_the_previous_summary(tmp_path):
    prefix = _require_permissions()
    profile = bad.write_base(tmp_path / "case")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "summary.json").write_bytes(b"previous\n")
    locked.chmod(0o555)
    try:
        code, stderr = _run_without_root(prefix, [profile, "-o", locked / "summary.json"])
    finally:
        locked.chmod(0o755)
    assert code == 1, stderr
    check_error_line(stderr, str(locked / "summary.json"), r"^cannot write: Permission denied$")
    assert sorted(p.name for p in locked.iterdir()) == ["summary.json"]
    assert (locked / "summary.json").read_bytes() == b"previous\n"


def test_unreadable_and_locked_profiles_in_a_batch_of_good_ones(tmp_path):
    # The two cases above, inside one batch: the unreadable one fails with its own line
    # and reason; the locked one has its writer's -journal beside it, so the batch skips it
    # as still being written (a note, no index line); every good profile is still
    # extracted and indexed; no input changes.
    prefix = _require_permissions()
    runs = tmp_path / "runs"
    good = [bad.write_base(runs / name) for name in ("a-good", "m-good", "z-good")]
    unreadable = bad.write_base(runs / "b-unreadable")
    locked = bad.write_base(runs / "c-locked")
    hashes = {p: sha256(p) for p in good + [locked]}
    # Lock first: the lock holder must read the file before it becomes unreadable.
    writer = _hold_lock(locked, "EXCLUSIVE")
    unreadable.chmod(0)
    try:
        code, stderr = _run_without_root(
            prefix, ["runs", "-o", "out", "-j", "2"], cwd=str(tmp_path)
        )
    finally:
        unreadable.chmod(0o644)
        writer.kill()
        writer.wait()
    assert code == 1, stderr
    lines = stderr.splitlines()
    assert "extract: error: runs/b-unreadable/profile.pop: permission denied" in lines
    assert (
        "extract: note: runs/c-locked/profile.pop: profile.pop-journal beside it: "
        "still being written, skipped"
    ) in lines
    assert lines[-1] == "3 extracted, 0 up to date, 1 failed"
    entries = index_by(tmp_path / "out", "profile")
    for path in good:
        label = "runs/{}/profile.pop".format(path.parent.name)
        assert entries[label]["status"] == "ok"
        written = (tmp_path / "out" / path.parent.name / "summary.json").read_bytes()
        assert written == base_bytes(label)
    assert entries["runs/b-unreadable/profile.pop"]["status"] == "failed"
    assert "permission denied" in entries["runs/b-unreadable/profile.pop"]["reason"]
    assert "runs/c-locked/profile.pop" not in entries
    assert not (tmp_path / "out" / "b-unreadable").exists()
    assert not (tmp_path / "out" / "c-locked").exists()
    assert {p: sha256(p) for p in good + [locked]} == hashes
