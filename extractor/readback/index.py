"""The batch index read as data: `OUTDIR/index.jsonl` (and a shard's
`index-shard-K-of-N.jsonl`), one JSON line per summary, as a batch writes it
(run/batch/index.py writes it; docs/formats/index.md).

A line's key is its `summary` value, the summary's path relative to OUTDIR: one summary,
one line, however its profile was named on the command line. (Lines written before that
key existed are placed by their `output` path; see `entry_key`.) A torn last line
(possible only on a crash mid-write) is ignored.

An index is read as data, never trusted as a list of paths: anyone who can write to
OUTDIR can write a line. A path taken from a line (its `summary` key, or the tails of an
old line's `output`) is only ever looked at through `resolve_in_outdir`: a relative path
without `..`, `.` or empty parts, which resolves (symbolic links followed) inside OUTDIR's
real path to a regular file; it is opened without following a link swapped in since,
without blocking (a FIFO, device, socket or folder is never opened) and read up to
`SUMMARY_LIMIT` bytes (`read_in_outdir`). A line whose `summary` is not such a path
(absolute, `..`, not a string) is ignored, as a torn line is.

An index file is read up to `INDEX_LIMIT` (512 MiB). A line is about 1 KB, so that is
half a million lines: a batch of a quarter of a million profiles run again (its compacted
lines, then one appended per profile before the end-of-run rewrite), with room to spare.
A larger file is not an index extract wrote: reading it is an error naming it (exit 1),
never a silent cut, since a batch rewrites its index from what it read.
"""

import hashlib
import os
import stat
from pathlib import Path, PurePath
from typing import Optional, Tuple

import orjson

from ..errors import ExtractorError
from ..inputs import TooLarge, read_bounded, size_text

# The most of a summary read through an index line (to hash it). A summary holds a
# line per kernel of the first body and per attention exchange, and a number per
# inference: tens of KB for a real model, a few MB for the largest profile imaginable.
# 64 MiB is far beyond any of them, yet keeps a hostile line from reading without end.
SUMMARY_LIMIT = 64 << 20
# The most of an index file read (see the module's docs).
INDEX_LIMIT = 512 << 20

# Opening a path within OUTDIR: never through a link swapped in, never blocking.
_DIRECTORY_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_FILE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def safe_parts(relative) -> Optional[Tuple[str, ...]]:
    """The parts of `relative` (POSIX `/`) if it is a path a line may name inside OUTDIR:
    a string, not absolute, without NUL and without `..`, `.` or empty parts; else None."""
    if not isinstance(relative, str) or not relative or "\0" in relative:
        return None
    parts = tuple(relative.split("/"))
    if any(part in ("", ".", "..") for part in parts):
        return None  # also catches "/abs" (an empty first part) and "a//b"
    return parts


def _inner_parts(outdir, relative) -> Optional[Tuple[str, Tuple[str, ...]]]:
    """OUTDIR's real path, and the parts of where `relative` resolves below it (every
    link followed), when that is strictly inside it; else None."""
    parts = safe_parts(relative)
    if parts is None:
        return None
    real_outdir = os.path.realpath(str(outdir))
    real = os.path.realpath(os.path.join(real_outdir, *parts))
    try:
        if os.path.commonpath([real_outdir, real]) != real_outdir or real == real_outdir:
            return None
    except ValueError:
        return None
    return real_outdir, tuple(PurePath(os.path.relpath(real, real_outdir)).parts)


def resolve_in_outdir(outdir, relative) -> Optional[Path]:
    """Where the path `relative` taken from an index line is, when it is safe to read:
    `safe_parts`, resolving (links followed) strictly inside OUTDIR's real path, to a
    regular file (lstat of the resolved path: a FIFO, device, socket or folder is None).
    None for anything else, or when it is not there."""
    inner = _inner_parts(outdir, relative)
    if inner is None:
        return None
    path = Path(inner[0], *inner[1])
    try:
        if not stat.S_ISREG(os.lstat(str(path)).st_mode):
            return None
    except (OSError, ValueError):
        return None
    return path


def _open_in_outdir(outdir, relative) -> Optional[int]:
    """A read-only descriptor of the regular file `relative` names in OUTDIR (see
    `resolve_in_outdir`), or None. The resolved path is opened one folder at a time from
    OUTDIR without following links, so a link swapped in after it resolved is not
    followed out; the file is checked before it is opened (a FIFO, device or socket is
    never opened) and again on its descriptor, opened without blocking."""
    inner = _inner_parts(outdir, relative)
    if inner is None:
        return None
    real_outdir, parts = inner
    try:
        folder = os.open(real_outdir, _DIRECTORY_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
    except (OSError, ValueError):
        return None
    try:
        for part in parts[:-1]:
            below = os.open(part, _DIRECTORY_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = below
        if not stat.S_ISREG(os.stat(parts[-1], dir_fd=folder, follow_symlinks=False).st_mode):
            return None
        fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=folder)
    except (OSError, ValueError):
        return None
    finally:
        os.close(folder)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:  # swapped since the check
        os.close(fd)
        return None
    return fd


def read_in_outdir(outdir, relative, limit: int = SUMMARY_LIMIT) -> Optional[bytes]:
    """The bytes of the file `relative` names in OUTDIR, a path taken from an index line,
    or None when it is not a safe path to a regular file inside OUTDIR
    (`resolve_in_outdir`), cannot be read, or holds more than `limit` bytes."""
    fd = _open_in_outdir(outdir, relative)
    if fd is None:
        return None
    try:
        return read_bounded(fd, limit)
    except OSError:
        return None


def index_too_large(path: Path, size: int) -> ExtractorError:
    """The error for an index file larger than INDEX_LIMIT (`size` bytes)."""
    return ExtractorError(
        path,
        "{} bytes, beyond the {} extract reads of a batch index (a "
        "line is about 1 KB): not an index extract wrote; move it out of "
        "the output folder".format(size, size_text(INDEX_LIMIT)),
    )


def read_entries(path: Path) -> list:
    """The whole lines of an index file, in order; a torn or unreadable line is skipped,
    as is a line whose `summary` is not a safe path inside OUTDIR (`safe_parts`). A file
    that is not a regular file inside its folder (a link out of it, a FIFO) has none;
    one beyond INDEX_LIMIT is an ExtractorError naming it."""
    path = Path(path)
    fd = _open_in_outdir(path.parent, path.name)
    if fd is None:
        return []
    try:
        data = read_bounded(fd, INDEX_LIMIT)
    except TooLarge as exc:
        raise index_too_large(path, exc.size) from None
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
        if _usable(entry):
            entries.append(entry)
    return entries


def _usable(entry) -> bool:
    """Whether a parsed line is an entry: an object with a `profile` text and, if it has
    a `summary` key, a safe path there."""
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("profile"), str)
        and ("summary" not in entry or safe_parts(entry["summary"]) is not None)
    )


def entry_key(entry: dict, outdir: Path):
    """The summary an entry is about, relative to OUTDIR (`a/b/summary.json`): its
    `summary` value. A line written before that key existed names only `output`, as the
    command line gave OUTDIR then: it is placed where that path falls inside OUTDIR seen
    from here, or else at the longest tail of it, provided the file there is the summary
    it recorded (`summary_sha256`); None when it names no such summary (it failed, or
    its summary has gone or changed since), or when its `summary` is not a safe path.
    Only a regular file inside OUTDIR's real path is ever read (`read_in_outdir`):
    a tail with `..`, or one through a link out of OUTDIR, is passed over unread."""
    if "summary" in entry:
        key = entry["summary"]
        return key if safe_parts(key) is not None else None
    output, digest = entry.get("output"), entry.get("summary_sha256")
    if not isinstance(output, str) or not output or not isinstance(digest, str):
        return None
    parts = PurePath(output).parts
    tails = [parts[start:] for start in range(1, len(parts))]
    relative = os.path.relpath(os.path.abspath(output), os.path.abspath(str(outdir)))
    if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
        tails.insert(0, PurePath(relative).parts)
    for tail in tails:
        relative = "/".join(tail)
        data = read_in_outdir(outdir, relative)
        if data is not None and hashlib.sha256(data).hexdigest() == digest:
            return relative
    return None


def latest_by_output(entries, outdir: Path) -> dict:
    """(0, summary key) -> the latest entry for that summary (by finish time, then by
    order); an old line that names no summary in OUTDIR (`entry_key` None) is kept as
    (1, profile label), unless a line with a key has the same profile."""
    latest: dict = {}
    unplaced: dict = {}
    for entry in entries:
        if not _usable(entry):  # read_entries leaves none; a caller's own list might
            continue
        key = entry_key(entry, outdir)
        into, key = (latest, (0, key)) if key is not None else (unplaced, (1, entry["profile"]))
        previous = into.get(key)
        if previous is None or str(entry.get("finished_at", "")) >= str(
            previous.get("finished_at", "")
        ):
            into[key] = entry
    profiles = {entry["profile"] for entry in latest.values()}
    latest.update((key, entry) for key, entry in unplaced.items() if key[1] not in profiles)
    return latest


def known_entries(outdir: Path) -> dict:
    """What every index file in OUTDIR says: summary key -> its latest entry."""
    entries = []
    for path in sorted(outdir.glob("index*.jsonl")):
        entries.extend(read_entries(path))
    return {
        key[1]: entry for key, entry in latest_by_output(entries, outdir).items() if key[0] == 0
    }
