"""Finding the profiles of a batch: which files, in which order, written where.

A directory is searched for files named `profile.pop`, in sorted order, following
symbolic links to folders but never around a loop. Poplar writes a profile as
`profile_<random>.pop` and renames it when the engine closes, so such a file, or a
`-journal`/`-wal` beside a profile (or beside the file a linked profile resolves to, where
SQLite looks), means "still being written": it is noted and skipped.

Outputs never collide: arguments with the same folder name are told apart by their parent
folders, and whatever would still share an output, or one profile reached through two
arguments, is refused before any work (`ArgumentsError`, a usage error).

Paths are kept as the OS gives them (undecodable bytes as surrogates) for every file
operation; labels and notes show them with `shown_path` (such bytes as `\\xNN`).
"""

import os
import re
from pathlib import Path, PurePosixPath
from typing import Dict, List, NamedTuple, Tuple

from ...core.model import SUMMARY_NAME
from ...errors import ExtractorError, shown_path

PROFILE_NAME = "profile.pop"
UNFINISHED = re.compile(r"^profile_.+\.pop$")
BUSY_SUFFIXES = ("-journal", "-wal")


class BatchItem(NamedTuple):
    """One profile of a batch."""

    profile: Path  # where to read it
    label: str  # the summary's "profile" value: the argument joined with the relative
    # path, as `shown_path` shows it
    key: str  # its output folder relative to OUTDIR, POSIX style ("" for the top); the
    # names as the OS gives them (`shown_path(key)` for people and the index)

    def output(self, outdir: Path) -> Path:
        return Path(outdir, *PurePosixPath(self.key).parts, SUMMARY_NAME)

    @property
    def summary_key(self) -> str:
        """Its summary's path relative to OUTDIR, as shown (`a/b/summary.json`): the
        index's key, one line per summary."""
        return "/".join(([shown_path(self.key)] if self.key else []) + [SUMMARY_NAME])


class Discovery(NamedTuple):
    items: List[BatchItem]
    notes: List[str]  # skipped files and folders, one sentence each


class ArgumentsError(ExtractorError):
    """Batch arguments whose outputs would collide, or that reach one profile twice: a
    usage error, found before any work."""

    exit_code = 2


def busy_reason(profile: Path):
    """Why a profile must not be read now, or None."""
    if UNFINISHED.match(profile.name):
        return (
            "still being written (Poplar renames profile_<random>.pop to profile.pop "
            "when the engine closes): skipped"
        )
    for suffix in BUSY_SUFFIXES:
        if os.path.lexists(str(profile) + suffix):
            return "{} beside it: still being written, skipped".format(
                shown_path(profile.name + suffix)
            )
    # A link: SQLite keeps the log and journal beside the file it resolves to.
    real = os.path.realpath(str(profile))
    if real != os.path.abspath(str(profile)):
        for suffix in BUSY_SUFFIXES:
            if os.path.lexists(real + suffix):
                return (
                    "it resolves to {}, and {} is beside that: still being written, skipped".format(
                        shown_path(real), shown_path(os.path.basename(real) + suffix)
                    )
                )
    return None


def discover(paths, several=None) -> Discovery:
    """The batch for the command-line PATHs, sorted by output key.

    With one directory argument, outputs mirror the tree below it; with several
    arguments, each one's outputs go under a folder named after it.
    """
    paths = [Path(p) for p in paths]
    several = len(paths) > 1 if several is None else several
    prefixes = _argument_names(paths) if several else [""] * len(paths)
    items: List[BatchItem] = []
    notes: List[str] = []
    arguments: List[Path] = []
    for path, prefix in zip(paths, prefixes):
        if path.is_dir():
            _walk(path, prefix, items, notes)
        else:
            reason = busy_reason(path)
            if reason:
                notes.append("{}: {}".format(shown_path(path), reason))
            else:
                items.append(BatchItem(path, shown_path(path), prefix))
        arguments.extend([path] * (len(items) - len(arguments)))
    if len(paths) > 1:
        _refuse_a_profile_twice(items, arguments)
    _refuse_shared_outputs(items)
    items.sort(key=lambda item: (item.key, item.label))
    return Discovery(items, notes)


def _argument_names(paths) -> List[str]:
    """Each argument's output folder: a folder argument's own name, a file's folder's
    name; where two would be the same, each grows by its parent folders until they
    differ (`fp8/inference`, `fp16/inference`), as a person would tell them apart. The
    same arguments give the same names on every run."""
    folders = []
    for path in paths:
        target = path if path.is_dir() else path.parent
        folders.append(
            tuple(p for p in Path(os.path.abspath(str(target))).parts[1:] if _safe_part(p))
        )
    width = [1] * len(paths)

    def name(index):
        return "/".join(folders[index][-width[index] :]) or "root"

    while True:
        groups: Dict[str, List[int]] = {}
        for index in range(len(paths)):
            groups.setdefault(name(index), []).append(index)
        grew = False
        for members in groups.values():
            for index in members:
                # Longer only where that can tell it from another member.
                if width[index] < len(folders[index]) and any(
                    folders[other] != folders[index] for other in members
                ):
                    width[index] += 1
                    grew = True
        if not grew:
            return [name(index) for index in range(len(paths))]


def _refuse_a_profile_twice(items, arguments) -> None:
    """Overlapping or repeated arguments (`runs` and `runs/a`, one folder twice, a link
    to another argument's profile) would extract a profile twice, to two outputs that
    then disagree on its `profile` value: refused, naming both ways to it."""
    seen: Dict[Tuple[int, int], Tuple[BatchItem, Path]] = {}
    for item, argument in zip(items, arguments):
        try:
            stat = os.stat(str(item.profile))
        except OSError:  # reported when it is extracted
            continue
        identity = (stat.st_dev, stat.st_ino)
        first = seen.setdefault(identity, (item, argument))
        if first[1] is not argument:
            raise ArgumentsError(
                item.label,
                "the same profile as {}, reached through the "
                "arguments {} and {}: give each profile once (arguments "
                "must not overlap or repeat)".format(
                    first[0].label, shown_path(first[1]), shown_path(argument)
                ),
            )


def _refuse_shared_outputs(items) -> None:
    """Two profiles whose summaries would land in one place (or on one index line):
    refused rather than one overwriting the other."""
    seen: Dict[str, BatchItem] = {}
    for item in items:
        first = seen.setdefault(item.summary_key, item)
        if first is not item and first.label == item.label:  # `a\xff`, byte or text
            raise ArgumentsError(
                item.label,
                "two profiles are shown by this one name (a "
                "byte that is not UTF-8 is shown as \\xNN, and another "
                "path has those very characters), and their summaries "
                "by {}: rename one of them".format(item.summary_key),
            )
        if first is not item:
            raise ArgumentsError(
                item.label,
                "its summary would be written to {} in the "
                "output folder, as {}'s is: give each profile a folder "
                "of its own, or extract them one at a time".format(item.summary_key, first.label),
            )


def _safe_part(part: str) -> str:
    return "" if part in ("", ".", "..") else part


def _walk(top: Path, prefix: str, items: list, notes: list) -> None:
    seen = set()

    def unreadable(error):
        notes.append(
            "{}: cannot read this folder ({}): passed over".format(
                shown_path(error.filename or top), error.strerror or error
            )
        )

    for folder, subfolders, files in os.walk(str(top), onerror=unreadable, followlinks=True):
        try:
            stat = os.stat(folder)
        except OSError as exc:
            notes.append(
                "{}: cannot read this folder ({}): passed over".format(
                    shown_path(folder), exc.strerror or exc
                )
            )
            subfolders[:] = []
            continue
        identity = (stat.st_dev, stat.st_ino)
        if identity in seen:
            notes.append(
                "{}: already searched through a symbolic link (a loop or a second "
                "link to it): passed over".format(shown_path(folder))
            )
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
                    notes.append("{}: {}".format(shown_path(profile), reason))
                else:
                    label = str(top / Path(relative) / name) if relative != "." else str(top / name)
                    items.append(BatchItem(profile, shown_path(label), key))
            elif UNFINISHED.match(name):
                notes.append("{}: {}".format(shown_path(profile), busy_reason(profile)))
