"""The batch index: `OUTDIR/index.jsonl`, one JSON line per profile.

During a run each finished profile's line is appended with a single write on an
O_APPEND descriptor and fsynced, after its summary is in place: a killed batch leaves
whole lines only (a torn last line, possible only on a crash mid-write, is cut off when
the file is next opened), and a profile without its line is simply done again. At the
end of a run the file is rewritten atomically with one line per profile (the latest).
A shard writes `index-shard-K-of-N.jsonl`; `extract merge OUTDIR` folds them together.
"""

import os
import stat
from pathlib import Path

import orjson

from .errors import OutputError
from .output import replaceable, write_atomic

INDEX_NAME = "index.jsonl"


def index_name(shard=None) -> str:
    if shard is None:
        return INDEX_NAME
    return "index-shard-{}-of-{}.jsonl".format(*shard)


def read_entries(path: Path) -> list:
    """The whole lines of an index file, in order; a torn or unreadable line is skipped."""
    try:
        if not stat.S_ISREG(os.stat(str(path)).st_mode):  # a FIFO or device: never read
            return []
        data = path.read_bytes()
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


def latest_by_profile(entries) -> dict:
    """Profile label -> its latest entry (by finish time, then by order)."""
    latest = {}
    for entry in entries:
        previous = latest.get(entry["profile"])
        if previous is None or str(entry.get("finished_at", "")) >= str(
                previous.get("finished_at", "")):
            latest[entry["profile"]] = entry
    return latest


def known_entries(outdir: Path) -> dict:
    """What every index file in OUTDIR says, latest entry per profile."""
    entries = []
    for path in sorted(outdir.glob("index*.jsonl")):
        entries.extend(read_entries(path))
    return latest_by_profile(entries)


def _line(entry: dict) -> bytes:
    return orjson.dumps(entry, option=orjson.OPT_SORT_KEYS) + b"\n"


class IndexWriter:
    """Appends entries to one index file; `compact()` leaves one line per profile."""

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
            self._fd = os.open(str(path), flags, 0o666)
        except OSError as exc:  # a read-only OUTDIR
            raise OutputError(path, "cannot write: {}".format(exc.strerror or exc))

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
        try:
            written = os.write(self._fd, line)
            if written != len(line):  # only on a full disk or similar: never leave it torn
                os.ftruncate(self._fd, os.lseek(self._fd, 0, os.SEEK_END) - written)
                raise OSError("short write")
            os.fsync(self._fd)
        except OSError as exc:  # a batch that cannot record its progress stops here
            raise OutputError(self.path, "cannot write: {}".format(exc.strerror or exc))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def compact(self) -> None:
        """Rewrite the file atomically with the latest line of each profile, sorted."""
        self.close()
        write_index(self.path, read_entries(self.path))


def write_index(path: Path, entries) -> int:
    latest = latest_by_profile(entries)
    data = b"".join(_line(latest[label]) for label in sorted(latest))
    write_atomic(path, data, strict=True)
    return len(latest)


def merge_indexes(outdir: Path) -> int:
    """Fold every index file of OUTDIR (shards included) into OUTDIR/index.jsonl."""
    entries = []
    for path in sorted(outdir.glob("index*.jsonl")):
        entries.extend(read_entries(path))
    return write_index(outdir / INDEX_NAME, entries)
