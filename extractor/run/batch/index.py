"""The batch index written: `OUTDIR/index.jsonl`, one JSON line per summary (read back
by readback/index.py, which says what a line is and how a path in it is trusted).

During a run each finished profile's line is appended with a single write on an
O_APPEND descriptor and fsynced, after its summary is in place: a killed batch leaves
whole lines only (a torn last line, possible only on a crash mid-write, is cut off when
the file is next opened), and a profile without its line is simply done again. At the
end of a run the file is rewritten atomically with one line per summary (the latest).
A shard writes `index-shard-K-of-N.jsonl`; `extract merge OUTDIR` folds them together.
"""

import os
import stat
from pathlib import Path
from typing import Optional

import orjson

from ...batchnames import INDEX_NAME, SHARD_INDEX_PATTERN
from ...errors import OutputError
from ...output import replaceable, write_atomic
from ...readback.index import INDEX_LIMIT, index_too_large, latest_by_output, read_entries


def _line(entry: dict) -> bytes:
    return orjson.dumps(entry, option=orjson.OPT_SORT_KEYS) + b"\n"


class IndexWriter:
    """Appends entries to one index file; `compact()` leaves one line per summary."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.islink(str(path)):  # appending would write wherever it points
            raise OutputError(
                path, "is a symbolic link: the index is never written through one (remove it)"
            )
        replaceable(path, strict=True)  # nor is it a FIFO, a device or a folder
        try:
            size = os.lstat(str(path)).st_size
        except OSError:
            size = 0
        if size > INDEX_LIMIT:  # refused now (with --force too), not after the work
            raise index_too_large(path, size)
        try:
            self._cut_torn_tail()
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
            self._fd: Optional[int] = os.open(str(path), flags, 0o666)
        except OSError as exc:  # a read-only OUTDIR
            raise OutputError(path, "cannot write: {}".format(exc.strerror or exc)) from exc

    def _cut_torn_tail(self) -> None:
        """Cut a torn last line, reading back from the end only as far as the last
        newline (the file may be large: never read whole here)."""
        try:
            with open(str(self.path), "rb+") as handle:
                position = handle.seek(0, os.SEEK_END)
                while position > 0:
                    start = max(0, position - (64 << 10))
                    handle.seek(start)
                    at = handle.read(position - start).rfind(b"\n")
                    if at >= 0:
                        handle.truncate(start + at + 1)
                        return
                    position = start
                handle.truncate(0)
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
    flags = (
        os.O_RDWR
        | os.O_CREAT
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(str(lock_path), flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(
                lock_path,
                "is a symbolic link: the index's lock file is never opened through one (remove it)",
            ) from None
        raise OutputError(
            lock_path, "cannot open the index's lock file: {}".format(exc.strerror or exc)
        ) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputError(
                lock_path, "is not a regular file: it cannot lock the index (remove it)"
            )
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise OutputError(
                    path,
                    "another extract (a batch or a merge) is writing "
                    "this index now: run this one when it has finished, or "
                    "into another folder",
                ) from None
            raise OutputError(
                lock_path, "cannot lock the index: {}".format(exc.strerror or exc)
            ) from exc
    except BaseException:
        os.close(fd)
        raise
    return fd


def merge_locked(outdir: Path) -> int:
    """`extract merge`: merge_indexes while holding every index file of OUTDIR
    (lock_index), so that it is refused while a batch or shard writes any of them."""
    locks = []
    try:
        for path in [outdir / INDEX_NAME] + sorted(outdir.glob(SHARD_INDEX_PATTERN)):
            locks.append(lock_index(path))
        return merge_indexes(outdir)
    finally:
        for lock in locks:
            os.close(lock)
