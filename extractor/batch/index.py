"""The batch index: `OUTDIR/index.jsonl`, one JSON line per summary.

A line's key is its `summary` value, the summary's path relative to OUTDIR: one summary,
one line, however its profile was named on the command line. (Lines written before that
key existed are placed by their `output` path; see `entry_key`.)

During a run each finished profile's line is appended with a single write on an
O_APPEND descriptor and fsynced, after its summary is in place: a killed batch leaves
whole lines only (a torn last line, possible only on a crash mid-write, is cut off when
the file is next opened), and a profile without its line is simply done again. At the
end of a run the file is rewritten atomically with one line per summary (the latest).
A shard writes `index-shard-K-of-N.jsonl`; `extract merge OUTDIR` folds them together.
"""

import hashlib
import os
import stat
from pathlib import Path, PurePath
from typing import Optional

import orjson

from ..errors import OutputError
from ..files import read_regular
from ..output import replaceable, write_atomic

INDEX_NAME = "index.jsonl"


def index_name(shard=None) -> str:
    if shard is None:
        return INDEX_NAME
    return "index-shard-{}-of-{}.jsonl".format(*shard)


def read_entries(path: Path) -> list:
    """The whole lines of an index file, in order; a torn or unreadable line is skipped."""
    try:
        data = read_regular(path)  # a FIFO would never end
    except OSError:
        return []
    entries = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("profile"), str):
            entries.append(entry)
    return entries


def entry_key(entry: dict, outdir: Path):
    """The summary an entry is about, relative to OUTDIR (`a/b/summary.json`): its
    `summary` value. A line written before that key existed names only `output`, as the
    command line gave OUTDIR then: it is placed where that path falls inside OUTDIR seen
    from here, or else at the longest tail of it, provided the file there is the summary
    it recorded (`summary_sha256`); None when it names no such summary (it failed, or
    its summary has gone or changed since)."""
    key = entry.get("summary")
    if isinstance(key, str):
        return key
    output, digest = entry.get("output"), entry.get("summary_sha256")
    if not isinstance(output, str) or not output or not isinstance(digest, str):
        return None
    parts = PurePath(output).parts
    tails = [parts[start:] for start in range(1, len(parts))]
    relative = os.path.relpath(os.path.abspath(output), os.path.abspath(str(outdir)))
    if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
        tails.insert(0, PurePath(relative).parts)
    for tail in tails:
        try:
            data = Path(outdir, *tail).read_bytes()
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() == digest:
            return "/".join(tail)
    return None


def latest_by_output(entries, outdir: Path) -> dict:
    """(0, summary key) -> the latest entry for that summary (by finish time, then by
    order); an old line that names no summary in OUTDIR (`entry_key` None) is kept as
    (1, profile label), unless a line with a key has the same profile."""
    latest: dict = {}
    unplaced: dict = {}
    for entry in entries:
        key = entry_key(entry, outdir)
        into, key = (latest, (0, key)) if key is not None else (unplaced, (1, entry["profile"]))
        previous = into.get(key)
        if previous is None or str(entry.get("finished_at", "")) >= str(
                previous.get("finished_at", "")):
            into[key] = entry
    profiles = {entry["profile"] for entry in latest.values()}
    latest.update((key, entry) for key, entry in unplaced.items() if key[1] not in profiles)
    return latest


def known_entries(outdir: Path) -> dict:
    """What every index file in OUTDIR says: summary key -> its latest entry."""
    entries = []
    for path in sorted(outdir.glob("index*.jsonl")):
        entries.extend(read_entries(path))
    return {key[1]: entry for key, entry in latest_by_output(entries, outdir).items()
            if key[0] == 0}


def _line(entry: dict) -> bytes:
    return orjson.dumps(entry, option=orjson.OPT_SORT_KEYS) + b"\n"


class IndexWriter:
    """Appends entries to one index file; `compact()` leaves one line per summary."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.islink(str(path)):  # appending would write wherever it points
            raise OutputError(path, "is a symbolic link: the index is never written "
                              "through one (remove it)")
        replaceable(path, strict=True)  # nor is it a FIFO, a device or a folder
        try:
            self._cut_torn_tail()
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
            self._fd: Optional[int] = os.open(str(path), flags, 0o666)
        except OSError as exc:  # a read-only OUTDIR
            raise OutputError(path, "cannot write: {}".format(exc.strerror or exc)) from exc

    def _cut_torn_tail(self) -> None:
        try:
            with open(str(self.path), "rb+") as handle:
                data = handle.read()
                if data and not data.endswith(b"\n"):
                    handle.truncate(data.rfind(b"\n") + 1)
        except FileNotFoundError:
            pass

    def append(self, entry: dict) -> None:
        line = _line(entry)
        if self._fd is None:
            raise ValueError("append to a closed index: {}".format(self.path))
        try:
            written = os.write(self._fd, line)
            if written != len(line):  # only on a full disk or similar: never leave it torn
                os.ftruncate(self._fd, os.lseek(self._fd, 0, os.SEEK_END) - written)
                raise OSError("short write")
            os.fsync(self._fd)
        except OSError as exc:  # a batch that cannot record its progress stops here
            raise OutputError(self.path, "cannot write: {}".format(exc.strerror or exc)) from exc

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def compact(self) -> None:
        """Rewrite the file atomically with the latest line of each summary, sorted."""
        self.close()
        write_index(self.path, read_entries(self.path))


def write_index(path: Path, entries) -> int:
    """Write the latest line of each summary (see `latest_by_output`) to an index file
    in OUTDIR, sorted by summary; the number of lines."""
    latest = latest_by_output(entries, path.parent)
    data = b"".join(_line(latest[key]) for key in sorted(latest))
    write_atomic(path, data, strict=True)
    return len(latest)


def merge_indexes(outdir: Path) -> int:
    """Fold every index file of OUTDIR (shards included) into OUTDIR/index.jsonl."""
    entries = []
    for path in sorted(outdir.glob("index*.jsonl")):
        entries.extend(read_entries(path))
    return write_index(outdir / INDEX_NAME, entries)


def lock_index(path: Path) -> int:
    """Hold the index file `path` for this process alone, until the returned descriptor
    is closed or the process ends (the kernel releases the lock even on SIGKILL).

    The lock is a POSIX record lock (it also works over NFS) on `.NAME.lock` beside the
    index, a file that is never followed through a symbolic link and never removed.
    A second batch or merge on the same index is refused at once (OutputError), rather
    than left waiting for hours; the shards of one batch lock their own index files,
    so they still run side by side.
    """
    import errno
    import fcntl  # here: only a batch or a merge needs it

    lock_path = path.parent / ".{}.lock".format(path.name)
    flags = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(str(lock_path), flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(lock_path, "is a symbolic link: the index's lock file is "
                              "never opened through one (remove it)") from None
        raise OutputError(lock_path, "cannot open the index's lock file: {}".format(
            exc.strerror or exc)) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputError(lock_path, "is not a regular file: it cannot lock the index "
                              "(remove it)")
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise OutputError(path, "another extract (a batch or a merge) is writing "
                                  "this index now: run this one when it has finished, or "
                                  "into another folder") from None
            raise OutputError(lock_path, "cannot lock the index: {}".format(
                exc.strerror or exc)) from exc
    except BaseException:
        os.close(fd)
        raise
    return fd
