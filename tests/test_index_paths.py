"""Paths taken from a batch index are data, not orders: an index line (anyone who can
write to OUTDIR can write one) never makes `extract report`, `extract merge` or a batch
run again open a file outside OUTDIR, a FIFO or a device, nor read without end, nor key a
summary by a path that leaves OUTDIR. An index file beyond the bound is one error line.
Every test runs the real CLI; where a wrong open would hang or read without end, in a
subprocess with a time limit (and a memory limit for devices)."""

import errno
import hashlib
import json
import os
import threading
import time
from pathlib import Path

import pytest

from support.cases import copy_case
from support.checks import index_lines
from support.cli import invoke_extract, run_extract
from support.paths import EDGE

ENDS_WITHIN = 60

# The commands that read an index: the report, a merge, the batch run again.
COMMANDS = {
    "report": ("report", "out", "-o", "report.html"),
    "merge": ("merge", "out"),
    "batch": ("runs", "-o", "out"),
}
LATE = "2099-01-01T00:00:00.000+00:00"  # later than any line the batch wrote


def batch(tmp_path: Path) -> Path:
    """runs/a and runs/b extracted into out (cwd tmp_path): two summaries, two lines."""
    for name in ("a", "b"):
        copy_case(EDGE / "one-anchor", tmp_path / "runs" / name)
    result = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert result.code == 0, result
    return tmp_path / "out"


def add_lines(out: Path, *entries) -> None:
    with (out / "index.jsonl").open("a", encoding="utf-8") as handle:
        for entry in entries:
            handle.write(json.dumps(entry) + "\n")


def old_line(output: str, digest: str, profile: str = "runs/a/profile.pop") -> dict:
    """A line as written before the `summary` key: placed by its `output` and hash."""
    return {
        "profile": profile,
        "status": "ok",
        "output": output,
        "summary_sha256": digest,
        "finished_at": LATE,
    }


def lines_of(out: Path) -> list:
    return index_lines(out)


def ended_well(result) -> None:
    """Exit 0 with no error line, or one error line and no traceback."""
    assert "Traceback" not in result.stderr, result
    errors = [line for line in result.stderr.splitlines() if line.startswith("extract: error")]
    assert (result.code == 0 and not errors) or (result.code != 0 and len(errors) == 1), result


class ReaderWatch:
    """Whether anything opens the FIFO `path` for reading while it runs: a writer's
    non-blocking open succeeds only then (ENXIO otherwise). A reader blocked on it is
    given an empty write side at once, so a wrong open is noticed, not hung on."""

    def __init__(self, path: Path):
        self.path = path
        self.opened = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                fd = os.open(str(self.path), os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    return
                time.sleep(0.002)
                continue
            self.opened = True
            os.close(fd)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join()


# ---- an old line's `output`: its tails are read only inside OUTDIR --------------------


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    "where, output",
    [
        ("outside", "x/../../fifo"),  # the tail ../fifo: beside OUTDIR
        ("inside", "x/fifo"),  # the tail fifo: in OUTDIR, but a FIFO
    ],
)
def test_a_line_naming_a_fifo_never_opens_it(tmp_path, command, where, output):
    out = batch(tmp_path)
    fifo = tmp_path / "fifo" if where == "outside" else out / "fifo"
    os.mkfifo(str(fifo))
    add_lines(out, old_line(output, "0" * 64))
    with ReaderWatch(fifo) as watch:
        result = run_extract(
            *COMMANDS[command], cwd=tmp_path, pva=command == "batch", timeout=ENDS_WITHIN
        )
    ended_well(result)
    assert result.code == 0, result
    assert not watch.opened, "the FIFO was opened for reading"


def _limit_memory():
    import resource

    limit = 4 << 30  # far more than extract needs; reading /dev/zero whole needs more
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("how", ["dotdot", "link"])
def test_a_line_naming_a_device_never_reads_it(tmp_path, command, how):
    out = batch(tmp_path)
    if how == "dotdot":  # enough ../ from OUTDIR to reach / itself
        output = "x/" + "../" * len(out.resolve().parts) + "dev/zero"
    else:  # a link inside OUTDIR to the device
        (out / "zero").symlink_to("/dev/zero")
        output = "x/zero"
    add_lines(out, old_line(output, hashlib.sha256(b"").hexdigest()))
    result = run_extract(
        *COMMANDS[command],
        cwd=tmp_path,
        pva=command == "batch",
        timeout=ENDS_WITHIN,
        preexec_fn=_limit_memory,
    )
    ended_well(result)
    assert result.code == 0, result


def _outside_summary(tmp_path: Path, out: Path) -> str:
    """A file beside OUTDIR holding a copy of out/a's summary: its hash is a real one."""
    data = (out / "a" / "summary.json").read_bytes()
    (tmp_path / "outside.txt").write_bytes(data)
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("how", ["dotdot", "link", "absolute"])
def test_a_file_outside_outdir_is_never_keyed(tmp_path, how):
    # Were ../outside.txt keyed, its line would be a third summary; passed over (it names
    # no summary in OUTDIR), it is the same profile as a/summary.json's line and dropped.
    out = batch(tmp_path)
    digest = _outside_summary(tmp_path, out)
    if how == "dotdot":
        output = "out/../outside.txt"
    elif how == "link":
        (out / "link").symlink_to(tmp_path / "outside.txt")
        output = "out/link"
    else:  # an absolute output whose tail ../outside.txt leaves OUTDIR
        output = str(out) + "/../outside.txt"
    add_lines(out, old_line(output, digest))
    merged = invoke_extract("merge", "out", cwd=tmp_path)
    assert merged.code == 0, merged
    assert merged.stderr == "out/index.jsonl: 2 profiles\n"
    assert sorted(e["summary"] for e in lines_of(out)) == ["a/summary.json", "b/summary.json"]


def test_a_file_outside_outdir_is_not_even_read(tmp_path):
    # Its access time is set before its change time, so that any read moves it (relatime
    # included); a file read alike shows whether this file system records reads at all.
    out = batch(tmp_path)
    digest = _outside_summary(tmp_path, out)
    control = tmp_path / "control.txt"
    control.write_bytes(b"x")
    for path in (tmp_path / "outside.txt", control):
        os.utime(str(path), (1000000000, time.time()))
    control.read_bytes()
    if os.stat(str(control)).st_atime == 1000000000:
        pytest.skip("this file system does not record reads (noatime)")
    add_lines(out, old_line("out/../outside.txt", digest))
    for command in COMMANDS.values():
        result = invoke_extract(*command, cwd=tmp_path, pva=True)
        assert result.code == 0, result
    assert os.stat(str(tmp_path / "outside.txt")).st_atime == 1000000000


def test_an_old_line_inside_outdir_is_still_placed(tmp_path):
    # The bound is on where, not on whether: an old line (no `summary`) is matched to
    # its summary by a tail of its output inside OUTDIR, as before.
    out = batch(tmp_path)
    digest = hashlib.sha256((out / "a" / "summary.json").read_bytes()).hexdigest()
    add_lines(out, old_line("elsewhere/a/summary.json", digest, profile="moved/a.pop"))
    merged = invoke_extract("merge", "out", cwd=tmp_path)
    assert merged.code == 0, merged
    assert merged.stderr == "out/index.jsonl: 2 profiles\n"  # the later line of a's
    assert sorted(e["profile"] for e in lines_of(out)) == ["moved/a.pop", "runs/b/profile.pop"]


def test_a_rerun_reads_an_old_index_inside_outdir(tmp_path):
    out = batch(tmp_path)
    old = []
    for entry in lines_of(out):
        entry.pop("summary")
        old.append(entry)
    (out / "index.jsonl").write_text("".join(json.dumps(e) + "\n" for e in old))
    again = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert again.code == 0, again
    assert again.stderr.splitlines()[-1] == "0 extracted, 2 up to date, 0 failed"


# ---- the `summary` key ---------------------------------------------------------------

BAD_KEYS = [
    "../x/summary.json",
    "/etc/summary.json",
    "",
    ".",
    "a/./summary.json",
    "a//summary.json",
    "a/../b/summary.json",
    "a\u0000b/summary.json",
    "a/",
    5,
    None,
    ["a"],
    {"a": 1},
]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_a_summary_key_that_is_not_a_safe_path_is_ignored(tmp_path, key):
    out = batch(tmp_path)
    add_lines(
        out,
        {
            "summary": key,
            "profile": "runs/evil/profile.pop",
            "status": "failed",
            "reason": "evil",
            "finished_at": LATE,
        },
    )
    report = invoke_extract("report", "out", "-o", "report.html", cwd=tmp_path)
    assert report.code == 0, report
    assert b"runs/evil" not in (tmp_path / "report.html").read_bytes()
    merged = invoke_extract("merge", "out", cwd=tmp_path)
    assert merged.code == 0, merged
    assert merged.stderr == "out/index.jsonl: 2 profiles\n"
    assert sorted(e["summary"] for e in lines_of(out)) == ["a/summary.json", "b/summary.json"]


# ---- a batch run again reads its summaries inside OUTDIR only --------------------------


def test_a_folder_made_a_link_out_of_outdir_is_not_read_through(tmp_path):
    # out/a replaced by a link to a folder outside holding the very same summary: a rerun
    # must not read it there (it would find it "up to date"); writing through the link is
    # refused as before.
    out = batch(tmp_path)
    (out / "a").rename(tmp_path / "elsewhere")
    (out / "a").symlink_to(tmp_path / "elsewhere")
    again = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert again.code == 1, again
    assert again.stderr.splitlines()[-1] == "0 extracted, 1 up to date, 1 failed"
    assert "would fall outside the output folder" in again.stderr


# ---- the index file itself -------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_index_beyond_the_bound_is_one_error_line(tmp_path, command):
    from extractor.readback.index import INDEX_LIMIT

    out = batch(tmp_path)
    with (out / "index.jsonl").open("r+b") as handle:  # sparse: nothing is written
        handle.truncate(INDEX_LIMIT + 1)
    result = invoke_extract(*COMMANDS[command], cwd=tmp_path, timeout=ENDS_WITHIN)
    assert result.code == 1, result
    assert result.stderr.splitlines()[-1] == (
        "extract: error: out/index.jsonl: {} bytes, beyond the 512 MiB extract reads of a "
        "batch index (a line is about 1 KB): not an index extract wrote; move it out of "
        "the output folder".format(INDEX_LIMIT + 1)
    )
    assert "Traceback" not in result.stderr


def test_a_forced_batch_refuses_an_index_beyond_the_bound_before_any_work(tmp_path):
    from extractor.readback.index import INDEX_LIMIT

    out = batch(tmp_path)
    with (out / "index.jsonl").open("r+b") as handle:
        handle.truncate(INDEX_LIMIT + 1)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("summary.json")}
    result = invoke_extract("runs", "-o", "out", "--force", cwd=tmp_path)
    assert result.code == 1, result
    assert result.stderr.startswith(
        "extract: error: out/index.jsonl: {} bytes, beyond the 512 MiB".format(INDEX_LIMIT + 1)
    ), result
    assert result.stderr.count("\n") == 1, result
    assert {p: p.stat().st_mtime_ns for p in out.rglob("summary.json")} == before
    assert (out / "index.jsonl").stat().st_size == INDEX_LIMIT + 1


@pytest.mark.parametrize("command", ["report", "merge"])
def test_an_index_that_is_a_link_out_of_outdir_is_not_read(tmp_path, command):
    out = batch(tmp_path)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(
        json.dumps(
            {
                "summary": "z/summary.json",
                "profile": "runs/z/p.pop",
                "status": "failed",
                "reason": "R",
            }
        )
        + "\n"
    )
    (out / "index-shard-1-of-2.jsonl").symlink_to(outside)
    result = invoke_extract(*COMMANDS[command], cwd=tmp_path)
    ended_well(result)
    if command == "merge":
        assert result.stderr == "out/index.jsonl: 2 profiles\n"
    else:
        assert b"runs/z" not in (tmp_path / "report.html").read_bytes()
