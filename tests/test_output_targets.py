"""Hostile outputs: devices, FIFOs and sockets where a summary goes, step tables
that cannot all be replaced, output folders that cannot be made, a closed stdout.

Every test runs the real CLI: in this process (invoke_extract), or in a subprocess where
a run could block on a FIFO (run_extract, with its time limit) or its stdout is set up as
a shell would (run_with). We are root here: a folder or file made immutable (chattr +i) is what
stays unwritable even for root.
"""

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from test_bad_input import check_error_line

from support import badinput as bad
from support.checks import json_bytes, no_partial_files
from support.cli import invoke_extract, run_extract

TABLES = ("steps.csv", "first-body.csv")
THREE = TABLES + ("summary.json",)


def base_bytes(label) -> bytes:
    return json_bytes(bad.base_summary(str(label)))


def mode_of(path: Path) -> int:
    return os.lstat(str(path)).st_mode


def chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True)


@pytest.fixture
def immutable():
    """Make paths immutable (chattr +i) for the test; always undone."""
    made = []

    def make(path: Path) -> None:
        chattr("+i", path)
        made.append(path)

    yield make
    for path in made:
        chattr("-i", path)


def test_root_can_make_immutable_files(tmp_path, immutable):
    # The tests below need it: fail, not skip, where it does not work.
    folder = tmp_path / "ro"
    folder.mkdir()
    immutable(folder)
    with pytest.raises(PermissionError):
        (folder / "x").write_bytes(b"x")


def run_with(args, **popen):
    """Run extract with its stdout set up by the caller; (exit code, stderr text)."""
    done = run_extract(*args, timeout=60, **popen)
    return done.code, done.stderr


# ---- a device, FIFO or socket as -o ------------------------------------------


def test_single_output_onto_a_character_device_writes_into_it(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    null = tmp_path / "null"
    os.mknod(str(null), 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a second /dev/null
    result = invoke_extract(profile, "-o", null)
    assert result.code == 0, result
    assert stat.S_ISCHR(mode_of(null)) and os.stat(str(null)).st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case", "null"]


def test_single_output_onto_a_full_device_is_one_line(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    full = tmp_path / "full"
    os.mknod(str(full), 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # a second /dev/full
    result = invoke_extract(profile, "-o", full)
    assert result.code == 1, result
    check_error_line(result.stderr, str(full), r"^cannot write: No space left on device$")
    assert stat.S_ISCHR(mode_of(full))


def test_single_output_onto_a_fifo_with_a_reader_sends_the_summary_through(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    reader = os.open(str(fifo), os.O_RDONLY | os.O_NONBLOCK)  # a reader is there first
    try:
        result = invoke_extract(profile, "-o", fifo)
        assert result.code == 0, result
        os.set_blocking(reader, True)
        received = b""
        while True:  # the writer has exited: read to the end
            block = os.read(reader, 65536)
            if not block:
                break
            received += block
    finally:
        os.close(reader)
    assert received == base_bytes(profile)
    assert stat.S_ISFIFO(mode_of(fifo))


def test_single_output_onto_a_fifo_nobody_reads_is_one_line_not_a_hang(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    result = run_extract(profile, "-o", fifo, timeout=30)
    assert result.code == 1, result
    check_error_line(
        result.stderr,
        str(fifo),
        r"^is a FIFO \(named pipe\) that nobody is "
        r"reading",
    )
    assert stat.S_ISFIFO(mode_of(fifo))


@pytest.mark.parametrize("kind", ["socket", "folder", "block device"])
def test_single_output_onto_a_socket_folder_or_block_device_is_refused(tmp_path, kind):
    import socket

    profile = bad.write_base(tmp_path / "case")
    target = tmp_path / "target"
    if kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(target))
    elif kind == "folder":
        target.mkdir()
    else:  # never opened: refused on what it is
        os.mknod(str(target), 0o600 | stat.S_IFBLK, os.makedev(7, 0))
    try:
        result = invoke_extract(profile, "-o", target)
    finally:
        if kind == "socket":
            server.close()
    assert result.code == 1, result
    check_error_line(
        result.stderr,
        str(target),
        r"^is a {}: only a regular file is "
        r"replaced".format(kind),
    )
    assert {"socket": stat.S_ISSOCK, "folder": stat.S_ISDIR, "block device": stat.S_ISBLK}[kind](
        mode_of(target)
    )


def test_single_output_through_a_link_to_stdout_does_not_replace_the_link(tmp_path):
    # `-o /dev/stdout > file`: /dev/stdout links to /proc/self/fd/1, here a regular file.
    # The link must stay (as root, /dev/stdout itself would have been replaced).
    profile = bad.write_base(tmp_path / "case")
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    captured = tmp_path / "captured.json"
    with captured.open("wb") as handle:
        code, stderr = run_with([profile, "-o", link], stdout=handle)
    assert code == 0, stderr
    assert os.path.islink(str(link)) and os.readlink(str(link)) == "/proc/self/fd/1"
    assert captured.read_bytes() == base_bytes(profile)


def test_single_output_through_a_link_to_a_file_replaces_that_file(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    real = tmp_path / "kept" / "summary.json"
    real.parent.mkdir()
    real.write_bytes(b"old\n")
    link = tmp_path / "summary.json"
    link.symlink_to(real)
    result = invoke_extract(profile, "-o", link)
    assert result.code == 0, result
    assert os.path.islink(str(link))
    assert real.read_bytes() == base_bytes(profile)
    no_partial_files(tmp_path)


def test_chart_onto_a_character_device_writes_into_it(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    summary = tmp_path / "s.json"
    assert invoke_extract(profile, "-o", summary).code == 0
    chart = tmp_path / "chart.svg"
    os.mknod(str(chart), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = invoke_extract("compare", summary, summary, "--chart", chart)
    assert result.code == 0, result
    assert stat.S_ISCHR(mode_of(chart))


# ---- in a batch: OUTDIR holds only regular files ------------------------------


def batch_input(tmp_path: Path) -> Path:
    bad.write_base(tmp_path / "runs" / "case")
    return tmp_path / "runs" / "case"


def index_entry(out: Path) -> dict:
    lines = (out / "index.jsonl").read_bytes().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


@pytest.mark.parametrize("name", THREE)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_batch_never_writes_into_nor_replaces_a_special_file(tmp_path, name, kind):
    runs = batch_input(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    special = out / name
    if kind == "fifo":
        os.mkfifo(str(special))
    else:
        os.mknod(str(special), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = run_extract(runs, "-o", out, "--csv", "-q", timeout=60)
    assert result.code == 1, result
    assert result.stderr.splitlines()[-1] == "0 extracted, 0 up to date, 1 failed"
    check_error_line(
        "\n".join(result.stderr.splitlines()[:-1]),
        str(special),
        r"^is a {}, not a regular file".format(
            "FIFO \\(named pipe\\)" if kind == "fifo" else "character device"
        ),
    )
    assert (stat.S_ISFIFO if kind == "fifo" else stat.S_ISCHR)(mode_of(special))
    assert index_entry(out)["status"] == "failed"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".index.jsonl.lock", "index.jsonl", name]
    )


def test_batch_summary_that_is_a_symbolic_link_is_refused_not_followed(tmp_path):
    runs = batch_input(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.json"
    victim.write_bytes(b"keep\n")
    (out / "summary.json").symlink_to(victim)
    result = invoke_extract(runs, "-o", out, "-q")
    assert result.code == 1, result
    assert index_entry(out)["reason"].startswith(
        "{}: is a symbolic link, not a regular file".format(out / "summary.json")
    )
    assert os.path.islink(str(out / "summary.json"))
    assert victim.read_bytes() == b"keep\n"


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_batch_index_that_is_not_a_regular_file_stops_the_batch_in_one_line(tmp_path, kind):
    runs = batch_input(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    index = out / "index.jsonl"
    if kind == "fifo":
        os.mkfifo(str(index))
    elif kind == "device":
        os.mknod(str(index), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        index.mkdir()
    result = run_extract(runs, "-o", out, "-q", timeout=60)
    assert result.code == 1, result
    check_error_line(result.stderr, str(index), r"not a regular file")
    assert not stat.S_ISREG(mode_of(index))
    assert sorted(p.name for p in out.iterdir()) == [".index.jsonl.lock", "index.jsonl"]


def test_batch_summary_swapped_for_a_fifo_is_not_read_as_up_to_date(tmp_path):
    runs = batch_input(tmp_path)
    out = tmp_path / "out"
    assert invoke_extract(runs, "-o", out, "-q").code == 0
    (out / "summary.json").unlink()
    os.mkfifo(str(out / "summary.json"))
    result = run_extract(runs, "-o", out, "-q", timeout=30)
    assert result.code == 1, result
    assert stat.S_ISFIFO(mode_of(out / "summary.json"))
    assert index_entry(out)["status"] == "failed"


def test_merge_onto_a_fifo_index_is_one_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(str(out / "index.jsonl"))
    result = run_extract("merge", out, timeout=30)
    assert result.code == 1, result
    check_error_line(result.stderr, str(out / "index.jsonl"), r"not a regular file")
    assert stat.S_ISFIFO(mode_of(out / "index.jsonl"))


# ---- summary.json, steps.csv and first-body.csv change together ---------------

OLD = {name: "old {}\n".format(name).encode() for name in THREE}


def old_files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in OLD.items():
        (folder / name).write_bytes(data)


@pytest.mark.parametrize("mode", ["single", "batch"])
@pytest.mark.parametrize("how", ["folder", "immutable"])
@pytest.mark.parametrize("name", THREE)
def test_csv_outputs_change_together_or_not_at_all(tmp_path, immutable, mode, how, name):
    runs = batch_input(tmp_path)
    out = tmp_path / "out"
    old_files(out)
    blocked = out / name
    if how == "folder":
        blocked.unlink()
        blocked.mkdir()
    else:  # the file stays, but cannot be replaced (the rename fails, even as root)
        immutable(blocked)
    if mode == "single":
        result = invoke_extract(runs / "profile.pop", "-o", out / "summary.json", "--csv")
        assert result.code == 1, result
        check_error_line(result.stderr, str(blocked), r"")
    else:
        result = invoke_extract(runs, "-o", out, "--csv", "-q")
        assert result.code == 1, result
        entry = index_entry(out)
        assert entry["status"] == "failed"
        assert entry["reason"].startswith(str(blocked) + ": "), entry["reason"]
    for other in THREE:
        if other != name:
            assert (out / other).read_bytes() == OLD[other], other
    if how == "folder":
        assert blocked.is_dir() and list(blocked.iterdir()) == []
    else:
        assert blocked.read_bytes() == OLD[name]
    no_partial_files(out)


@pytest.mark.parametrize("mode", ["single", "batch"])
def test_csv_outputs_all_change_when_all_can(tmp_path, mode):
    runs = batch_input(tmp_path)
    out = tmp_path / "out"
    old_files(out)
    if mode == "single":
        result = invoke_extract(runs / "profile.pop", "-o", out / "summary.json", "--csv")
    else:
        result = invoke_extract(runs, "-o", out, "--csv", "-q")
    assert result.code == 0, result
    for name in THREE:
        assert (out / name).read_bytes() != OLD[name]
    no_partial_files(out)


def test_single_csv_onto_a_character_device_is_refused_before_anything_changes(tmp_path):
    runs = batch_input(tmp_path)
    out = tmp_path / "out"
    old_files(out)
    (out / "summary.json").unlink()
    os.mknod(str(out / "summary.json"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = invoke_extract(runs / "profile.pop", "-o", out / "summary.json", "--csv")
    assert result.code == 1, result
    check_error_line(result.stderr, str(out / "summary.json"), r"^is a character device")
    for name in TABLES:
        assert (out / name).read_bytes() == OLD[name]


# ---- output folders that cannot be made or written ---------------------------


def test_batch_outdir_under_a_regular_file_is_one_line(tmp_path):
    runs = batch_input(tmp_path)
    (tmp_path / "file").write_bytes(b"x")
    out = tmp_path / "file" / "out"
    result = invoke_extract(runs, "-o", out)
    assert result.code == 1, result
    check_error_line(
        result.stderr,
        str(out),
        r"^cannot make the output folder: a part "
        r"of it is a file",
    )
    assert (tmp_path / "file").read_bytes() == b"x"


def test_batch_outdir_under_proc_is_one_line(tmp_path):
    runs = batch_input(tmp_path)
    result = invoke_extract(runs, "-o", "/proc/extract-out")
    assert result.code == 1, result
    check_error_line(result.stderr, "/proc/extract-out", r"^cannot make the output folder: ")


def test_single_output_under_proc_is_one_line(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    result = invoke_extract(profile, "-o", "/proc/extract-out/summary.json")
    assert result.code == 1, result
    check_error_line(result.stderr, "/proc/extract-out/summary.json", r"^cannot write: ")


def test_single_output_under_a_regular_file_is_one_line(tmp_path):
    profile = bad.write_base(tmp_path / "case")
    (tmp_path / "file").write_bytes(b"x")
    result = invoke_extract(profile, "-o", tmp_path / "file" / "summary.json")
    assert result.code == 1, result
    check_error_line(
        result.stderr,
        str(tmp_path / "file" / "summary.json"),
        r"^cannot write: a part of .* is a file",
    )


@pytest.mark.parametrize("mode", ["single", "batch"])
@pytest.mark.parametrize("where", ["outdir", "below"])
def test_read_only_output_folder_is_one_line(tmp_path, immutable, mode, where):
    runs = batch_input(tmp_path)
    readonly = tmp_path / "ro"
    readonly.mkdir()
    immutable(readonly)
    folder = readonly if where == "outdir" else readonly / "out"
    if mode == "single":
        target = folder / "summary.json"
        result = invoke_extract(runs / "profile.pop", "-o", target)
        source = target
    else:
        result = invoke_extract(runs, "-o", folder, "-q")
        # The batch's first write in an existing OUTDIR is its index's lock file.
        source = folder / ".index.jsonl.lock" if where == "outdir" else folder
    assert result.code == 1, result
    check_error_line(
        result.stderr,
        str(source),
        r"(cannot write|cannot make the output "
        r"folder|cannot open the index's lock "
        r"file): Operation not permitted$",
    )
    assert list(readonly.iterdir()) == []


# ---- a closed or broken standard output --------------------------------------


def closed_stdout():
    os.close(1)


def stdout_writing_args(tmp_path, command: str) -> list:
    """Arguments of a command that writes to standard output: a single run, or compare."""
    profile = bad.write_base(tmp_path / "case")
    if command == "run":
        return [profile]
    summary = tmp_path / "s.json"
    assert invoke_extract(profile, "-o", summary).code == 0
    return ["compare", summary, summary]


@pytest.mark.parametrize("command", ["run", "compare"])
def test_closed_stdout_is_one_line(tmp_path, command):
    # `extract P >&-`: the process starts without a file descriptor 1.
    args = stdout_writing_args(tmp_path, command)
    code, stderr = run_with(args, preexec_fn=closed_stdout)
    assert code == 1, stderr
    check_error_line(stderr, "<stdout>", r"^cannot write: standard output is closed$")


@pytest.mark.parametrize("command", ["run", "compare"])
def test_stdout_whose_reader_has_gone_is_one_line_without_noise(tmp_path, command):
    # `extract P | head -c1`, when head has already gone: EPIPE on the first write, and
    # nothing from Python at exit ("Exception ignored ... BrokenPipeError").
    args = stdout_writing_args(tmp_path, command)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        code, stderr = run_with(args, stdout=write_end)
    finally:
        os.close(write_end)
    assert code == 1, stderr
    check_error_line(stderr, "<stdout>", r"^cannot write: Broken pipe$")


# What typer writes itself (--help, --version), before any command runs: the same one
# line as a command's own output, never a traceback.


@pytest.mark.parametrize(
    "args",
    [["--version"], ["--help"], ["compare", "--help"]],
    ids=["version", "help", "compare-help"],
)
def test_help_and_version_onto_a_full_disk_are_one_line(tmp_path, args):
    full = tmp_path / "full"
    os.mknod(str(full), 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # a second /dev/full
    with full.open("wb") as handle:
        code, stderr = run_with(args, stdout=handle)
    assert code == 1, stderr
    check_error_line(stderr, "<stdout>", r"^cannot write: No space left on device$")


def test_version_onto_a_closed_stdout_is_one_line():
    code, stderr = run_with(["--version"], preexec_fn=closed_stdout)
    assert code == 1, stderr
    check_error_line(stderr, "<stdout>", r"^cannot write: standard output is closed$")
