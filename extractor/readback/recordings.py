"""Recordings: the summary.json files that compare, table and report read, each named by
its folder (or by --label), with where it stands against its batch's index
(provenance.py). One reader for all three commands.
"""

import os
from pathlib import Path, PurePath
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..core.metrics import Number
from ..core.model import SUMMARY_NAME, Summary
from ..errors import DerivedFileError, StrPath, SummaryFileError, shown_path
from .provenance import Origin, Origins, derived_problem


class Recording(NamedTuple):
    label: str
    path: Path
    summary: Summary
    # Where it stands against its batch's index (provenance.py); None: not looked up.
    origin: Optional[Origin] = None
    # The real path of the folder argument it was found in (None: given as a file): no
    # file of it is read through a symbolic link that leads out of that folder.
    within: Optional[str] = None
    # The metrics of the derived files beside it that belong to its summary (derived.py:
    # breakdown.json's time:, memory.json's memory:...); metrics.metrics adds them.
    beside: Optional[Dict[str, Number]] = None


class _Found(NamedTuple):
    path: Path
    folder_parts: Tuple[str, ...]  # the absolute folder of the file, as parts
    default_parts: int  # how many trailing parts name it by default
    within: Optional[str] = None  # the folder argument's real path


def _inside(path: StrPath, folder: Optional[str]) -> bool:
    if folder is None:
        return True
    real = os.path.realpath(str(path))
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def leads_out(path: StrPath, within: Optional[str]) -> bool:
    """Whether `path` (a file found in a folder argument whose real path is `within`)
    leads out of that folder through a symbolic link. Nothing is read from such a file:
    a batch folder names only its own files."""
    return os.path.lexists(str(path)) and not _inside(path, within)


def beside(recording: "Recording", name: str, error: Callable[[Path, str], Exception]) -> Path:
    """The file `name` beside a recording's summary (blocks.json); `error(path,
    problem)` raised when it is a symbolic link out of the folder it was found in."""
    path = recording.path.parent / name
    if leads_out(path, recording.within):
        raise error(path, "is a symbolic link that leads out of the folder given: not read")
    return path


def _parts(folder: Path) -> Tuple[str, ...]:
    # An absolute folder's names, without the root ("/" or a drive).
    return tuple(p for p in folder.parts if p != folder.anchor)


def _find(argument: Path) -> List[_Found]:
    """The summary files an argument stands for: itself, or those below a folder."""
    if not argument.is_dir():
        if not argument.exists():
            raise SummaryFileError(argument, "no such file or folder")
        parent = Path(os.path.abspath(str(argument))).parent
        return [_Found(argument, _parts(parent), 1)]
    found = []
    top = Path(os.path.abspath(str(argument)))
    within = os.path.realpath(str(argument))
    for folder, subfolders, files in os.walk(str(argument)):
        subfolders.sort()
        if SUMMARY_NAME in files:
            relative = PurePath(os.path.relpath(folder, str(argument))).parts
            relative = tuple(p for p in relative if p != ".")
            parts = _parts(top) + relative
            path = Path(folder, SUMMARY_NAME)
            if leads_out(path, within):
                raise SummaryFileError(
                    path,
                    "is a symbolic link that leads out of {}: not read".format(
                        shown_path(argument)
                    ),
                )
            found.append(_Found(path, parts, max(1, len(relative)), within))
    if not found:
        raise SummaryFileError(argument, "no {} in this folder or below it".format(SUMMARY_NAME))
    return found


def _default_labels(found: Sequence[_Found]) -> List[str]:
    """Each recording's folder name (relative to a folder argument); where two would
    be the same, enough of their parent folders to tell them apart."""
    width = [f.default_parts for f in found]

    def label(index: int) -> str:
        parts = found[index].folder_parts
        tail = parts[-width[index] :] if width[index] <= len(parts) else parts
        return shown_path("/".join(tail)) or "/"

    while True:
        labels = [label(i) for i in range(len(found))]
        groups: Dict[str, List[int]] = {}
        for index, text in enumerate(labels):
            groups.setdefault(text, []).append(index)
        grew = False
        for members in groups.values():
            if len(members) > 1:
                for index in members:
                    # Longer only where that can tell it from another member.
                    differs = any(
                        found[other].folder_parts != found[index].folder_parts for other in members
                    )
                    if differs and width[index] < len(found[index].folder_parts):
                        width[index] += 1
                        grew = True
        if not grew:
            break
    # The same folder twice (or one file given twice): number the repeats.
    seen: Dict[str, int] = {}
    for index, text in enumerate(labels):
        seen[text] = seen.get(text, 0) + 1
        if seen[text] > 1:
            labels[index] = "{} ({})".format(text, seen[text])
    return labels


def load_recordings(arguments: Sequence, labels: Sequence[str] = ()) -> List[Recording]:
    """The recordings the arguments name, in order (a folder's sorted by path).

    `labels` rename the first recordings, in order. ValueError when there are more
    labels than recordings or two recordings end up with the same label.
    """
    found = []
    for argument in arguments:
        found.extend(_find(Path(argument)))
    if len(labels) > len(found):
        raise ValueError(
            "{} --label given for {} recording{}".format(
                len(labels), len(found), "s" if len(found) != 1 else ""
            )
        )
    names = [shown_path(label) for label in labels] + _default_labels(found)[len(labels) :]
    for index, name in enumerate(names):
        if names.index(name) != index:
            raise ValueError(
                "two recordings are labelled {!r}: give each its own --label".format(name)
            )
    origins = Origins()
    recordings = []
    for name, item in zip(names, found):
        summary, origin = Summary.read(item.path), origins.of(item.path)
        beside = beside_metrics(item.path, summary, origin, item.within)
        recordings.append(Recording(name, item.path, summary, origin, item.within, beside))
    return recordings


def beside_metrics(
    path: Path, summary: Summary, origin: Origin, within: Optional[str]
) -> Dict[str, Number]:
    """The metrics of each derived file beside the summary at `path` that has metrics
    (derived.py: breakdown.json, memory.json) and belongs to the summary (provenance's
    rule); a file that is there but does not belong, or cannot be read as one (nobody
    asked for it: it may be anything a person left there), is left out, never read as
    current. DerivedFileError for one that is a symbolic link out of the folder given."""
    from ..derived import DERIVED_FILES

    found: Dict[str, Number] = {}
    for derived in DERIVED_FILES:
        file = derived.path(path)
        if derived.metrics is None or not os.path.lexists(str(file)):
            continue
        if leads_out(file, within):
            raise DerivedFileError(
                file, "is a symbolic link that leads out of the folder given: not read"
            )
        try:
            data = derived.function("read")(file)
        except DerivedFileError:
            continue
        if derived_problem(derived, origin, summary, file, data) is None:
            found.update(derived.function("metrics")(data))
    return found


def files_read(recordings: Sequence[Recording]) -> List[Path]:
    """What reading these recordings reads or may read: each summary, the derived files
    beside it (blocks.json...) and its batch folder's index files (for an output that
    must not be one)."""
    from ..derived import DERIVED_FILES

    files: List[Path] = []
    for recording in recordings:
        files += [recording.path] + [d.path(recording.path) for d in DERIVED_FILES]
        batch = recording.origin.batch if recording.origin else None
        if batch is not None:
            files += sorted(batch.glob("index*.jsonl"))
    return files


def folders_read(arguments: Sequence, recordings: Sequence[Recording]) -> List[Path]:
    """The folders whose batch files these recordings come from: the folder arguments,
    each recording's folder and its batch folder."""
    folders = [Path(a) for a in arguments if Path(a).is_dir()]
    for recording in recordings:
        folders.append(recording.path.parent)
        if recording.origin is not None and recording.origin.batch is not None:
            folders.append(recording.origin.batch)
    return folders
