"""Finding the profiles of a batch: which files, in which order, written where.

A directory is searched for files named `profile.pop`, in sorted order, following
symbolic links to folders but never around a loop. Poplar writes a profile as
`profile_<random>.pop` and renames it when the engine closes, so such a file, or a
`-journal`/`-wal` beside a profile, means "still being written": it is noted and skipped.
"""

import os
import re
from pathlib import Path, PurePosixPath
from typing import List, NamedTuple

PROFILE_NAME = "profile.pop"
UNFINISHED = re.compile(r"^profile_.+\.pop$")
BUSY_SUFFIXES = ("-journal", "-wal")
SUMMARY_NAME = "summary.json"


class BatchItem(NamedTuple):
    """One profile of a batch."""

    profile: Path  # where to read it
    label: str  # the summary's "profile" value: the argument joined with the relative path
    key: str  # its output folder relative to OUTDIR, POSIX style ("" for the top)

    def output(self, outdir: Path) -> Path:
        return Path(outdir, *PurePosixPath(self.key).parts, SUMMARY_NAME)


class Discovery(NamedTuple):
    items: List[BatchItem]
    notes: List[str]  # skipped files and folders, one sentence each


def busy_reason(profile: Path):
    """Why a profile must not be read now, or None."""
    if UNFINISHED.match(profile.name):
        return ("still being written (Poplar renames profile_<random>.pop to profile.pop "
                "when the engine closes): skipped")
    for suffix in BUSY_SUFFIXES:
        if os.path.lexists(str(profile) + suffix):
            return "{} beside it: still being written, skipped".format(profile.name + suffix)
    return None


def discover(paths, several=None) -> Discovery:
    """The batch for the command-line PATHs, sorted by output key.

    With one directory argument, outputs mirror the tree below it; with several
    arguments, each one's outputs go under a folder named after it.
    """
    paths = [Path(p) for p in paths]
    several = len(paths) > 1 if several is None else several
    items, notes = [], []
    for path in paths:
        prefix = _argument_name(path) if several else ""
        if path.is_dir():
            _walk(path, prefix, items, notes)
        else:
            reason = busy_reason(path)
            if reason:
                notes.append("{}: {}".format(path, reason))
            else:
                items.append(BatchItem(path, str(path), prefix))
    items.sort(key=lambda item: (item.key, item.label))
    return Discovery(items, notes)


def _argument_name(path: Path) -> str:
    # A folder argument's own name; for a file, its folder's name.
    target = path if path.is_dir() else path.parent
    name = Path(os.path.abspath(str(target))).name
    return _safe_part(name) or "root"


def _safe_part(part: str) -> str:
    return "" if part in ("", ".", "..") else part


def _walk(top: Path, prefix: str, items: list, notes: list) -> None:
    seen = set()

    def unreadable(error):
        notes.append("{}: cannot read this folder ({}): passed over".format(
            error.filename, error.strerror or error))

    for folder, subfolders, files in os.walk(str(top), onerror=unreadable, followlinks=True):
        try:
            stat = os.stat(folder)
        except OSError as exc:
            notes.append("{}: cannot read this folder ({}): passed over".format(
                folder, exc.strerror or exc))
            subfolders[:] = []
            continue
        identity = (stat.st_dev, stat.st_ino)
        if identity in seen:
            notes.append("{}: already searched through a symbolic link (a loop or a second link to it): passed over".format(folder))
            subfolders[:] = []
            continue
        seen.add(identity)
        subfolders.sort()
        relative = os.path.relpath(folder, str(top))
        parts = [p for p in PurePosixPath(Path(relative).as_posix()).parts if _safe_part(p)]
        key = "/".join(([prefix] if prefix else []) + parts)
        for name in sorted(files):
            profile = Path(folder, name)
            if name == PROFILE_NAME:
                reason = busy_reason(profile)
                if reason:
                    notes.append("{}: {}".format(profile, reason))
                else:
                    label = str(top / Path(relative) / name) if relative != "." else str(top / name)
                    items.append(BatchItem(profile, label, key))
            elif UNFINISHED.match(name):
                notes.append("{}: {}".format(profile, busy_reason(profile)))
